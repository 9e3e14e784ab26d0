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
# Go's fuzzing coordinator before go1.27 can fail a run whose -fuzztime ran out
# while a worker was mid-call, with a bare "context deadline exceeded" and no
# input (go.dev/issue/75804, fixed in go1.27; seen here once in 3 clean runs, on
# go1.26.8). That is its shutdown, not a finding: taken as a pass only with
# exactly that failure, no failing input written, a toolchain older than go1.27,
# and the target's committed corpus replaying clean.
coordinator_deadline_race() { # coordinator_deadline_race MOD PKG FN OUT CORPUS_BEFORE
	local v
	grep -qx '    context deadline exceeded' "$4" || return 1
	[ "$(grep -c '^--- FAIL' "$4")" = 1 ] || return 1
	! grep -q 'Failing input written' "$4" || return 1
	[ "$(corpus_files "$1" "$2" "$3")" = "$5" ] || return 1
	v=$(cd "$ROOT/$1" && go env GOVERSION) || return 1
	[ "$(printf '%s\n%s\n' "${v#go}" 1.27 | sort -V | head -1)" != 1.27 ] || return 1
	(cd "$ROOT/$1" && go test -run "^$3\$" "$2") >"$4.replay" 2>&1
}
corpus_files() { # corpus_files MOD PKG FN: the committed and new inputs of a target
	ls "$ROOT/$1/${2#./}/testdata/fuzz/$3" 2>/dev/null
}
for t in "${targets[@]}"; do
	set -- $t
	mod=$1 pkg=$2 fn=$3
	start=$SECONDS
	before=$(corpus_files "$mod" "$pkg" "$fn")
	(cd "$ROOT/$mod" && timeout -k 5 120 go test -run '^$' -fuzz "^$fn\$" -fuzztime "$FT" -parallel 1 "$pkg") >"$T/out" 2>&1
	rc=$?
	execs=$(grep -o 'execs: [0-9]*' "$T/out" | tail -1 | awk '{print $2}')
	name="$mod/${pkg#./} $fn: ${execs:-0} inputs in $((SECONDS - start)) s"
	if [ $rc = 0 ] && [ "${execs:-0}" -gt 0 ]; then ok "$name"
	elif [ $rc = 1 ] && [ "${execs:-0}" -gt 0 ] &&
	     coordinator_deadline_race "$mod" "$pkg" "$fn" "$T/out" "$before"; then
		ok "$name (the coordinator's deadline race of go.dev/issue/75804 at the end; no failing input, the corpus replays clean)"
	else notok "$name (rc $rc)" "$(grep -v '^fuzz: elapsed' "$T/out" | tail -20)"; fi
done
exit 0
