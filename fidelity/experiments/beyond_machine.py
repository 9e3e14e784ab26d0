"""Beyond the machine: links faster than the VM can carry.

First the highest netem rate that one TCP flow sustains undilated in this VM
(R_max: goodput at least SUSTAIN_RMAX of an ideal link's; twice it is not
sustained). Then links perceived at 10x and 100x R_max / HEADROOM: undilated
they fall short (5x R_max is beyond the machine), at TDF 10 and 100
(physically R_max / HEADROOM) the nodes perceive the goodput an ideal link
would give.
"""
from harness import netutil
from harness.node import NodeError, Testbed, write_profile
from harness.result import fmt

NAME = "beyond-machine"
TITLE = "Beyond the machine: perceived links faster than the VM sustains"
REQUIRES = ["iperf3"]
RTT_MS = 1
GOODPUT = 1448 / 1514  # TCP payload per 1514-byte frame (timestamps on): an ideal link's goodput
SUSTAIN = 0.90  # of an ideal link's goodput: "gives what an ideal link would"
# R_max must be sustained with a margin (SUSTAIN_RMAX), and the dilated runs
# carry half of it (HEADROOM) physically: they run for longer and over a
# TDF-times longer RTT (slow start takes TDF times more host time), so a rate
# at the machine's edge fails for reasons that have nothing to do with
# dilation. Measured 2026-12-06 on a machine whose edge is 400-500 Mbit/s
# (400 Mbit/s gave 88-99% of an ideal link in that day's sweeps): 4000 Mbit/s at
# TDF 10, 400 physical, gave 85% and 86%; 2000 at TDF 10 gave 97-98%.
SUSTAIN_RMAX = 0.95
HEADROOM = 2


# The timed (undilated) runs leave their first second out (iperf3 -O): with it,
# the 1 s run at 50 Mbit/s, which the VM otherwise carries at 98.6-99.7% of
# an ideal link (10 clean CI runs), gave 94% once and failed R_max, a
# precondition, not the claim: the measured window held the nodes' start-up
# (connection, first translations of the path under TCG) besides the flow.
OMIT_S = 1


# The sweep doubles the rate until one flow falls short, so that R_max is this
# machine's and 2 x R_max is not sustained: the perceived links, 10x R_max /
# HEADROOM and up, are then beyond the machine, not by an assumption about it.
# The short variant once took R_max as 50 Mbit/s unmeasured, and a faster
# machine carried its 500 Mbit/s undilated at 96% of an ideal link (a
# clean-clone CI, 2026-12-06). A sweep that never falls short ends at 3200
# Mbit/s, and 10x half of that is above the 10 Gbit/s netem emulates on a
# veth: undilated it cannot be set up at all (tools/scaling).
SWEEP = [25, 50, 100, 200, 400, 800, 1600, 3200]
# TCP's buffers bound the window: autotuning stops at tcp_rmem's and
# tcp_wmem's maximum (6 and 4 MiB by default), and a link whose
# bandwidth-delay product comes near them is window-bound, dilated or not
# (rate x RTT is the same perceived and physical: rate / TDF x RTT x TDF).
# Measured 2026-12-06: 20 Gbit/s perceived over 1 ms at TDF 100 (2.5 MB)
# gave 72.5-73.6% of an ideal link with the defaults, and its physical
# twin, 200 Mbit/s over 100 ms undilated, 70.9%; with 32 MiB maxima 97.5%
# and 96.5%. Dilation is faithful there: a real host with the defaults is
# window-bound on such a link as well. The nodes get maxima of
# BUF_BDPS x the link's BDP where the defaults fall short, as one tunes a
# host for such a link; below that their defaults are kept untouched.
BUF_BDPS = 4
DEFAULT_WMEM_MAX = 4 << 20


def buffers(rate_mbit):
    """A shell prefix that raises the node's TCP buffer maxima to BUF_BDPS x
    the link's bandwidth-delay product, or "" where the defaults cover it.
    The minimum and initial sizes written are the kernel's defaults."""
    need = int(BUF_BDPS * rate_mbit * 1e6 / 8 * RTT_MS / 1e3)
    if need <= DEFAULT_WMEM_MAX:
        return ""
    return (f"echo '4096 131072 {need}' > /proc/sys/net/ipv4/tcp_rmem && "
            f"echo '4096 16384 {need}' > /proc/sys/net/ipv4/tcp_wmem && ")


# the dilated runs' perceived goodput above an ideal link's by more than
# iperf3's own measuring window can account for is a clock running fast (a
# kernel applying more than the factor), not a faster link
EXCEED = 1.03


def plan(short):
    if short:
        return {"sweep": SWEEP[1:], "factors": [10], "seconds": 2, "dilated_s": 0.2}
    return {"sweep": SWEEP, "factors": [10, 100], "seconds": 2, "dilated_s": 0.3}


def criterion(short):
    p = plan(short)
    f = " and ".join(f"{x}x" for x in p["factors"])
    return (f"R_max is the highest rate of {p['sweep']} Mbit/s one flow sustains undilated (goodput ≥ "
            f"{SUSTAIN_RMAX:.0%} of an ideal link's, rate x 1448/1514); at {f} R_max/{HEADROOM}, TDF = that factor "
            f"gives {SUSTAIN:.0%} to {EXCEED:.0%} of the ideal goodput, perceived, while TDF 1 gives less than "
            f"{SUSTAIN:.0%} or cannot emulate the link at all")


def flow(ctx, tdf, rate_mbit, seconds=None, nbytes=None):
    """Perceived goodput (Mbit/s) of one iperf3 flow over a link perceived at rate_mbit."""
    work = ctx.work / f"bm-{tdf}-{rate_mbit}"
    with Testbed(work) as tb:
        # queue well above the bandwidth-delay product of the physical link
        prof = write_profile(work / "link.toml", f"{rate_mbit} Mbit/s, {RTT_MS} ms RTT",
                             rate=f"{rate_mbit}mbit", delay=f"{RTT_MS * 500}us", limit=20000)
        size = ["-n", str(int(nbytes))] if nbytes else ["-t", str(seconds), "-O", str(OMIT_S)]
        server, client = ["iperf3", "-s", "-1"], ["iperf3", "-c", "10.213.0.40", "-J"] + size
        tune = buffers(rate_mbit)
        if tune:  # /proc/sys/net is the node's network namespace's
            server, client = (["sh", "-c", tune + 'exec "$@"', "sh"] + c for c in (server, client))
        rcv = tb.node("bmr", tdf, server, addr="10.213.0.40/24")
        snd = tb.node("bms", tdf, client, profile=prof, addr="10.213.0.41/24", hold=True)
        netutil.wait_listen(rcv, 5201)
        snd.go()
        rc = snd.wait(timeout=300)
        if rc != 0:
            raise RuntimeError(f"iperf3 client failed (rc {rc}): {snd.stdout()[-300:]}{snd.stderr()[-300:]}")
        js = netutil.iperf3_json(snd.stdout())
    return js["end"]["sum_received"]["bits_per_second"] / 1e6


def run(ctx, res):
    p = plan(ctx.short)
    res.params = {"perceived RTT": f"{RTT_MS} ms",
                  "sweep (TDF 1)": f"{p['sweep']} Mbit/s, {p['seconds']} s each after {OMIT_S} s left out",
                  "dilated runs": f"{p['dilated_s']} s perceived each (iperf3 -n; the same number of round trips "
                                  f"at every TDF)",
                  "TCP buffers": f"the nodes' defaults, except on links whose {BUF_BDPS} x BDP exceeds "
                                 f"{DEFAULT_WMEM_MAX >> 20} MiB: there tcp_rmem's and tcp_wmem's maxima are "
                                 f"{BUF_BDPS} x BDP"}
    rows, csv_rows, rmax = [], [], None
    for rate in p["sweep"]:
        ctx.log(f"   undilated, {rate} Mbit/s link")
        g = flow(ctx, 1, rate, seconds=p["seconds"])
        eff = g / (rate * GOODPUT)
        rows.append(["sweep", 1, rate, rate, g, eff])
        csv_rows.append(["sweep", 1, rate, g])
        ctx.log(f"   -> {fmt(g)} Mbit/s ({eff:.0%} of ideal)")
        if eff >= SUSTAIN_RMAX:
            rmax = rate
        else:
            break
    res.check("R_max found (the VM sustains the lowest rate of the sweep)", f"{rmax} Mbit/s", rmax is not None,
              f"one of {p['sweep']}")
    if rmax is None:
        return
    if rmax == p["sweep"][-1]:
        res.note(f"the VM sustained every rate of the sweep; {rmax} Mbit/s is the sweep's end, not the machine's")
    base = rmax // HEADROOM
    res.params["R_max"] = f"{rmax} Mbit/s (the dilated links are physically {base} Mbit/s)"
    for k in p["factors"]:
        rate = base * k
        ctx.log(f"   {k}x R_max/{HEADROOM} = {rate} Mbit/s: undilated")
        try:
            g1 = flow(ctx, 1, rate, seconds=p["seconds"])
        except NodeError as e:  # dilated-node refuses links netem cannot emulate
            g1, why = 0.0, str(e).split("dilated-node: ")[-1]
            res.note(f"{rate} Mbit/s undilated cannot be set up: {why}")
        e1 = g1 / (rate * GOODPUT)
        ctx.log(f"   -> {fmt(g1)} Mbit/s ({e1:.0%} of ideal); now at TDF {k}")
        # what the perceived link carries in dilated_s: k x dilated_s of host time
        gk = flow(ctx, k, rate, nbytes=rate * 1e6 / 8 * p["dilated_s"])
        ek = gk / (rate * GOODPUT)
        ctx.log(f"   -> {fmt(gk)} Mbit/s perceived ({ek:.0%} of ideal)")
        rows += [["beyond", 1, rate, rate, g1, e1], ["beyond", k, rate, rate / k, gk, ek]]
        csv_rows += [["beyond", 1, rate, g1], ["beyond", k, rate, gk]]
        res.check(f"{rate} Mbit/s at TDF {k}: goodput / ideal", f"{ek:.1%}", SUSTAIN <= ek <= EXCEED,
                  f"{SUSTAIN:.0%} to {EXCEED:.0%}")
        res.check(f"{rate} Mbit/s undilated falls short: goodput / ideal", f"{e1:.1%}", e1 < SUSTAIN,
                  f"< {SUSTAIN:.0%}")
    res.table("One TCP flow (goodput perceived; ideal = rate x 1448/1514)",
              ["phase", "TDF", "perceived rate Mbit/s", "physical rate Mbit/s", "goodput Mbit/s", "of ideal"],
              [r[:5] + [f"{r[5]:.1%}"] for r in rows])
    res.csv("goodput", ["phase", "tdf", "perceived_rate_mbit", "goodput_mbit"], csv_rows)
    fig = res.figure("goodput", "Goodput vs perceived link rate", "perceived link rate (Mbit/s)",
                     "goodput (Mbit/s, perceived)", xlog=True, ylog=True)
    und = sorted((r[2], r[4]) for r in rows if r[1] == 1)
    dil = sorted((r[2], r[4]) for r in rows if r[1] != 1)
    fig.line([x for x, _ in und], [y for _, y in und], "TDF 1")
    fig.line([x for x, _ in dil], [y for _, y in dil], "TDF = rate / R_max", "s-")
    xs = sorted({r[2] for r in rows})
    fig.line(xs, [x * GOODPUT for x in xs], "ideal link", "--")
