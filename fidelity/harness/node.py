"""Dilated nodes for the experiments: `dilated-node run` in the background.

Every experiment builds its testbed from tools/bin/dilated-node, the same tool
users run, so the scaling rules exercised here are the shipped ones
(tools/scaling). A node's command is wrapped so that it first writes its pid
(the process inside the node's namespaces, for nsenter) and then, for nodes
started with hold=True, blocks reading a FIFO until go() is called. Blocking on
a FIFO involves no timer, so holding a node costs no dilated time, and several
nodes can be released together.
"""
import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DILATED_NODE = ROOT / "tools" / "bin" / "dilated-node"

# sh -c WRAPPER sh PIDFILE GOFIFO RCFILE CMD...: GOFIFO "-": do not wait;
# RCFILE "-": exec CMD, else run it, write its exit status there and linger
WRAPPER = ('echo $$ > "$1"; [ "$2" = - ] || read _ < "$2"; rcf=$3; shift 3; '
           '[ "$rcf" = - ] && exec "$@"; "$@"; echo $? > "$rcf"; exec sleep infinity')


class NodeError(RuntimeError):
    pass


def make_gate(path):
    """A FIFO that a node's command blocks on (read _ < FIFO) until
    open_gate(): waiting on it takes no timer, so it costs no dilated time."""
    if os.path.exists(path):
        os.unlink(path)
    os.mkfifo(path)


def open_gate(path):
    with open(path, "w") as f:
        f.write("go\n")


def _fmt(v):
    return v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v)


class Node:
    """One dilated node. Options mirror `dilated-node run` (see its --help).
    hold: cmd waits for go(). linger: when cmd ends the node stays up (its
    namespaces, interfaces and anything cmd left running, e.g. a server the
    other nodes use, or TCP segments still queued) until stop(); wait()
    returns cmd's exit status."""

    def __init__(self, work, name, tdf, cmd, *, profile=None, cpus=None, scale=None, cpu_period=None,
                 disk=None, addr=None, subnet=None, no_net=False, rto_min=False, hold=False, linger=False):
        self.name, self.tdf, self.work = name, tdf, Path(work)
        self.pidfile = self.work / f"{name}.pid"
        self.gofifo = self.work / f"{name}.go" if hold else None
        self.rcfile = self.work / f"{name}.rc" if linger else None
        self.outfile = self.work / f"{name}.out"
        self.errfile = self.work / f"{name}.err"
        for f in (self.pidfile, self.rcfile):
            if f is not None and f.exists():
                f.unlink()
        if hold:
            make_gate(self.gofifo)
        args = [str(DILATED_NODE), "run", "--quiet", "--name", name, "--tdf", _fmt(tdf)]
        for flag, val in (("--profile", profile), ("--cpus", cpus), ("--scale", scale), ("--cpu-period", cpu_period),
                          ("--disk", disk), ("--addr", addr), ("--subnet", subnet)):
            if val is not None:
                args += [flag, _fmt(val)]
        if no_net:
            args.append("--no-net")
        if rto_min:  # TCP's 200 ms RTO floor, perceived: x TDF on the node's routes
            args.append("--rto-min")
        args += ["--", "sh", "-c", WRAPPER, "sh", str(self.pidfile),
                 str(self.gofifo) if hold else "-", str(self.rcfile) if linger else "-"] + [str(c) for c in cmd]
        self.args = args
        env = dict(os.environ, DILATED_NODE_PROFILES=str(ROOT / "netem-profiles"))
        with open(self.outfile, "w") as out, open(self.errfile, "w") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, env=env, start_new_session=True)
        self.inner = None
        self._wait_ready()

    def _wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pidfile.exists() and self.pidfile.read_text().strip():
                self.inner = int(self.pidfile.read_text())
                return
            if self.proc.poll() is not None:
                raise NodeError(f"node {self.name} did not start: {self.stderr().strip()[-300:]}")
            time.sleep(0.05)
        self.stop()
        raise NodeError(f"node {self.name}: not ready after {timeout} s")

    def go(self):
        """Release a node started with hold=True."""
        open_gate(self.gofifo)

    def wait(self, timeout):
        """Wait for the node's command to finish (host seconds); its exit status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.rcfile is not None and self.rcfile.exists() and self.rcfile.read_text().strip():
                return int(self.rcfile.read_text())
            if self.proc.poll() is not None:
                return self.proc.returncode
            time.sleep(0.1)
        self.stop()
        raise NodeError(f"node {self.name}: still running after {timeout} s (host time), stopped")

    def stdout(self):
        return self.outfile.read_text(errors="replace")

    def stderr(self):
        return self.errfile.read_text(errors="replace")

    def nsenter(self, *cmd, check=True, **kw):
        """Run cmd in the node's network namespace, in host time (no -T):
        for tc, tcpdump and other tools that configure or watch the node."""
        return subprocess.run(["nsenter", "-t", str(self.inner), "-n"] + [str(c) for c in cmd],
                              check=check, capture_output=True, text=True, **kw)

    def popen_nsenter(self, *cmd, **kw):
        return subprocess.Popen(["nsenter", "-t", str(self.inner), "-n"] + [str(c) for c in cmd], **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                cleanup(self.name)


def cleanup(name=None):
    """Remove what a killed node left behind (interfaces, cgroup, bridge)."""
    args = [str(DILATED_NODE), "cleanup"] + (["--name", name] if name else [])
    subprocess.run(args, capture_output=True)


class Testbed:
    """Nodes that are stopped together, whatever happens:

        with Testbed(work) as tb:
            srv = tb.node("srv", 10, ["iperf3", "-s", "-1"])
    """

    def __init__(self, work):
        self.work, self.nodes = Path(work), []
        self.work.mkdir(parents=True, exist_ok=True)

    def node(self, name, tdf, cmd, **kw):
        n = Node(self.work, name, tdf, cmd, **kw)
        self.nodes.append(n)
        return n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for n in reversed(self.nodes):
            n.stop()
        cleanup()
        return False


def write_profile(path, description, *, rate=None, delay=None, jitter=None, limit=None, loss=None, up=None,
                  down=None):
    """A netem profile (the netem-profiles/ TOML format) of the link as the
    node should perceive it; up/down: per-direction overrides (dicts, e.g.
    {"seed": 7}: netem's random number generator seed of that direction)."""
    def table(d):
        return "".join(f'{k} = {v if isinstance(v, int) else chr(34) + str(v) + chr(34)}\n'
                       for k, v in d.items() if v is not None)
    text = f'description = "{description}"\n\n[link]\n'
    text += table({"rate": rate, "delay": delay, "jitter": jitter, "limit": limit, "loss": loss})
    for name, d in (("up", up), ("down", down)):
        if d:
            text += f"\n[{name}]\n" + table(d)
    Path(path).write_text(text)
    return str(path)
