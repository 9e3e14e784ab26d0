#!/bin/bash
# Bounded native Go fuzzing of every parser that takes user input: the factor
# parser (tools/scaling), netem profiles
# (tools/profile), --disk specs and their io.max scaling (tools/node), the OCI annotations and the
# precreate config filter (runtime-hooks/tdfhook). One point per target:
# `go test -fuzz` for TDC_FUZZTIME (default 6s) on one worker; a target that
# fails leaves its input in PKG/testdata/fuzz/TARGET/ (commit it with the
# fix: the seeds run in every plain `go test`). A target that ran no input
# at all is a failure too, not a pass. The properties each target asserts
# are in its *_fuzz_test.go.
# tdc-timeout: 240
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/lib/tap.sh"
FT=${TDC_FUZZTIME:-6s}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
targets=(
	"tools ./scaling FuzzParseFactor"
	"tools ./profile FuzzParse"
	"tools ./node FuzzParseDisk"
	"runtime-hooks ./tdfhook FuzzParse"
	"runtime-hooks ./tdfhook FuzzPrecreate"
)
tap_plan ${#targets[@]}
if ! command -v go >/dev/null; then
	for t in "${targets[@]}"; do notok "$t" "go is not installed"; done
	exit 0
fi
for t in "${targets[@]}"; do
	set -- $t
	mod=$1 pkg=$2 fn=$3
	start=$SECONDS
	(cd "$ROOT/$mod" && timeout -k 5 120 go test -run '^$' -fuzz "^$fn\$" -fuzztime "$FT" -parallel 1 "$pkg") >"$T/out" 2>&1
	rc=$?
	execs=$(grep -o 'execs: [0-9]*' "$T/out" | tail -1 | awk '{print $2}')
	name="$mod/${pkg#./} $fn: ${execs:-0} inputs in $((SECONDS - start)) s"
	if [ $rc = 0 ] && [ "${execs:-0}" -gt 0 ]; then ok "$name"
	else notok "$name (rc $rc)" "$(grep -v '^fuzz: elapsed' "$T/out" | tail -20)"; fi
done
exit 0
