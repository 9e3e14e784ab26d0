# TAP helpers for the bash test scripts (sourced).
#   tap_plan N        print the header and the plan
#   ok NAME           a passing point
#   notok NAME [DETAIL]   a failing point, with up to 20 lines of DETAIL as comments
#   skip NAME REASON  a skipped point
#   note TEXT         a comment line
#   check NAME CMD... ok when CMD succeeds, else notok with its output
#   skip_rest REASON  skip every point left in the plan and exit 0
TAP_N=0
TAP_TOTAL=${TAP_TOTAL:-0}

tap_plan() { TAP_TOTAL=$1; echo "TAP version 13"; echo "1..$1"; }
ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1"; }
notok() {
	TAP_N=$((TAP_N + 1)); echo "not ok $TAP_N - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | head -20 | sed 's/^/# /'
	return 0
}
skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
note() { echo "# $*"; }
check() {
	local out
	if out=$("${@:2}" 2>&1); then ok "$1"; else notok "$1" "$out"; fi
}
skip_rest() {
	while [ "$TAP_N" -lt "$TAP_TOTAL" ]; do skip "${SKIP_REST_NAME:-remaining test}" "$1"; done
	exit 0
}
