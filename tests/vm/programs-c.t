#!/bin/bash
# Whole C programs in a dilated time namespace (TDF 10), run by
# tests/programs/bin/tdfrun: a static binary (gcc -static: nanosleep,
# clock_nanosleep TIMER_ABSTIME, select) and a glibc program with threads
# (pthread_cond_timedwait, nanosleep and pthread_cond_clockwait in two
# threads at once).  Each sleep of D (200 ms, 100 ms for select) must measure
# [D, 2D) on the program's own clocks, and tdfrun checks each sleep phase
# lasted D x 10 of host time (in [10 D - 1 ms, 12.5 D + 500 ms]).  Sources in
# tests/programs/ (make -C tests/programs build).  Skipped without root, the
# dilation interface or the build.
# tdc-timeout: 90
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/programs/run.sh"
programs_init
for p in c_static c_pthread; do
	if [ -x "$PBIN/$p" ]; then
		run_program "$p" 10 30 "$PBIN/$p"
	else
		skip_program "$p" "tests/programs/bin/$p not built"
	fi
done
programs_finish
