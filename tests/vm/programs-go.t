#!/bin/bash
# A static Go program (CGO_ENABLED=0, built on the host by
# make -C tests/programs build) in a dilated time namespace (TDF 10), run by
# tests/programs/bin/tdfrun: time.Sleep 200 ms, a time.Ticker of 50 ms for 4
# ticks, a time.Timer of 200 ms, measured with time.Since (in [D, 2D); the
# wall clock must agree with the monotonic one), each phase D x 10 of host
# time (tdfrun: in [10 D - 1 ms, 12.5 D + 500 ms]).  Source:
# tests/programs/go/.  Skipped without root, the dilation interface, or when
# go was not installed at build time.
# tdc-timeout: 90
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/programs/run.sh"
programs_init
if [ -x "$PBIN/go_sleep" ]; then
	run_program go 10 45 "$PBIN/go_sleep"
elif [ -e "$PBIN/go.missing" ]; then
	skip_program go "go was not installed when tests/programs was built"
else
	skip_program go "tests/programs/bin/go_sleep not built (make -C tests/programs build)"
fi
programs_finish
