# shellcheck shell=bash
# run_suite NAME TIMEOUT CMD...: run one test suite with a timeout, stream its
# output, and write $RES/NAME.log (raw) and $RES/NAME.tap (normalized TAP, see
# tests/lib/tap.py). NAME must be a file-name-safe string. Needs RES and
# TDC_ROOT set. Never fails (a failing suite is a result, not an error).
TAP_PY=${TDC_ROOT:?}/tests/lib/tap.py

suite_timeout() { # suite_timeout FILE DEFAULT: "# tdc-timeout: N" in the first 20 lines
	local t
	t=$(head -20 "$1" 2>/dev/null | tr -d '\0' | sed -n 's/^[#/ *]*tdc-timeout:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -1)
	echo "${t:-$2}"
}

run_suite() {
	local name=$1 secs=$2 rc=0 t0 t1
	shift 2
	# a slower kernel (the debug kernel: KASAN, lockdep) scales every timeout
	secs=$((secs * ${TDC_TIMEOUT_SCALE:-1}))
	echo "=== $name (timeout ${secs}s)"
	t0=$(date +%s)
	# own process group via timeout; stdin closed; stderr interleaved. The
	# status is the suite's (timeout's), read right after the pipeline, with or
	# without pipefail or -e in the caller ("pipeline || true" followed by
	# PIPESTATUS once read true's status, and every failing host suite passed).
	{ timeout -k 5 "$secs" "$@" </dev/null 2>&1 | tee "$RES/$name.log"; rc=${PIPESTATUS[0]}; } || true
	t1=$(date +%s)
	# A normalizer that crashes leaves no .tap: the summary counts that suite
	# as failed (it is in the expected list), never as 0 of 0.
	python3 "$TAP_PY" normalize "$name" "$rc" "$RES/$name.log" > "$RES/$name.tap.tmp" &&
		mv "$RES/$name.tap.tmp" "$RES/$name.tap"
	echo "=== $name: exit $rc, $((t1 - t0)) s"
}

# add_result NAME pass|fail|skip DESC: a one-point suite without running anything
add_result() {
	local f=$RES/$1.tap
	case $2 in
	pass) printf 'TAP version 13\n1..1\nok 1 %s\n' "$3" > "$f" ;;
	skip) printf 'TAP version 13\n1..1\nok 1 %s # SKIP\n' "$3" > "$f" ;;
	*)    printf 'TAP version 13\n1..1\nnot ok 1 %s\n' "$3" > "$f" ;;
	esac
	echo "=== $1: $2: $3"
}
