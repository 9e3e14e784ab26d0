"""Network measurement helpers: waiting for servers, packet capture, iperf3."""
import contextlib
import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

SOFTNET_STAT = Path("/proc/net/softnet_stat")
MAX_BACKLOG = Path("/proc/sys/net/core/netdev_max_backlog")
PROC_STAT = Path("/proc/stat")


def wait_listen(node, port, timeout=60):
    """Wait (host time) until node has a TCP socket listening on port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(rf":{port}\b", node.nsenter("ss", "-Hltn", check=False).stdout):
            return
        if node.proc.poll() is not None:
            raise RuntimeError(f"node {node.name} exited before listening on {port}: {node.stderr()[-300:]}")
        time.sleep(0.05)
    raise RuntimeError(f"node {node.name}: nothing listening on {port} after {timeout} s")


def quickack(node):
    """ACK every segment at once on node's routes (ip route ... quickack 1).
    TCP's delayed-ACK timer (40 ms and up) runs in host time, so dilated it
    would last TDF times less perceived time; runs compared across TDFs
    turn it off at every TDF alike."""
    for route in node.nsenter("ip", "-o", "route", "show").stdout.splitlines():
        # ip prints a locked rto_min as "rto_min lock T" but only parses
        # "rto_min T" (which it always locks)
        node.nsenter("ip", "route", "change", *route.replace("rto_min lock ", "rto_min ").split(),
                     "quickack", "1")


def backlog_drops(path=SOFTNET_STAT):
    """Packets the kernel dropped so far because a CPU's input backlog was
    full (net.core.netdev_max_backlog), summed over the CPUs: the second
    (hex) column of /proc/net/softnet_stat. Every packet a veth passes on
    waits in that backlog, so on a bridge of many nodes this is where the
    host's own load, not a netem profile, loses packets."""
    return sum(int(line.split()[1], 16) for line in Path(path).read_text().splitlines() if line.strip())


@contextlib.contextmanager
def backlog_at_least(packets, path=MAX_BACKLOG):
    """net.core.netdev_max_backlog raised to at least packets while the
    block runs, then put back (it is global, not per network namespace)."""
    before = int(Path(path).read_text())
    if packets > before:
        Path(path).write_text(f"{packets}\n")
    try:
        yield
    finally:
        if packets > before:
            Path(path).write_text(f"{before}\n")


def cpu_ticks(path=PROC_STAT):
    """(busy, all): the clock ticks the CPUs have spent since boot, summed
    over the CPUs, from the first line of /proc/stat (user, nice, system,
    idle, iowait, irq, softirq, steal; guest time is inside user). Idle and
    iowait are not busy."""
    f = [int(x) for x in Path(path).read_text().split("\n", 1)[0].split()[1:9]]
    return sum(f) - f[3] - f[4], sum(f)


@contextlib.contextmanager
def cpu_load(period=1.0, full=0.95, path=PROC_STAT):
    """The CPUs' load while the block runs, in the dict it yields, filled in
    when the block ends: "busy", the share of CPU time not idle (None if no
    tick passed); "periods", the periods of `period` host seconds sampled
    (the last one may be shorter); "full_periods", those in which the CPUs
    were at least `full` busy. A dilated batch needs its CPUs in host time:
    while they are full, every node's packets wait for a CPU at once, and at
    TDF 100 a host second of that is 10 ms of the nodes' time."""
    out = {}
    samples = [cpu_ticks(path)]
    stop = threading.Event()

    def sample():
        while not stop.wait(period):
            samples.append(cpu_ticks(path))

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield out
    finally:
        stop.set()
        t.join()
        samples.append(cpu_ticks(path))
        steps = [(b1 - b0, a1 - a0) for (b0, a0), (b1, a1) in zip(samples, samples[1:])]
        busy, ticks = samples[-1][0] - samples[0][0], samples[-1][1] - samples[0][1]
        out.update(busy=busy / ticks if ticks else None, periods=len(steps),
                   full_periods=sum(1 for b, a in steps if a and b >= full * a))


# TcpExt counters a run records of its sender: how its losses were repaired
# (RTO, fast recovery, tail loss probe) and whether an RTO was spurious
SENDER_EVENTS = ("TCPTimeouts", "TCPSpuriousRTOs", "TCPLossProbes", "TCPSackRecovery", "TCPRenoRecovery",
                 "TCPFastRetrans", "TCPSlowStartRetrans", "TCPLostRetransmit")


def tcp_ext(text):
    """{name: value} of the TcpExt lines of a /proc/net/netstat text (a name
    line, then a value line)."""
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("TcpExt:")]
    if len(rows) != 2 or len(rows[0]) != len(rows[1]):
        raise ValueError("no TcpExt name and value lines in /proc/net/netstat")
    return {k: int(v) for k, v in zip(rows[0][1:], rows[1][1:])}


def qdisc_drops(text):
    """Packets the qdiscs of a `tc -s qdisc show` text dropped, summed: for
    netem its random loss and its queue limit's drops together."""
    return sum(int(n) for n in re.findall(r"\(dropped (\d+),", text))


def sender_events(node, dev="eth0"):
    """SENDER_EVENTS of node's network namespace (its TcpExt counters, fresh
    with the namespace) and its qdiscs' drops on dev."""
    ext = tcp_ext(node.nsenter("cat", "/proc/net/netstat").stdout)
    out = {k: ext.get(k, 0) for k in SENDER_EVENTS}
    out["qdisc_drops"] = qdisc_drops(node.nsenter("tc", "-s", "qdisc", "show", "dev", dev).stdout)
    return out


def deterministic_loss(node, every, dev="eth0"):
    """Drop every Nth IP packet arriving at node (tc gact 'random determ'): the
    same packets are lost at every TDF, unlike netem's random loss."""
    node.nsenter("tc", "qdisc", "add", "dev", dev, "clsact")
    node.nsenter("tc", "filter", "add", "dev", dev, "ingress", "protocol", "ip", "matchall",
                 "action", "gact", "pass", "random", "determ", "drop", str(every))


def wait_drained(node, dev="eth0", timeout=120):
    """Wait (host time) until node has nothing left to send: no connected TCP
    socket with queued data (closed ones included; `ss` leaves out listening
    sockets, whose Send-Q is their backlog) and an empty qdisc on dev."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sendq = sum(int(f.split()[2]) for f in node.nsenter("ss", "-Htn", check=False).stdout.splitlines()
                    if len(f.split()) > 2)
        backlog = re.findall(r"backlog \S+ (\d+)p", node.nsenter("tc", "-s", "qdisc", "show", "dev", dev).stdout)
        if sendq == 0 and not any(int(b) for b in backlog):
            return
        time.sleep(0.1)
    raise RuntimeError(f"node {node.name}: still sending after {timeout} s")


class Capture:
    """tcpdump on a node's interface, run from the host side (host time):
    pcap timestamps are the host clock, converted to the node's perceived time
    with the TDF by the caller (perceived interval = host interval / TDF, the
    slope of the namespace's affine map)."""

    def __init__(self, node, path, dev="eth0", filt="tcp"):
        self.path = path
        self.proc = node.popen_nsenter("tcpdump", "-i", dev, "-n", "-s", "128", "-U", "--immediate-mode", "-w", path,
                                       "-Q", "out", filt, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()  # "listening on eth0, ..." once it captures
        if "listening" not in line:
            self.proc.kill()
            raise RuntimeError(f"tcpdump did not start: {line.strip()}")

    def stop(self):
        time.sleep(0.2)  # let the last packets reach the file (-U)
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)

    def data_packets(self, src_addr):
        """Host timestamps (s) of the packets with payload sent from src_addr on
        its busiest connection (the data flow, not iperf3's control one)."""
        out = subprocess.run(["tcpdump", "-r", self.path, "-tt", "-n", "-q"], capture_output=True,
                             text=True, check=True).stdout
        flows = {}
        pat = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > \S+: tcp (\d+)$")
        for ln in out.splitlines():
            m = pat.match(ln)
            if m and m.group(2) == src_addr and int(m.group(4)) > 0:
                flows.setdefault(m.group(3), []).append(float(m.group(1)))
        return max(flows.values(), key=len) if flows else []


def iperf3_json(text):
    """The JSON document iperf3 -J printed (ignoring anything before it)."""
    i = text.find("{")
    if i < 0:
        raise RuntimeError(f"no iperf3 JSON in output: {text.strip()[-200:]}")
    d = json.JSONDecoder().raw_decode(text[i:])[0]
    if d.get("error"):
        raise RuntimeError(f"iperf3: {d['error']}")
    return d

