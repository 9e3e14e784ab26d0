"""Disk: a perceived device rate through io.max.

fio reads a null_blk device (no media latency) in a node whose disk is
perceived at RATE MB/s: io.max rbps = RATE at TDF 1, RATE/10 at TDF 10
(dilated-node --disk). fio times with clock_gettime, i.e. perceived time.
A sweep of perceived rates shows where linear scaling stops: when the
physical rate (perceived / TDF) is more than the VM can move, the perceived
rate falls short; dilation moves that point up by the TDF.

At QD 1 the mean completion latency is bs / bandwidth, so it follows the
bandwidth. Its distribution does not scale: blk-throttle lets requests through
at the device's own speed while a time slice's budget lasts, then holds them.
The device's latency is host time, so a dilated node sees it TDF times
shorter (the median); and at a TDF-times lower physical rate the budget runs
out in fewer, longer holds of up to a host-time slice (the tail). The report
shows the percentiles.
"""
import json
import subprocess
from pathlib import Path

from harness import stats
from harness.node import Testbed
from harness.result import fmt, pct

NAME = "disk"
TITLE = "Disk: perceived bandwidth and latency through io.max"
REQUIRES = ["fio"]
PCTS = ["1.000000", "10.000000", "50.000000", "90.000000", "99.000000"]


def plan(short):
    if short:
        return {"tdfs": [1, 10], "rates": [100], "match": 100, "seconds": 1, "tol_bw": 0.10, "tol_lat": 0.25}
    return {"tdfs": [1, 10], "rates": [25, 100, 400, 1600, 6400], "match": 100, "seconds": 2,
            "tol_bw": 0.05, "tol_lat": 0.10}


def criterion(short):
    p = plan(short)
    return (f"at {p['match']} MB/s perceived, TDF 10's perceived bandwidth is within ±{p['tol_bw'] * 100:.0f}% "
            f"of TDF 1's and its mean completion latency within ±{p['tol_lat'] * 100:.0f}% (percentiles are "
            f"reported: they do not scale, see the notes); the sweep {p['rates']} MB/s reports where each TDF "
            f"stops reaching the rate it was given")


def device():
    if not Path("/dev/nullb0").exists():
        subprocess.run(["modprobe", "null_blk"], capture_output=True)
    if not Path("/dev/nullb0").exists():
        raise RuntimeError("no /dev/nullb0 (CONFIG_BLK_DEV_NULL_BLK)")
    return "/dev/nullb0"


def fio(ctx, dev, tdf, rate, seconds):
    work = ctx.work / f"disk-{tdf}-{rate}"
    with Testbed(work) as tb:
        n = tb.node("dk", tdf, ["fio", "--name=r", f"--filename={dev}", "--rw=read", "--bs=64k", "--direct=1",
                                "--ioengine=psync", "--clocksource=clock_gettime", f"--runtime={seconds}",
                                "--time_based", "--output-format=json"],
                    no_net=True, disk=f"{dev},rbps={rate}MB")
        rc = n.wait(timeout=120 + 3 * tdf * seconds)
        if rc != 0:
            raise RuntimeError(f"fio failed (rc {rc}): {n.stderr()[-300:]}")
        out = n.stdout()
    r = json.JSONDecoder().raw_decode(out[out.index("{"):])[0]["jobs"][0]["read"]
    lat = {k: v / 1e6 for k, v in r["clat_ns"]["percentile"].items()}  # ms
    lat["mean"] = r["clat_ns"]["mean"] / 1e6
    return r["bw_bytes"] / 1e6, lat


def run(ctx, res):
    p = plan(ctx.short)
    dev = device()
    res.params = {"device": f"{dev} (null_blk)", "workload": "fio sequential read, 64 KiB, O_DIRECT, psync, QD 1",
                  "run": f"{p['seconds']} s perceived", "TDFs": p["tdfs"], "perceived rates": f"{p['rates']} MB/s"}
    got, rows, csv_rows = {}, [], []
    for rate in p["rates"]:
        for tdf in p["tdfs"]:
            ctx.log(f"   {rate} MB/s perceived at TDF {tdf} (io.max rbps {rate / tdf:g} MB/s)")
            bw, lat = got[(rate, tdf)] = fio(ctx, dev, tdf, rate, p["seconds"])
            rows.append([rate, tdf, rate / tdf, bw, f"{bw / rate:.1%}", lat["mean"]]
                        + [lat.get(k, float("nan")) for k in PCTS])
            csv_rows += [[rate, tdf, bw, lat["mean"]] + [lat.get(k, float("nan")) for k in PCTS]]
            ctx.log(f"   -> {fmt(bw)} MB/s perceived, median latency {fmt(lat.get('50.000000', float('nan')))} ms")
    res.table("fio read, perceived (bandwidth MB/s; completion latency percentiles ms)",
              ["rate given", "TDF", "io.max MB/s", "bandwidth", "of given", "mean", "p1", "p10", "p50", "p90", "p99"],
              rows)
    res.csv("sweep", ["perceived_rate_mb", "tdf", "bw_mb", "clat_mean_ms"]
            + [f"clat_p{k.split('.')[0]}_ms" for k in PCTS], csv_rows)
    m = p["match"]
    (b1, l1), (b10, l10) = got[(m, 1)], got[(m, 10)]
    d = stats.rel_diff(b10, b1)
    res.check(f"{m} MB/s: TDF 10 bandwidth vs TDF 1", pct(d), abs(d) <= p["tol_bw"], f"±{p['tol_bw'] * 100:.0f}%")
    dl = stats.rel_diff(l10["mean"], l1["mean"])
    res.check(f"{m} MB/s: TDF 10 mean latency vs TDF 1", pct(dl), abs(dl) <= p["tol_lat"],
              f"±{p['tol_lat'] * 100:.0f}%")
    res.note(f"Where linear scaling breaks, latency: at {m} MB/s the median completion latency is "
             f"{fmt(l1['50.000000'])} ms at TDF 1 and {fmt(l10['50.000000'])} ms at TDF 10 "
             f"({pct(stats.rel_diff(l10['50.000000'], l1['50.000000']))}), p99 {fmt(l1['99.000000'])} vs "
             f"{fmt(l10['99.000000'])} ms: io.max shapes bandwidth, not each request. The device's own latency "
             f"is host time, so the dilated node sees it TDF times shorter (median); blk-throttle holds requests "
             f"for up to a slice of host time, and at a TDF-times lower physical rate it holds them less often "
             f"but longer (tail).")
    for tdf in p["tdfs"]:
        kept = [r for r in p["rates"] if got[(r, tdf)][0] >= 0.95 * r]
        res.note(f"TDF {tdf}: reaches ≥ 95% of the perceived rate up to "
                 f"{max(kept) if kept else 'none'} MB/s of {p['rates']} (physical {max(kept) / tdf if kept else 0:g} MB/s).")
    fig = res.figure("sweep", "Perceived bandwidth vs the rate given", "perceived rate given (MB/s)",
                     "fio bandwidth (MB/s, perceived)", xlog=True, ylog=True)
    for tdf in p["tdfs"]:
        fig.line(p["rates"], [got[(r, tdf)][0] for r in p["rates"]], f"TDF {tdf}")
    fig.line(p["rates"], p["rates"], "rate given", "--")
    fig = res.figure("latency", f"Completion latency at {m} MB/s perceived", "completion latency (ms, perceived)",
                     "CDF (fio percentiles)", xlog=True)
    for tdf, lat in ((1, l1), (10, l10)):
        ks = sorted((k for k in lat if k != "mean"), key=float)
        fig.line([lat[k] for k in ks], [float(k) / 100 for k in ks], f"TDF {tdf}")
