#!/bin/bash
# A Python program in a dilated time namespace (TDF 10), run by
# tests/programs/bin/tdfrun: time.sleep, threading.Event.wait, asyncio.sleep
# of 0.2 s each, measured on time.monotonic / perf_counter / loop.time (in
# [0.2, 0.4) s; time.time must agree with time.monotonic), each phase 2 s of
# host time (tdfrun: in [1.999, 3.0] s).  Source: tests/programs/sleep_prog.py.
# Skipped without root, the dilation interface, tdfrun or python3.
# tdc-timeout: 90
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/programs/run.sh"
programs_init
PY=
for c in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
	if [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import asyncio' 2>/dev/null; then PY=$c; break; fi
done
if [ -n "$PY" ]; then
	run_program python 10 45 "$PY" "$ROOT/tests/programs/sleep_prog.py"
else
	skip_program python "no python3"
fi
programs_finish
