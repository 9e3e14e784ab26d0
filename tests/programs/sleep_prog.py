#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Python in a dilated time namespace: time.sleep, threading.Event.wait,
asyncio.sleep, each measured on the program's own clocks (time.monotonic,
time.perf_counter, time.time) and bracketed by MARK lines for tdfrun's
host-time check (protocol: tests/programs/tdfprog.h)."""
import asyncio
import os
import sys
import threading
import time

D = 0.2
nchecks = 0
nfailed = 0


def check(ok, name, details):
    global nchecks, nfailed
    nchecks += 1
    nfailed += not ok
    print(f"CHECK {'ok' if ok else 'fail'} {name}: {details}", flush=True)


def check_sleep(name, clk, got, want, early=0.0):
    check(want - early <= got < 2 * want, name,
          f"{clk} elapsed {got * 1e3:.3f} ms for {want * 1e3:.3f} ms (in [{want * 1e3:.0f}, {2 * want * 1e3:.0f}) ms)")


def mark(what, name, ns=None):
    print(f"MARK {what} {name}" + (f" {ns}" if ns is not None else ""), flush=True)
    if what == "begin" and os.environ.get("TDFRUN_ACK") == "1":
        sys.stdin.readline()  # tdfrun stamped the begin: start


mark("begin", "time.sleep", int(D * 1e9))
m0, p0, w0 = time.monotonic(), time.perf_counter(), time.time()
time.sleep(D)
m1, p1, w1 = time.monotonic(), time.perf_counter(), time.time()
mark("end", "time.sleep")
check_sleep("python time.sleep 0.2", "time.monotonic", m1 - m0, D)
check_sleep("python time.sleep 0.2 (perf_counter)", "time.perf_counter", p1 - p0, D)
check(abs((w1 - w0) - (m1 - m0)) < 0.005, "python time.time agrees with time.monotonic",
      f"time {(w1 - w0) * 1e3:.3f} ms, monotonic {(m1 - m0) * 1e3:.3f} ms")

ev = threading.Event()
mark("begin", "Event.wait", int(D * 1e9))
m0 = time.monotonic()
r = ev.wait(D)
m1 = time.monotonic()
mark("end", "Event.wait")
check(r is False, "python threading.Event.wait times out", f"returned {r}")
check_sleep("python threading.Event.wait 0.2", "time.monotonic", m1 - m0, D)


async def main():
    loop = asyncio.get_running_loop()
    mark("begin", "asyncio.sleep", int(D * 1e9))
    l0, m0 = loop.time(), time.monotonic()
    await asyncio.sleep(D)
    l1, m1 = loop.time(), time.monotonic()
    mark("end", "asyncio.sleep")
    # asyncio runs a timer up to the clock's resolution (1 ns) early: 1 us of float slack
    check_sleep("python asyncio.sleep 0.2", "loop.time", l1 - l0, D, 1e-6)
    check_sleep("python asyncio.sleep 0.2 (monotonic)", "time.monotonic", m1 - m0, D, 1e-6)

asyncio.run(main())
print(f"DONE {nchecks}", flush=True)
sys.exit(1 if nfailed else 0)
