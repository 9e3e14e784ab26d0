"""Congestion control across TDFs (the time-dilation paper's §4.1).

Reno, CUBIC and BBR, one flow and ten flows (iperf3 -R -P N: the node with
the link is the sender), over a link the sender perceives as RATE_MBIT /
RTT_MS with random loss on each hop (netem `loss` in the sender's profile:
the data and the ACKs each cross one lossy hop), at TDF 1, 10 and 100. The
receiver's iperf3 measures goodput every perceived second with its own clock.

No route settings (no --rto-min, no quickack): the kernel itself runs TCP's
fixed durations (RTO floor, delayed ACK, TLP), CUBIC's and HyStart's clocks
and BBR's windows on the socket's namespace time. On a kernel where they run
on host time CUBIC's window grows TDF times faster per perceived round trip
and this experiment fails for CUBIC.

Host-time cost (QEMU TCG, 2 vCPUs): a run of T perceived seconds at TDF k
takes k*T host seconds plus node set-up (~5 s a pair). TDF 1 runs one at a
time (at 40 Mbit/s the emulated machine is busy); at a dilated TDF every
congestion control and repetition of one (flows, loss) runs at once on
separate node pairs (their physical rates are k times lower: 9 pairs at TDF
10 carry 36 Mbit/s together). The full run, T = 30 s, 3 repetitions, per
(flows, loss), 6 of them: 9 x 35 s at TDF 1 + ~350 s at TDF 10 + ~3050 s at
TDF 100 = ~63 min, ~6.3 h in all; then the fast links, Reno and CUBIC at
once, T = 20 s: 1 Gbit/s at TDF 100 ~35 min, 10 Gbit/s at TDF 1000 ~5.6 h.
About 12.5 h: a session runs parts, selected with FIDELITY_CC (plan()),
e.g. TDF 1 and 10 only (~2 x 6 min per (flows, loss) with T = 15 s).
--short, the test suite's variant: CUBIC and Reno, TDF 1 and 10, ~3 min.
"""
import os
from pathlib import Path

import numpy as np

from harness import netutil, stats
from harness.node import Testbed, write_profile
from harness.result import fmt, pct

NAME = "congestion-control"
TITLE = "Congestion control: Reno, CUBIC and BBR goodput at TDF 1, 10 and 100"
REQUIRES = ["iperf3", "tc"]
MEAN_TOL, KS_MAX = 0.05, 0.10
SHORT_TOL = 0.15

FULL = {"ccs": ["reno", "cubic", "bbr"], "flows": [1, 10], "losses": [0.0, 0.01, 0.1], "tdfs": [1, 10, 100],
        "rate": 40, "rtt": 80, "seconds": 30, "reps": 3, "determ": False, "fast": True,
        "fast_seconds": 20, "tol": MEAN_TOL, "ks": KS_MAX, "hops": 1, "omit": 0}
# the test suite's variant: CUBIC (and Reno) at TDF 1 and 10, deterministic
# loss (every 1000th data packet): nearly the same run at every TDF; the
# first 4 s (slow start and the first recoveries, where TDF 1's emulated
# machine, busy at 40 Mbit/s, shapes the ramp: iperf3 -O) are left out
SHORT = {"ccs": ["cubic", "reno"], "flows": [1], "losses": [0.1], "tdfs": [1, 10], "rate": 40, "rtt": 100,
         "seconds": 8, "reps": 1, "determ": True, "fast": False, "tol": SHORT_TOL, "ks": None, "hops": 1,
         "omit": 4}
# perceived links beyond the VM: (Mbit/s, TDF), CUBIC against Reno, 0.01% loss
FAST = [(1000, 100), (10000, 1000)]
FAST_LOSS = 0.01


def _parse(v):
    out = []
    for x in v.split(","):
        x = x.strip()
        try:
            out.append(int(x))
        except ValueError:
            try:
                out.append(float(x))
            except ValueError:
                out.append({"true": True, "false": False}.get(x.lower(), x))
    return out


def plan(short):
    """The variant, then FIDELITY_CC's overrides: space-separated key=value
    (lists comma-separated), keys as in FULL, e.g.
    FIDELITY_CC='ccs=cubic flows=1 losses=0.05 tdfs=1,10 rtt=100 reps=4 seconds=15 fast=false'."""
    p = dict(SHORT if short else FULL)
    for item in os.environ.get("FIDELITY_CC", "").split():
        k, _, v = item.partition("=")
        if k not in p:
            raise ValueError(f"FIDELITY_CC: unknown key {k} (one of {', '.join(p)})")
        vals = _parse(v)
        p[k] = vals if isinstance(p[k], list) else vals[0]
    return p


def criterion(short):
    p = plan(short)
    others = " and ".join(str(t) for t in p["tdfs"][1:])
    loss = "deterministic loss" if p["determ"] else "random loss per hop"
    c = (f"{', '.join(p['ccs'])}; {' and '.join(map(str, p['flows']))} flow(s); perceived {p['rate']} Mbit/s, "
         f"{p['rtt']} ms RTT, {loss} {', '.join(f'{x:g}%' for x in p['losses'])}; {p['seconds']} s x {p['reps']}"
         + (f" (the first {p['omit']} s left out)" if p["omit"] else "") + ": "
         f"per congestion control, flows and loss, the mean perceived goodput at TDF {others} is within "
         f"±{p['tol']:.0%} of TDF 1's")
    if p["ks"]:
        c += f", and the per-second goodputs' KS distance D to TDF 1's is at most {p['ks']}"
    if p["fast"]:
        c += ("; then perceived 1 Gbit/s (TDF 100) and 10 Gbit/s (TDF 1000), CUBIC against Reno "
              f"({FAST_LOSS}% loss): CUBIC's goodput above Reno's (reported; no TDF-1 reference exists)")
    return c


def _pair(ctx, tb, i, tdf, cc, nflows, loss, rate, rtt, seconds, determ, hops=1, omit=0):
    """Sender/receiver node pair number i, held; returns the receiver.
    hops 1: the sender's profile shapes the link (data and ACKs each cross
    one lossy hop); hops 2: both nodes have it, with half the delay (each
    direction crosses two lossy hops, as between two dilated-node nodes)."""
    bdp = rate * 1e6 * rtt / 1e3 / (1514 * 8)
    limit = int(2 * bdp) + 200  # the delay line plus a BDP of queue
    work = tb.work / f"pair{i}"
    work.mkdir(parents=True, exist_ok=True)
    link = {"rate": f"{rate}mbit", "delay": f"{rtt * 500 // hops}us", "limit": limit}
    prof = write_profile(work / "link.toml", f"{rate} Mbit/s, {rtt} ms RTT, loss {loss}%", **link)
    if loss and not determ:  # netem random loss on both directions (write_profile has no loss key)
        text = Path(prof).read_text()
        Path(prof).write_text(text.replace("[link]\n", f'[link]\nloss = "{loss:g}%"\n', 1))
    a = 50 + 2 * i  # 10.213.0.50..: other experiments use .20-.41
    snd = tb.node(f"ccs{i}", tdf, ["iperf3", "-s", "-1"], profile=prof, addr=f"10.213.0.{a + 1}/24")
    snd.nsenter("sysctl", "-qw", f"net.ipv4.tcp_congestion_control={cc}", check=False)
    cmd = ["iperf3", "-c", f"10.213.0.{a + 1}", "-R", "-C", cc, "-P", nflows, "-t", seconds, "-O", omit,
           "-i", "1", "-J"]
    rcv = tb.node(f"ccr{i}", tdf, cmd, addr=f"10.213.0.{a}/24", hold=True, profile=prof if hops == 2 else None)
    if loss and determ:
        netutil.deterministic_loss(rcv, every=round(100 / loss))
    netutil.wait_listen(snd, 5201)
    return rcv


def runs(ctx, tdf, specs, p, rate=None, seconds=None):
    """Runs of specs [(cc, flows, loss)] at tdf, all at once on separate node
    pairs: [(goodput Mbit/s, per-second goodputs, retransmits)]."""
    rate, seconds = rate or p["rate"], seconds or p["seconds"]
    ctx.n = getattr(ctx, "n", 0) + 1
    with Testbed(ctx.work / f"cc{ctx.n}") as tb:
        rcvs = [_pair(ctx, tb, i, tdf, cc, nf, loss, rate, p["rtt"], seconds, p["determ"], p["hops"],
                      p["omit"]) for i, (cc, nf, loss) in enumerate(specs)]
        for r in rcvs:
            r.go()
        out = []
        for r, (cc, _, _) in zip(rcvs, specs):
            rc = r.wait(timeout=120 + 2 * tdf * (seconds + p["omit"] + 5))
            if rc != 0:
                raise RuntimeError(f"iperf3 client failed (rc {rc}): {r.stdout()[-300:]}{r.stderr()[-300:]}")
            js = netutil.iperf3_json(r.stdout())
            secs = [iv["sum"]["bits_per_second"] / 1e6 for iv in js["intervals"]
                    if iv["sum"]["seconds"] > 0.5 and not iv["sum"].get("omitted")]
            seen = js["end"].get("sender_tcp_congestion", "?")
            if seen not in (cc, "?"):
                raise RuntimeError(f"sender ran {seen}, not {cc}")
            out.append((js["end"]["sum_received"]["bits_per_second"] / 1e6, secs,
                        js["end"].get("sum_sent", {}).get("retransmits", 0)))
    return out


def run(ctx, res):
    p = plan(ctx.short)
    res.params = {"perceived link": f"{p['rate']} Mbit/s, {p['rtt']} ms RTT " + (
                      "(sender's profile: data and ACKs each cross one shaped hop)" if p["hops"] == 1 else
                      "(both nodes' profiles, half the delay each: data and ACKs each cross two shaped hops)"),
                  "loss": ("deterministic: every N-th data packet dropped at the receiver (tc gact determ)"
                           if p["determ"] else "netem random loss on each hop") + f", {p['losses']} %",
                  "congestion control": p["ccs"], "flows": p["flows"], "TDFs": p["tdfs"],
                  "runs": f"{p['seconds']} s perceived, {p['reps']} repetitions; TDF 1 one run at a time, "
                          f"dilated: every congestion control and repetition at once on separate node pairs",
                  "TCP": "no route settings (no --rto-min, no quickack): the kernel's own timers"}
    if os.environ.get("FIDELITY_CC"):
        res.params["FIDELITY_CC"] = os.environ["FIDELITY_CC"]
    rows, ctrl_rows, csv_rows = [], [], []
    for nflows in p["flows"]:
        for loss in p["losses"]:
            got = {}
            for tdf in p["tdfs"]:
                if tdf == 1:  # alone: at full rate the emulated machine is near its limit
                    for cc in p["ccs"]:
                        got[(cc, 1)] = [runs(ctx, 1, [(cc, nflows, loss)], p)[0] for _ in range(p["reps"])]
                else:
                    specs = [(cc, nflows, loss) for cc in p["ccs"] for _ in range(p["reps"])]
                    ctx.log(f"   {nflows} flow(s), loss {loss:g}%, TDF {tdf}: {len(specs)} runs at once")
                    rs = runs(ctx, tdf, specs, p)
                    for cc in p["ccs"]:
                        got[(cc, tdf)] = [r for r, s in zip(rs, specs) if s[0] == cc]
            for cc in p["ccs"]:
                g = {t: np.array([r[0] for r in got[(cc, t)]]) for t in p["tdfs"]}
                sec = {t: np.concatenate([r[1] for r in got[(cc, t)]]) for t in p["tdfs"]}
                for tdf in p["tdfs"]:
                    rs = got[(cc, tdf)]
                    s = stats.summary(g[tdf])
                    d = stats.rel_diff(s["mean"], g[1].mean())
                    D = stats.ks(sec[tdf], sec[1])[0] if tdf != 1 else float("nan")
                    rows.append([cc, nflows, f"{loss:g}%", tdf, len(rs), s["mean"], s["sd"],
                                 " ".join(fmt(x, 2) for x in g[tdf]), sum(r[2] for r in rs),
                                 pct(d) if tdf != 1 else "", D])
                    csv_rows += [[cc, nflows, loss, tdf, i, j, x] for i, r in enumerate(rs)
                                 for j, x in enumerate(r[1])]
                    ctx.log(f"   {cc}, {nflows} flow(s), loss {loss:g}%, TDF {tdf}: "
                            f"{' '.join(fmt(x, 2) for x in g[tdf])} Mbit/s (mean {fmt(s['mean'])}"
                            + (f", {pct(d)} vs TDF 1, KS D {fmt(D)})" if tdf != 1 else ")"))
                    if tdf == 1:
                        if len(rs) > 1:  # the control: TDF 1 against itself
                            h = len(rs) // 2
                            a, b = np.concatenate([r[1] for r in rs[:h]]), np.concatenate([r[1] for r in rs[h:]])
                            ctrl_rows.append([cc, nflows, f"{loss:g}%", len(rs), s["cv"],
                                              pct(stats.rel_diff(g[1][h:].mean(), g[1][:h].mean())),
                                              stats.ks(a, b)[0]])
                        continue
                    what = f"{cc}, {nflows} flow(s), loss {loss:g}%, TDF {tdf} vs 1"
                    res.check(f"{what}: mean goodput", pct(d), abs(d) <= p["tol"], f"±{p['tol']:.0%}")
                    if p["ks"]:
                        res.check(f"{what}: per-second goodput KS D", fmt(D), D <= p["ks"], f"≤ {p['ks']}")
                fig = res.figure(f"cdf-{cc}-{nflows}-{loss:g}", f"{cc}, {nflows} flow(s), loss {loss:g}%: "
                                 "per-second goodput", "goodput (Mbit/s, perceived)", "CDF")
                for tdf in p["tdfs"]:
                    fig.cdf(sec[tdf], f"TDF {tdf}")
    res.table("Goodput (Mbit/s, perceived; receiver's iperf3)",
              ["cc", "flows", "loss", "TDF", "runs", "mean", "SD", "each run", "retransmits",
               "mean vs TDF 1", "KS D per-second"], rows)
    if ctrl_rows:
        res.table("The control: TDF 1 against TDF 1 (first half of the repetitions against the second)",
                  ["cc", "flows", "loss", "runs", "CV of runs", "mean 2nd vs 1st half", "KS D"], ctrl_rows)
    res.csv("seconds", ["cc", "flows", "loss_pct", "tdf", "run", "second", "mbit_s"], csv_rows)
    if p["fast"]:
        fast(ctx, res, p)


def fast(ctx, res, p):
    """Perceived 1 and 10 Gbit/s: CUBIC against Reno, one flow, only dilated."""
    rows, mathis = [], {}
    for rate, tdf in FAST:
        g = {}
        rs = runs(ctx, tdf, [("reno", 1, FAST_LOSS), ("cubic", 1, FAST_LOSS)], p, rate=rate,
                  seconds=p["fast_seconds"])
        for cc, r in zip(("reno", "cubic"), rs):
            g[cc] = r[0]
            # Mathis et al.: Reno's goodput ~ MSS/RTT * sqrt(3/2) / sqrt(p), p the loss per data packet
            mathis[rate] = 1448 * 8 / (p["rtt"] / 1e3) * (1.5 / (FAST_LOSS / 100)) ** 0.5 / 1e6
            rows.append([f"{rate / 1000:g} Gbit/s", tdf, cc, r[0], r[2], mathis[rate] if cc == "reno" else ""])
            ctx.log(f"   {rate} Mbit/s perceived at TDF {tdf}, {cc}: {fmt(r[0])} Mbit/s")
        res.check(f"{rate / 1000:g} Gbit/s perceived (TDF {tdf}): CUBIC above Reno",
                  f"{fmt(g['cubic'])} vs {fmt(g['reno'])} Mbit/s", g["cubic"] > g["reno"], "CUBIC > Reno")
    res.table(f"Perceived links beyond the VM, {FAST_LOSS}% loss per hop, {p['fast_seconds']} s (Mbit/s)",
              ["link", "TDF", "cc", "goodput", "retransmits", "Mathis (Reno)"], rows)
