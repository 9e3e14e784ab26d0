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

Common random numbers: repetition r of every TDF runs with the same netem
seeds (a seed per shaped direction, the profile's `seed`), so the random
loss is the same sequence of draws at every TDF. With a seed of its own per
run, one 15-20 s run's goodput varies by 25-36% (the control below), and a
±5% criterion would need about 40 long runs per point; paired, a TDF-k run
is compared with the TDF-1 run that lost the same packets, as long as the
two send the same packets. The loss is still random: each repetition has
other seeds.

Host-time cost (QEMU TCG, 2 vCPUs): a run of T perceived seconds at TDF k
takes k*T host seconds plus node set-up (~5 s a pair). TDF 1 runs one at a
time (at 40 Mbit/s the emulated machine is busy); at a dilated TDF the runs
of every (flows, loss) go in batches on separate node pairs, each batch at
most BATCH_MBIT physical Mbit/s (12 pairs at TDF 10, all 54 at TDF 100,
with the 1 Gbit/s CUBIC-against-Reno pair of the fast links). The full run,
T = 4 + 16 s, 3 repetitions: 54 x 23 s at TDF 1 and as much again for
the control (ref_again: TDF 1 with the same seeds once more), 5 x ~230 s at
TDF 10, ~2400 s at TDF 100: about 105 min; the 10 Gbit/s pair at TDF 1000
adds ~5.6 h (FIDELITY_CC='fast=1000' leaves it out).
--short, the test suite's variant: CUBIC and Reno, TDF 1 and 10, ~3 min.
"""
import ipaddress
import json
import os
from collections import namedtuple
from pathlib import Path

import numpy as np

from harness import netutil, stats
from harness.node import Testbed, write_profile
from harness.result import fmt, pct

NAME = "congestion-control"
TITLE = "Congestion control: Reno, CUBIC and BBR goodput at TDF 1, 10 and 100"
REQUIRES = ["iperf3", "tc"]
MEAN_TOL, KS_MAX = 0.05, 0.10
# the KS half of the criterion reads each per-second goodput to within 1%
# (stats.ks_within): on a full link both TDFs' seconds sit in a spike at the
# link's rate whose width is the emulated machine's timer jitter (SD 0.05-0.1%
# of the rate at TDF 1, a TDF-th of that dilated), and the plain D compares
# those widths, not the distributions (0.17-0.40 in the first full run with
# the means 0.01% apart). 1% is 10-20 times that jitter and a fifth of the
# means' tolerance; half or twice a factor in one of TCP's clocks moves the
# distributions by tens of percent. The plain D is reported beside it.
KS_TOL = 0.01
SHORT_TOL = 0.15

FULL = {"ccs": ["reno", "cubic", "bbr"], "flows": [1, 10], "losses": [0.0, 0.01, 0.1], "tdfs": [1, 10, 100],
        "rate": 40, "rtt": 80, "seconds": 16, "reps": 3, "determ": False, "seeded": True, "fast": [1000, 10000],
        "tol": MEAN_TOL, "ks": KS_MAX, "ks_tol": KS_TOL, "hops": 1, "omit": 4, "batch_mbit": 50, "backlog": 1000,
        "ref_again": True, "raw": "", "raw_again": "", "resume": []}
# the test suite's variant: CUBIC (and Reno) at TDF 1 and 10, deterministic
# loss (every 1000th data packet): nearly the same run at every TDF; the
# first 4 s (slow start and the first recoveries, where TDF 1's emulated
# machine, busy at 40 Mbit/s, shapes the ramp: iperf3 -O) are left out
SHORT = {"ccs": ["cubic", "reno"], "flows": [1], "losses": [0.1], "tdfs": [1, 10], "rate": 40, "rtt": 100,
         "seconds": 8, "reps": 1, "determ": True, "seeded": False, "fast": [], "tol": SHORT_TOL, "ks": None, "ks_tol": KS_TOL,
         "hops": 1, "omit": 4, "batch_mbit": 50, "backlog": 1000, "ref_again": False, "raw": "", "raw_again": "",
         "resume": []}
# perceived links beyond the VM (Mbit/s in "fast"), CUBIC against Reno at
# FAST_LOSS, each at the TDF that makes it FAST_PHYS_MBIT physically
FAST_PHYS_MBIT = 10
FAST_LOSS = 0.01
# batch_mbit (default): half of the ~100 Mbit/s one flow fills undilated in
# this VM (beyond-machine's R_max), so that a batch's own load does not limit it.
# backlog: net.core.netdev_max_backlog during a batch is at least this many
# packets per node pair (0: as the host has it). Every packet crosses two
# veths, and each queues it in its CPU's input backlog (1000 packets by
# default, for all the CPU's devices): a batch of 180 pairs at TDF 100 with
# the default dropped 14,224 packets there in 500 s (part 8), which no
# netem profile lost and every 0%-loss run retransmitted. A run records
# the drops of its batch (backlog_drops, /proc/net/softnet_stat between
# go() and the batch's end; setup_drops before) and the report requires 0.
# ref_again: TDF 1 measured a second time with the same seeds, the control
# that says how far TDF 1 reproduces itself (the yardstick of a TDF-k
# difference). raw: analyse the runs of an earlier run's NAME-raw.jsonl
# instead of measuring (raw_again: the TDF-1 runs of another such file as
# the second TDF-1 measurement). resume: take the runs of the plan that
# earlier NAME-raw.jsonl files (comma-separated) hold with the same run shape
# (RUN_SHAPE), measure only the others: a plan longer than one boot is
# measured in parts, each boot's raw file holding what the earlier ones had.
RUN_SHAPE = ("seconds", "omit", "rtt", "hops", "determ", "seeded")
# A batch's node pairs share dilated-node's bridge, on a /22 rather than its
# default /24 so that a full-size batch fits (at TDF 100 the whole 40 Mbit/s
# matrix, 180 pairs, is one batch). Pair i is PAIR_FIRST + 2i (receiver) and
# the next address (sender). The other experiments' fixed addresses (.20-.41,
# diecast's .60 on) never meet these: each experiment has a testbed of its
# own, whose end removes the bridge. MAX_PAIRS is what the /22 holds (a
# bridge takes 1024 ports, two a pair: 486 pairs fit there too); batches()
# never puts more in one.
PAIR_NET = ipaddress.IPv4Network("10.213.0.0/22")
PAIR_FIRST = 50
MAX_PAIRS = (PAIR_NET.num_addresses - 2 - PAIR_FIRST) // 2


# one run: congestion control, flows, loss %, repetition, perceived Mbit/s
Spec = namedtuple("Spec", "cc flows loss rep rate")


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
    p["fast"] = [x for x in p["fast"] if x not in ("", "none", False)]  # fast=none (or false): no fast links
    return p


def criterion(short):
    p = plan(short)
    others = " and ".join(str(t) for t in p["tdfs"][1:])
    loss = "deterministic loss" if p["determ"] else "random loss per hop"
    c = (f"{', '.join(p['ccs'])}; {' and '.join(map(str, p['flows']))} flow(s); perceived {p['rate']} Mbit/s, "
         f"{p['rtt']} ms RTT, {loss} {', '.join(f'{x:g}%' for x in p['losses'])}"
         + (" (repetition r: the same netem seeds at every TDF)" if p["seeded"] and not p["determ"] else "")
         + f"; {p['seconds']} s x {p['reps']}"
         + (f" (the first {p['omit']} s left out)" if p["omit"] else "") + ": "
         f"per congestion control, flows and loss, the mean perceived goodput at TDF {others} is within "
         f"±{p['tol']:.0%} of TDF 1's")
    if p["ks"]:
        c += (f", and the per-second goodputs' KS distance to TDF 1's, each value read to ±{p['ks_tol']:.0%} "
              f"(D±{p['ks_tol']:.0%}: how far one CDF lies more than {p['ks_tol']:.0%} left of the other), "
              f"is at most {p['ks']}")
    if p["fast"]:
        links = " and ".join(f"{r / 1000:g} Gbit/s (TDF {r // FAST_PHYS_MBIT})" for r in p["fast"])
        c += (f"; then perceived {links}, CUBIC against Reno ({FAST_LOSS}% loss): CUBIC's goodput above "
              "Reno's (reported; no TDF-1 reference exists)")
    return c


def _seeds(rep):
    """netem seeds of repetition rep: (sender down, sender up, receiver down,
    receiver up), the same at every TDF."""
    return tuple(1000 * (rep + 1) + k for k in range(1, 5))


def pair_addrs(i):
    """Node pair i's receiver and sender addresses in PAIR_NET."""
    if not 0 <= i < MAX_PAIRS:
        raise ValueError(f"node pair {i}: {PAIR_NET} holds pairs 0-{MAX_PAIRS - 1}")
    rcv = PAIR_NET[PAIR_FIRST + 2 * i]
    return str(rcv), str(rcv + 1)


def _pair(ctx, tb, i, tdf, spec, p):
    """Sender/receiver node pair number i for spec, held; returns (receiver,
    sender). hops 1: the sender's profile shapes the link (data and ACKs each
    cross one lossy hop); hops 2: both nodes have it, with half the delay
    (each direction crosses two lossy hops, as between two dilated-node
    nodes). Both nodes linger until the batch ends: the sender's counters
    are read after its run, and no node is torn down (its namespaces, veth
    pair and bridge port) while other runs of the batch still go. A batch's
    runs do not end together: a ten-flow run opens a connection a round
    trip, so its seconds start most of a perceived second after a one-flow
    run's. In part 9 the 39th measured second of 46 of the 60 ten-flow Reno
    and CUBIC runs was low, close to when the one-flow runs ended (which
    event slowed them is not measured; the teardown of their nodes is one
    candidate, and now cannot happen)."""
    rate, rtt, hops, loss = spec.rate, p["rtt"], p["hops"], spec.loss
    bdp = rate * 1e6 * rtt / 1e3 / (1514 * 8)
    limit = int(2 * bdp) + 200  # the delay line plus a BDP of queue
    work = tb.work / f"pair{i}"
    work.mkdir(parents=True, exist_ok=True)
    random_loss = f"{loss:g}%" if loss and not p["determ"] else None
    seeds = _seeds(spec.rep) if random_loss and p["seeded"] else (None,) * 4

    def profile(name, down_seed, up_seed):
        return write_profile(work / name, f"{rate} Mbit/s, {rtt} ms RTT, loss {loss}%", rate=f"{rate}mbit",
                             delay=f"{rtt * 500 // hops}us", limit=limit, loss=random_loss,
                             down={"seed": down_seed} if down_seed is not None else None,
                             up={"seed": up_seed} if up_seed is not None else None)
    rcv_addr, snd_addr = pair_addrs(i)
    bits, net = PAIR_NET.prefixlen, str(PAIR_NET)
    snd = tb.node(f"ccs{i}", tdf, ["iperf3", "-s", "-1"], profile=profile("sender.toml", *seeds[:2]),
                  addr=f"{snd_addr}/{bits}", subnet=net, linger=True)
    snd.nsenter("sysctl", "-qw", f"net.ipv4.tcp_congestion_control={spec.cc}", check=False)
    cmd = ["iperf3", "-c", snd_addr, "-R", "-C", spec.cc, "-P", spec.flows, "-t", p["seconds"],
           "-O", p["omit"], "-i", "1", "-J"]
    rcv = tb.node(f"ccr{i}", tdf, cmd, addr=f"{rcv_addr}/{bits}", subnet=net, hold=True, linger=True,
                  profile=profile("receiver.toml", *seeds[2:]) if hops == 2 else None)
    if loss and p["determ"]:
        netutil.deterministic_loss(rcv, every=round(100 / loss))
    netutil.wait_listen(snd, 5201)
    return rcv, snd


def runs(ctx, tdf, specs, p):
    """Runs of specs at tdf, all at once on separate node pairs: per spec
    {"goodput": Mbit/s, "seconds": per-second Mbit/s, "omitted": the
    left-out seconds' Mbit/s, "retransmits": n, "backlog_drops": packets
    the host's input backlogs dropped while the batch ran, "setup_drops":
    while its nodes were set up (the same for every run of a batch),
    "sender": the sender's TcpExt events and qdisc drops (netutil.sender_events),
    "cpu": the CPUs' load while the batch ran (netutil.cpu_load)}."""
    ctx.n = getattr(ctx, "n", 0) + 1
    with Testbed(ctx.work / f"cc{ctx.n}") as tb, netutil.backlog_at_least(p["backlog"] * len(specs)):
        at_setup = netutil.backlog_drops()
        pairs = [_pair(ctx, tb, i, tdf, spec, p) for i, spec in enumerate(specs)]
        at_go = netutil.backlog_drops()
        with netutil.cpu_load() as cpu:
            out = _go_and_wait(pairs, specs, tdf, p)
        drops = netutil.backlog_drops() - at_go
        for (_, snd), res in zip(pairs, out):  # every run has ended: the senders' counters are final
            res["sender"] = netutil.sender_events(snd)
    if len(specs) > 1 or drops or at_go > at_setup:
        busy = "-" if cpu["busy"] is None else f"{cpu['busy']:.0%}"
        ctx.log(f"   batch of {len(specs)} at TDF {tdf}: {drops} packets dropped by the host's input backlog "
                f"while it ran, {at_go - at_setup} during set-up; CPUs {busy} busy, at least 95% in "
                f"{cpu['full_periods']} of {cpu['periods']} host seconds")
    return [dict(r, backlog_drops=drops, setup_drops=at_go - at_setup, cpu=cpu) for r in out]


def _go_and_wait(pairs, specs, tdf, p):
    """Start every pair's iperf3 client at once and wait for each: its
    result as runs() gives it, without the batch's figures."""
    for r, _ in pairs:
        r.go()
    out = []
    for (r, _), spec in zip(pairs, specs):
        rc = r.wait(timeout=120 + 2 * tdf * (p["seconds"] + p["omit"] + 5))
        if rc != 0:
            raise RuntimeError(f"iperf3 client failed (rc {rc}): {r.stdout()[-300:]}{r.stderr()[-300:]}")
        js = netutil.iperf3_json(r.stdout())
        secs = [iv["sum"] for iv in js["intervals"] if iv["sum"]["seconds"] > 0.5]
        seen = js["end"].get("sender_tcp_congestion", "?")
        if seen not in (spec.cc, "?"):
            raise RuntimeError(f"sender ran {seen}, not {spec.cc}")
        out.append({"goodput": js["end"]["sum_received"]["bits_per_second"] / 1e6,
                    "seconds": [s["bits_per_second"] / 1e6 for s in secs if not s.get("omitted")],
                    "omitted": [s["bits_per_second"] / 1e6 for s in secs if s.get("omitted")],
                    "retransmits": js["end"].get("sum_sent", {}).get("retransmits", 0)})
    return out


def batches(specs, tdf, cap_mbit, max_runs=MAX_PAIRS):
    """specs in batches whose physical rates (perceived / tdf) add up to at
    most cap_mbit, at most max_runs (node pairs) a batch; one run alone at
    TDF 1; no batch for no specs."""
    if tdf == 1:
        return [[s] for s in specs]
    out, load = [], 0.0
    for s in specs:
        if not out or load + s.rate / tdf > cap_mbit or len(out[-1]) == max_runs:
            out.append([])
            load = 0.0
        out[-1].append(s)
        load += s.rate / tdf
    return out


def _shape(p):
    """What a run is besides its Spec and TDF: runs of two plans can stand
    for each other only where this is the same."""
    return {k: p[k] for k in RUN_SHAPE}


def _raw_line(spec, tdf, again, res, shape):
    """One run as a line of NAME-raw.jsonl (read back by _load_raw)."""
    return json.dumps({"spec": list(spec), "tdf": tdf, "again": again, "shape": shape, **res}) + "\n"


def _load_raw(path, tdf1_only=False, shape=None):
    """{(spec, tdf, again): result} of a NAME-raw.jsonl; with shape, only
    the runs recorded with that shape (files from before the shape was
    recorded have none)."""
    out = {}
    lines = Path(path).read_text().splitlines()
    for i, line in enumerate(lines):
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # a boot that ended while writing its last run
                break
            raise
        if tdf1_only and r["tdf"] != 1:
            continue
        if shape is not None and r.get("shape") != shape:
            continue
        res = {k: r[k] for k in ("goodput", "seconds", "omitted", "retransmits")}
        res.update({k: r[k] for k in ("backlog_drops", "setup_drops", "sender", "cpu") if k in r})  # none before 2026-12-07
        out[(Spec(*r["spec"]), r["tdf"], tdf1_only or r.get("again", False))] = res
    return out


def measure(ctx, p):
    """Every run of the plan, TDF by TDF: {(spec, tdf, again): result},
    again: the second TDF-1 measurement (ref_again). Each result is also
    appended to NAME-raw.jsonl in the output directory as it comes; with
    p["raw"], the results are read from such a file instead."""
    matrix = [Spec(cc, nf, loss, rep, p["rate"]) for nf in p["flows"] for loss in p["losses"]
              for cc in p["ccs"] for rep in range(p["reps"])]
    fast = {r: [Spec(cc, 1, FAST_LOSS, 0, r) for cc in ("reno", "cubic")] for r in p["fast"]}
    plan_ = {(t, False): list(matrix) for t in p["tdfs"]}
    if p["ref_again"] or p["raw_again"]:
        plan_[(1, True)] = list(matrix)
    for r, specs in fast.items():  # a fast link joins the batches of its TDF
        plan_.setdefault((r // FAST_PHYS_MBIT, False), []).extend(specs)
    raw, shape = ctx.out / f"{NAME}-raw.jsonl", _shape(p)
    if p["raw"]:
        got = _load_raw(p["raw"])
        if p["raw_again"]:
            got.update(_load_raw(p["raw_again"], tdf1_only=True))
        missing = [(s, t, a) for (t, a), specs in plan_.items() for s in specs if (s, t, a) not in got]
        if missing:
            raise RuntimeError(f"{len(missing)} runs of the plan are not in {p['raw']} (first: {missing[0]})")
        ctx.log(f"   {len(got)} runs read from {p['raw']}" + (f" and {p['raw_again']}" if p["raw_again"] else ""))
    else:
        got = {}
        for path in p["resume"]:  # read before raw is rewritten: it may be one of them
            had = _load_raw(path, shape=shape)
            got.update({k: r for k, r in had.items() if k[0] in plan_.get(k[1:], [])})
        if p["resume"]:
            ctx.log(f"   {len(got)} runs of the plan taken from {', '.join(map(str, p['resume']))}")
    if not (p["raw"] and Path(p["raw"]).resolve() == raw.resolve()):
        raw.write_text("".join(_raw_line(s, t, a, r, shape) for (s, t, a), r in got.items()))
    if p["raw"]:
        return got, fast
    for tdf, again in sorted(plan_):
        todo = [s for s in plan_[(tdf, again)] if (s, tdf, again) not in got]
        bs, taken = batches(todo, tdf, p["batch_mbit"]), len(plan_[(tdf, again)]) - len(todo)
        ctx.log(f"   TDF {tdf}{' again' if again else ''}: {len(todo)} runs in {len(bs)} batch(es)"
                + (f" ({taken} taken)" if taken else ""))
        for b in bs:
            for spec, res in zip(b, runs(ctx, tdf, b, p)):
                got[(spec, tdf, again)] = res
                with open(raw, "a") as f:
                    f.write(_raw_line(spec, tdf, again, res, shape))
                if tdf == 1 or len(b) <= 3:
                    ctx.log(f"   {spec.cc}, {spec.flows} flow(s), loss {spec.loss:g}%, rep {spec.rep}, TDF {tdf}: "
                            f"{fmt(res['goodput'], 2)} Mbit/s")
    return got, fast


def _ks(a, b, p):
    """The per-second goodputs' plain KS D and D within p["ks_tol"] (the
    criterion's)."""
    return stats.ks(a, b)[0], stats.ks_within(a, b, p["ks_tol"])


def _paired(x, ref):
    """Goodputs x against ref, repetition by repetition (the same seeds):
    the means' difference and each repetition's, as percentages."""
    return (pct(stats.rel_diff(np.mean(x), np.mean(ref))),
            " ".join(pct(stats.rel_diff(a, b)) for a, b in zip(x, ref)))


def run(ctx, res):
    p = plan(ctx.short)
    res.params = {"perceived link": f"{p['rate']} Mbit/s, {p['rtt']} ms RTT " + (
                      "(sender's profile: data and ACKs each cross one shaped hop)" if p["hops"] == 1 else
                      "(both nodes' profiles, half the delay each: data and ACKs each cross two shaped hops)"),
                  "loss": ("deterministic: every N-th data packet dropped at the receiver (tc gact determ)"
                           if p["determ"] else "netem random loss on each hop" + (
                               "; repetition r has netem seeds 1000(r+1)+1..4 (a seed per shaped direction) "
                               "at every TDF" if p["seeded"] else "")) + f", {p['losses']} %",
                  "congestion control": p["ccs"], "flows": p["flows"], "TDFs": p["tdfs"],
                  "runs": f"{p['seconds']} s perceived measured after {p['omit']} s left out (iperf3 -O), "
                          f"{p['reps']} repetitions; TDF 1 one run at a time, dilated: on separate node pairs "
                          f"in batches of at most {p['batch_mbit']} physical Mbit/s",
                  "TCP": "no route settings (no --rto-min, no quickack): the kernel's own timers"}
    if p["ref_again"] or p["raw_again"]:
        res.params["control"] = "TDF 1 measured twice, with the same seeds"
    if p["ks"]:
        # the KS criterion's resolution at this plan's size: with few per-second
        # values, two samples of one distribution are often more than KS_MAX apart
        n = p["reps"] * p["seconds"]
        res.params["KS criterion at this size"] = (
            f"{n} per-second values per TDF and cell: two samples of {n} drawn from one distribution "
            f"have D <= {p['ks']} with probability {stats.ks_same_pass(n, n, p['ks']):.0%} "
            f"(Kolmogorov, asymptotic); 95% needs {stats.ks_samples_needed(p['ks'])} "
            "(reps x seconds, independent values; paired runs that move together give a smaller D); "
            f"D±{p['ks_tol']:.0%}, never above the plain D, passes at least as often")
    if os.environ.get("FIDELITY_CC"):
        res.params["FIDELITY_CC"] = os.environ["FIDELITY_CC"]
    got, fast_specs = measure(ctx, p)
    res.data.append(f"{NAME}-raw.jsonl")  # every run, for raw= (measure() wrote it)
    rows, ctrl_rows, same_rows, dd_rows, csv_rows, event_rows = [], [], [], [], [], []
    for nflows in p["flows"]:
        for loss in p["losses"]:
            for cc in p["ccs"]:
                specs = [Spec(cc, nflows, loss, rep, p["rate"]) for rep in range(p["reps"])]
                rs = {t: [got[(s, t, False)] for s in specs] for t in p["tdfs"]}
                g = {t: np.array([r["goodput"] for r in rs[t]]) for t in p["tdfs"]}
                sec = {t: np.concatenate([r["seconds"] for r in rs[t]]) for t in p["tdfs"]}
                for tdf in p["tdfs"]:
                    s = stats.summary(g[tdf])
                    d = stats.rel_diff(s["mean"], g[1].mean())
                    D, Dt = _ks(sec[tdf], sec[1], p) if tdf != 1 else (float("nan"), float("nan"))
                    whole = np.mean([np.mean(r["omitted"] + r["seconds"]) for r in rs[tdf]])
                    rows.append([cc, nflows, f"{loss:g}%", tdf, len(rs[tdf]), s["mean"], s["sd"],
                                 " ".join(fmt(x, 2) for x in g[tdf]), sum(r["retransmits"] for r in rs[tdf]),
                                 pct(d) if tdf != 1 else "",
                                 # the same seeds: repetition r at TDF k against repetition r at TDF 1
                                 _paired(g[tdf], g[1])[1] if tdf != 1 else "", D, Dt, float(np.std(sec[tdf])),
                                 whole])
                    csv_rows += [[cc, nflows, loss, tdf, i, j, x] for i, r in enumerate(rs[tdf])
                                 for j, x in enumerate(r["seconds"])]
                    ev = [r["sender"] for r in rs[tdf] if "sender" in r]  # none in runs from before 2026-12-07
                    if ev:
                        event_rows.append([cc, nflows, f"{loss:g}%", tdf, len(ev)] + _event_sums(ev))
                    ctx.log(f"   {cc}, {nflows} flow(s), loss {loss:g}%, TDF {tdf}: "
                            f"{' '.join(fmt(x, 2) for x in g[tdf])} Mbit/s (mean {fmt(s['mean'])}"
                            + (f", {pct(d)} vs TDF 1, KS D {fmt(D)}, D±{p['ks_tol']:.0%} {fmt(Dt)})"
                               if tdf != 1 else ")"))
                    if tdf == 1:
                        if (specs[0], 1, True) in got:  # the control: TDF 1 again, the same seeds
                            again = [got[(s_, 1, True)] for s_ in specs]
                            ga = np.array([r["goodput"] for r in again])
                            sa = np.concatenate([r["seconds"] for r in again])
                            same_rows.append([cc, nflows, f"{loss:g}%", " ".join(fmt(x, 2) for x in ga),
                                              *_paired(ga, g[1]), *_ks(sa, sec[1], p)])
                        if len(rs[1]) > 1:  # the control: TDF 1 against itself, other seeds
                            h = len(rs[1]) // 2
                            a = np.concatenate([r["seconds"] for r in rs[1][:h]])
                            b = np.concatenate([r["seconds"] for r in rs[1][h:]])
                            ctrl_rows.append([cc, nflows, f"{loss:g}%", len(rs[1]), s["cv"],
                                              pct(stats.rel_diff(g[1][h:].mean(), g[1][:h].mean())),
                                              *_ks(a, b, p)])
                        continue
                    what = f"{cc}, {nflows} flow(s), loss {loss:g}%, TDF {tdf} vs 1"
                    res.check(f"{what}: mean goodput", pct(d), abs(d) <= p["tol"], f"±{p['tol']:.0%}")
                    if p["ks"]:
                        res.check(f"{what}: per-second goodput KS D±{p['ks_tol']:.0%}", fmt(Dt), Dt <= p["ks"],
                                  f"≤ {p['ks']} (plain D {fmt(D)})")
                # dilated against dilated, the same seeds: where TDF 1's machine is not
                # the one the runs emulate, the dilated TDFs still agree with each other
                for t in p["tdfs"][2:]:
                    base = p["tdfs"][1]
                    dd_rows.append([cc, nflows, f"{loss:g}%", f"{t} vs {base}", *_paired(g[t], g[base]),
                                    *_ks(sec[t], sec[base], p)])
                fig = res.figure(f"cdf-{cc}-{nflows}-{loss:g}", f"{cc}, {nflows} flow(s), loss {loss:g}%: "
                                 "per-second goodput", "goodput (Mbit/s, perceived)", "CDF")
                for tdf in p["tdfs"]:
                    fig.cdf(sec[tdf], f"TDF {tdf}")
    kst = f"KS D±{p['ks_tol']:.0%}"
    res.table("Goodput (Mbit/s, perceived; receiver's iperf3)",
              ["cc", "flows", "loss", "TDF", "runs", "mean", "SD", "each run", "retransmits",
               "mean vs TDF 1", "each run vs TDF 1's with the same seeds", "KS D per-second", kst,
               "SD per-second", "mean with the left-out seconds"], rows)
    if dd_rows:
        res.table("Dilated against dilated, the same seeds (reported; not part of the criterion)",
                  ["cc", "flows", "loss", "TDF", "mean", "each run", "KS D per-second", kst], dd_rows)
    if same_rows:
        res.table("The control: TDF 1 again with the same seeds (how far the reference reproduces itself)",
                  ["cc", "flows", "loss", "each run", "mean vs TDF 1", "each run vs TDF 1's", "KS D per-second",
                   kst],
                  same_rows)
    if ctrl_rows:
        res.table("The control: TDF 1 against TDF 1 (first half of the repetitions against the second; "
                  "other seeds)", ["cc", "flows", "loss", "runs", "CV of runs", "mean 2nd vs 1st half", "KS D", kst],
                  ctrl_rows)
    res.csv("seconds", ["cc", "flows", "loss_pct", "tdf", "run", "second", "mbit_s"], csv_rows)
    host_drops(res, p, got)
    if event_rows:
        res.table("The senders' TCP events (TcpExt of each sender's namespace, summed over the runs; "
                  "qdisc drops: the sender's netem, random loss and its queue limit together; reported, "
                  "not judged: with the same seeds, where a TDF-k cell repairs its losses otherwise than TDF 1)",
                  ["cc", "flows", "loss", "TDF", "runs", "RTOs", "spurious RTOs", "loss probes",
                   "fast recoveries", "fast retransmits", "lost retransmits", "qdisc drops"], event_rows)
    if fast_specs:
        fast(ctx, res, p, got, fast_specs)


def host_drops(res, p, got):
    """The criterion's precondition: no run's batch lost packets in the
    host's input backlog while it ran (those drops are the batch's, not the
    emulated link's, and at TDF 100 they decided the one-flow cells in
    part 8). Runs measured before the drops were recorded are left out."""
    rows = []
    for tdf in p["tdfs"]:
        rec = [r for (s, t, _), r in got.items() if t == tdf and "backlog_drops" in r]
        if not rec:
            continue
        hit = sum(1 for r in rec if r["backlog_drops"])
        cpu = [r["cpu"] for r in rec if r.get("cpu", {}).get("busy") is not None]  # none before 2026-12-07
        fullest = max(cpu, key=lambda c: c["full_periods"], default=None)
        rows.append([tdf, len(rec), hit, max(r["backlog_drops"] for r in rec), max(r["setup_drops"] for r in rec),
                     f"{max(c['busy'] for c in cpu):.0%}" if cpu else "-",
                     f"{fullest['full_periods']} of {fullest['periods']}" if cpu else "-"])
        res.check(f"TDF {tdf}: runs whose batch lost packets in the host's input backlog while it ran",
                  f"{hit} of {len(rec)}", hit == 0, "none")
    if rows:
        res.table("The host's input backlog (/proc/net/softnet_stat drops; net.core.netdev_max_backlog at least "
                  f"{p['backlog']} packets a node pair)",
                  ["TDF", "runs recorded", "runs whose batch dropped", "most a batch dropped while running",
                   "most a batch dropped during set-up", "CPUs busy while a batch ran (most)",
                   "host seconds a batch ran with the CPUs at least 95% busy (most)"], rows)


def _event_sums(events):
    """The senders' events of a cell's runs (netutil.sender_events), summed
    in the order of the report's table."""
    tot = {k: sum(e.get(k, 0) for e in events) for k in netutil.SENDER_EVENTS + ("qdisc_drops",)}
    return [tot["TCPTimeouts"], tot["TCPSpuriousRTOs"], tot["TCPLossProbes"],
            tot["TCPSackRecovery"] + tot["TCPRenoRecovery"], tot["TCPFastRetrans"], tot["TCPLostRetransmit"],
            tot["qdisc_drops"]]


def fast(ctx, res, p, got, fast_specs):
    """Perceived 1 and 10 Gbit/s: CUBIC against Reno, one flow, only dilated."""
    rows = []
    # Mathis et al.: Reno's goodput ~ MSS/RTT * sqrt(3/2) / sqrt(p), p the loss per data packet
    mathis = 1448 * 8 / (p["rtt"] / 1e3) * (1.5 / (FAST_LOSS / 100)) ** 0.5 / 1e6
    for rate, specs in fast_specs.items():
        tdf = rate // FAST_PHYS_MBIT
        g = {s.cc: got[(s, tdf, False)] for s in specs}
        for cc in ("reno", "cubic"):
            rows.append([f"{rate / 1000:g} Gbit/s", tdf, cc, g[cc]["goodput"], g[cc]["retransmits"],
                         mathis if cc == "reno" else ""])
            ctx.log(f"   {rate} Mbit/s perceived at TDF {tdf}, {cc}: {fmt(g[cc]['goodput'])} Mbit/s")
        res.check(f"{rate / 1000:g} Gbit/s perceived (TDF {tdf}): CUBIC above Reno",
                  f"{fmt(g['cubic']['goodput'])} vs {fmt(g['reno']['goodput'])} Mbit/s",
                  g["cubic"]["goodput"] > g["reno"]["goodput"], "CUBIC > Reno")
    res.table(f"Perceived links beyond the VM, {FAST_LOSS}% loss per hop, {p['seconds']} s after {p['omit']} s "
              "left out (Mbit/s)", ["link", "TDF", "cc", "goodput", "retransmits", "Mathis (Reno)"], rows)
