"""A DieCast-style run: N nodes of a small web service.

Every node runs nginx (Debian's nginx-light) serving files of three sizes and
curl fetching FETCHES files from the other nodes in turn, over a link it
perceives as RATE_MBIT / ONE_WAY_MS each way with CPUS of a CPU. Baseline:
TDF 1 with those resources as they are. DieCast: TDF N, each node with 1/N
of them (dilated-node's default --scale = TDF: cpu.max and netem rate / N),
which the dilated nodes perceive as the full resources again. curl times each
fetch with its own (dilated) clock; the completion-time CDFs should overlap.
"""
import numpy as np

from harness import netutil, stats
from harness.node import Testbed, make_gate, open_gate, write_profile
from harness.result import fmt, pct

NAME = "diecast"
TITLE = "DieCast: N nodes at TDF N on 1/N of the resources each"
REQUIRES = ["nginx", "curl"]
RATE_MBIT, ONE_WAY_MS, CPUS = 20, 2, 1
SIZES = {"16k": 16 << 10, "256k": 256 << 10, "1m": 1 << 20}

NGINX_CONF = """worker_processes 1;
user root;
pid {p}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    sendfile on;
    client_body_temp_path {p}/body;
    proxy_temp_path {p}/proxy;
    fastcgi_temp_path {p}/fastcgi;
    uwsgi_temp_path {p}/uwsgi;
    scgi_temp_path {p}/scgi;
    server {{ listen {addr}:80; root {www}; }}
}}
"""
# sh -c NODE_SCRIPT sh PREFIX GOFIFO CURL-ARGS...: serve, wait for the start,
# fetch (the node lingers, serving the others, until the testbed stops)
NODE_SCRIPT = ('nginx -e "$1/error.log" -p "$1" -c "$1/nginx.conf" || exit 1; read _ < "$2"; shift 2; '
               'exec curl -sS "$@"')


# The short variant judges the mean, not the median: its 12 fetches per run
# are 4 of each size, so the median is the middle of the 4 fetches of 256 KiB
# unless a 16 KiB fetch stalls past them (they took 30 to 316 ms, at TDF 1 as
# at TDF 2), and then it jumps to another size. Over 24 runs in one VM the
# median of TDF 2 vs TDF 1 ranged from -20% to +39% (SD 12.5%), the mean
# from -10% to +16% (SD 5.3%, average -2%).
#
# Even by the mean one swarm can stray: in the CI runs of 2026-11-23/24 TDF 2
# vs TDF 1 was -11.5% to +6.0% (13 runs), and then -24.8%, a pass by 0.2%
# that came from a slow TDF 1 swarm (mean 352 ms; 262 to 286 ms before). So
# the short variant runs three pairs of swarms, in alternating order (a
# drift of the guest's speed then favours neither TDF), and judges the
# median pair: a factor off by 2x or 1/2x moves every pair, one stray swarm
# moves only its own.
def plan(short):
    if short:
        return {"n": 2, "fetches": 6, "tol": 0.25, "ks": False, "stat": "mean", "pairs": 3}
    return {"n": 4, "fetches": 30, "tol": 0.10, "ks": True, "stat": "median", "pairs": 1}


def criterion(short):
    p = plan(short)
    ks = " and a two-sample KS test does not tell them apart (p > 0.05)" if p["ks"] else ""
    pairs = f", median of {p['pairs']} pairs of runs" if p["pairs"] > 1 else ""
    return (f"{p['n']} nodes x {p['fetches']} fetches: the {p['stat']} completion time at TDF {p['n']} (1/{p['n']} "
            f"of the resources each) is within ±{p['tol'] * 100:.0f}% of TDF 1's (full resources){pairs}{ks}")


def swarm(ctx, tdf, p, pair=0):
    """Completion times (s, perceived) and sizes of every fetch of every node."""
    work = ctx.work / f"dc-{tdf}-{pair}"
    www = work / "www"
    www.mkdir(parents=True)
    for name, size in SIZES.items():
        (www / name).write_bytes(np.random.default_rng(size).bytes(size))
    prof = write_profile(work / "link.toml", f"{RATE_MBIT} Mbit/s, {ONE_WAY_MS} ms each way",
                         rate=f"{RATE_MBIT}mbit", delay=f"{ONE_WAY_MS}ms", limit=1000)
    addrs = [f"10.213.0.{60 + i}" for i in range(p["n"])]
    names = list(SIZES)
    with Testbed(work) as tb:
        nodes = []
        for i, addr in enumerate(addrs):
            prefix = work / f"n{i}"
            for d in ("", "body", "proxy", "fastcgi", "uwsgi", "scgi"):
                (prefix / d).mkdir(parents=True, exist_ok=True)
            (prefix / "nginx.conf").write_text(NGINX_CONF.format(p=prefix, addr=addr, www=www))
            gate = work / f"n{i}.start"
            make_gate(gate)
            curl = ["-H", "Connection: close", "-w", r"%{http_code} %{size_download} %{time_total}\n"]
            for j in range(p["fetches"]):
                peer = addrs[(i + 1 + j % (p["n"] - 1)) % p["n"]]
                curl += ["-o", "/dev/null", f"http://{peer}/{names[j % len(names)]}"]
            n = tb.node(f"dc{i}", tdf, ["sh", "-c", NODE_SCRIPT, "sh", prefix, gate] + curl,
                        profile=prof, cpus=CPUS, addr=f"{addr}/24", rto_min=True, linger=True)
            nodes.append((n, gate))
        for n, _ in nodes:
            netutil.wait_listen(n, 80)
        for _, gate in nodes:
            open_gate(gate)
        times, sizes = [], []
        for n, _ in nodes:
            rc = n.wait(timeout=120 + 20 * tdf * p["fetches"])
            if rc != 0:
                raise RuntimeError(f"node {n.name}: curl or nginx failed (rc {rc}): {n.stderr()[-300:]}")
            for ln in n.stdout().splitlines():
                f = ln.split()
                if len(f) == 3:
                    if f[0] != "200":
                        raise RuntimeError(f"node {n.name}: HTTP {f[0]}")
                    sizes.append(int(f[1]))
                    times.append(float(f[2]))
    return np.array(times), np.array(sizes)


def run(ctx, res):
    p = plan(ctx.short)
    n = p["n"]
    res.params = {"nodes": n, "per node (perceived)": f"{CPUS} CPU, {RATE_MBIT} Mbit/s and {ONE_WAY_MS} ms each way",
                  "service": "nginx-light; curl fetches 16 KiB, 256 KiB, 1 MiB files from the other nodes in turn",
                  "fetches per node": p["fetches"], "runs": f"TDF 1 scale 1; TDF {n} scale {n}"
                  + (f"; {p['pairs']} pairs, alternating which goes first" if p["pairs"] > 1 else "")}
    stat = np.mean if p["stat"] == "mean" else np.median
    runs, diffs = {1: [], n: []}, []
    for i in range(p["pairs"]):
        pair = {}
        for tdf in (1, n) if i % 2 == 0 else (n, 1):
            ctx.log(f"   " + (f"pair {i + 1} of {p['pairs']}, " if p["pairs"] > 1 else "")
                    + f"TDF {tdf}: {n} nodes, {p['fetches']} fetches each")
            pair[tdf] = swarm(ctx, tdf, p, i)
            runs[tdf].append(pair[tdf])
            ctx.log(f"   -> median {fmt(np.median(pair[tdf][0]) * 1e3)} ms, mean {fmt(np.mean(pair[tdf][0]) * 1e3)} ms "
                    f"over {len(pair[tdf][0])} fetches")
        diffs.append(stats.rel_diff(stat(pair[n][0]), stat(pair[1][0])))
    # every pair's fetches together, for the KS test, the table and the plot
    got = {tdf: tuple(np.concatenate(x) for x in zip(*r)) for tdf, r in runs.items()}
    (t1, s1), (tn, sn) = got[1], got[n]
    d = float(np.median(diffs))
    res.check(f"{p['stat']} completion time, TDF {n} vs TDF 1"
              + (f", median of {len(diffs)} pairs ({', '.join(pct(x) for x in diffs)})" if len(diffs) > 1 else ""),
              pct(d), abs(d) <= p["tol"], f"±{p['tol'] * 100:.0f}%")
    D, pv = stats.ks(tn, t1)
    if p["ks"]:
        res.check(f"KS test TDF {n} vs TDF 1 (D = {fmt(D)})", f"p = {fmt(pv)}", pv > 0.05, "p > 0.05")
    rows = []
    for name, size in SIZES.items():
        a, b = t1[s1 == size] * 1e3, tn[sn == size] * 1e3
        if a.size and b.size:
            rows.append([name, a.size, np.median(a), np.median(b), pct(stats.rel_diff(np.median(b), np.median(a))),
                         np.percentile(a, 90), np.percentile(b, 90)])
    res.table("Completion time per file size (ms, perceived)",
              ["file", "fetches", "median TDF 1", f"median TDF {n}", "difference", "p90 TDF 1",
               f"p90 TDF {n}"], rows)
    res.csv("fetches", ["tdf", "size_bytes", "seconds"],
            [[1, s, t] for s, t in zip(s1, t1)] + [[n, s, t] for s, t in zip(sn, tn)])
    fig = res.figure("cdf", f"Fetch completion time, {n} nodes (perceived)", "completion time (ms, perceived)",
                     "CDF", xlog=True)
    for tdf, (t, _) in got.items():
        fig.cdf(t * 1e3, f"TDF {tdf}" + (" (full resources)" if tdf == 1 else f" (1/{n} each)"))
