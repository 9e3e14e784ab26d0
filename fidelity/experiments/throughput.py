"""Throughput equivalence across TDFs (the time-dilation paper's Table 2).

Many concurrent TCP flows (iperf3 -P) from one sender node share a bottleneck
the sender perceives as RATE_MBIT with RTT_MS round trip, at several TDFs.
iperf3 reports each flow's throughput with its own (dilated) clock.
"""
import numpy as np

from harness import netutil, stats
from harness.node import Testbed, write_profile
from harness.result import fmt, pct

NAME = "throughput"
TITLE = "Throughput equivalence: concurrent flows sharing one bottleneck"
REQUIRES = ["iperf3"]
RATE_MBIT, RTT_MS, LIMIT = 20, 20, 200


def plan(short):
    if short:
        return {"tdfs": [1, 5], "flows": 4, "seconds": 1, "tol": 0.10}
    return {"tdfs": [1, 2, 5, 10], "flows": 16, "seconds": 4, "tol": 0.03}


def criterion(short):
    p = plan(short)
    return (f"{p['flows']} flows for {p['seconds']} s (perceived): at every TDF the mean per-flow "
            f"throughput is within ±{p['tol'] * 100:.0f}% of TDF 1's (SD and Jain's fairness "
            f"index are reported)")


def flows(ctx, tdf, p):
    work = ctx.work / f"tp-{tdf}"
    with Testbed(work) as tb:
        prof = write_profile(work / "link.toml", f"{RATE_MBIT} Mbit/s bottleneck, {RTT_MS} ms RTT",
                             rate=f"{RATE_MBIT}mbit", delay=f"{RTT_MS * 500}us", limit=LIMIT)
        rcv = tb.node("tpr", tdf, ["iperf3", "-s", "-1"], addr="10.213.0.30/24")
        snd = tb.node("tps", tdf, ["iperf3", "-c", "10.213.0.30", "-P", p["flows"], "-t", p["seconds"], "-J"],
                      profile=prof, addr="10.213.0.31/24", hold=True)
        netutil.wait_listen(rcv, 5201)
        snd.go()
        rc = snd.wait(timeout=120 + 3 * tdf * p["seconds"])
        if rc != 0:
            raise RuntimeError(f"iperf3 client failed (rc {rc}): {snd.stdout()[-300:]}{snd.stderr()[-300:]}")
        js = netutil.iperf3_json(snd.stdout())
    return np.array([s["receiver"]["bits_per_second"] / 1e6 for s in js["end"]["streams"]])


def run(ctx, res):
    p = plan(ctx.short)
    res.params = {"perceived bottleneck": f"{RATE_MBIT} Mbit/s, {RTT_MS} ms RTT, netem limit {LIMIT} packets",
                  "flows": p["flows"], "duration": f"{p['seconds']} s perceived", "TDFs": p["tdfs"]}
    per, rows, csv_rows = {}, [], []
    for tdf in p["tdfs"]:
        ctx.log(f"   TDF {tdf}: {p['flows']} flows, {p['seconds']} s perceived")
        per[tdf] = f = flows(ctx, tdf, p)
        s = stats.summary(f)
        d = stats.rel_diff(s["mean"], per[p["tdfs"][0]].mean())
        rows.append([tdf, s["mean"], s["sd"], f.sum(), stats.jain(f), pct(d)])
        csv_rows += [[tdf, i, x] for i, x in enumerate(f)]
        ctx.log(f"   -> per flow {fmt(s['mean'])} ± {fmt(s['sd'])} Mbit/s, total {fmt(f.sum())}")
        if tdf != 1:
            res.check(f"TDF {tdf}: mean per-flow throughput vs TDF 1", pct(d), abs(d) <= p["tol"],
                      f"±{p['tol'] * 100:.0f}%")
    res.table("Per-flow throughput (Mbit/s, perceived)",
              ["TDF", "mean", "SD", "total", "Jain index", "mean vs TDF 1"], rows)
    res.csv("flows", ["tdf", "flow", "mbit_s"], csv_rows)
    fig = res.figure("flows", f"Per-flow throughput, {p['flows']} flows on {RATE_MBIT} Mbit/s (perceived)",
                     "", "throughput (Mbit/s, perceived)")
    fig.boxes([per[t] for t in p["tdfs"]], [f"TDF {t}" for t in p["tdfs"]])
    fig.hline(RATE_MBIT * 1448 / 1514 / p["flows"], "fair share of the goodput")
