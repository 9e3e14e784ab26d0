#!/bin/bash
# In-VM TAP test of `unshare --time-dilation` (build/bin/unshare, built by
# util-linux/build.sh): help text, option checks and error messages.
# Run as root: scripts/vm -- tests/vm/unshare-basic.t
#
# Everything is skipped when build/bin/unshare is missing. The option
# parsing checks need no kernel support and run on any kernel; the error
# paths of the kernel interface (missing /proc/self/timens_dilation, EINVAL,
# EPERM) run on the kernel that has (or lacks) what they need, the others
# are skipped with the reason.
# tdc-timeout: 120
set -u
export LC_ALL=C
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
U=${UNSHARE:-$ROOT/build/bin/unshare}

INVALID=(0 0.0 00 0/5 1/0 -1 +2 abc '' ' 2' '2 ' 2. .5 1e3 0x10 '2,5' 5/2/1 1/2.5
	1.0000000001 inf nan)
OUT_OF_RANGE=(5000 1001 1000.000000001 0.0001 1/1001 1000000001/1 999999999/999999)
N=$((6 + ${#INVALID[@]} + ${#OUT_OF_RANGE[@]}))

echo "TAP version 13"
echo "1..$N"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do printf '%s\n' "$l" | sed 's/^/# /'; done; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
skip_rest() { while [ $n -lt $N ]; do skip "${2:-unshare test}" "$1"; done; exit 0; }

if [ ! -x "$U" ]; then
	skip_rest "$U not built (run util-linux/build.sh)" unshare-basic
fi
if [ "$(id -u)" != 0 ]; then
	skip_rest "needs root (run it in the VM: scripts/vm -- $0)" unshare-basic
fi

# expect_fail DESC PATTERN ARGS...: unshare ARGS... must exit 1 with exactly
# one line on stderr matching PATTERN (grep -E), nothing on stdout, and must
# not run its program
expect_fail() {
	local desc=$1 pat=$2 rc=0 out err
	shift 2
	out=$(mktemp) err=$(mktemp)
	"$U" "$@" >"$out" 2>"$err" || rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -Eq -- "$pat" "$err" && [ ! -s "$out" ]; then
		ok "$desc: $(cat "$err")"
	else
		notok "$desc" "exit status $rc (want 1)" "stderr: $(cat "$err")" "stdout: $(cat "$out")" "want one stderr line matching: $pat"
	fi
	rm -f "$out" "$err"
}

# 1. help
if "$U" --help | grep -Eq -- '^ --time-dilation <factor> +set time dilation factor'; then
	ok "--help lists --time-dilation <factor>"
else
	notok "--help lists --time-dilation <factor>" "$("$U" --help 2>&1 | grep -i dilation)"
fi

# 2. --time-dilation without --time: refused, like --monotonic/--boottime
expect_fail "--time-dilation without --time is refused" \
	'^unshare: option --time-dilation requires unsharing of a time namespace \(-T\)$' \
	--time-dilation=10 --fork echo ran

# 3.. malformed factors, rejected before anything is unshared (no kernel needed)
for v in "${INVALID[@]}"; do
	expect_fail "malformed factor '$v' is rejected" \
		"^unshare: invalid time dilation factor '.*': expected a positive decimal" \
		--time --time-dilation="$v" --fork echo ran
done

# the rest needs time namespaces
if [ ! -e /proc/self/ns/time ]; then
	skip_rest "kernel without time namespaces (CONFIG_TIME_NS)" "kernel error paths"
fi

if [ -e /proc/self/timens_dilation ]; then
	skip "kernel without dilation support: clear error" "this kernel has /proc/self/timens_dilation"

	# out of the kernel's range [1/1000, 1000] (or past its precision):
	# well-formed, so the kernel's EINVAL is what is reported
	for v in "${OUT_OF_RANGE[@]}"; do
		expect_fail "factor $v: the kernel's EINVAL is reported" \
			"^unshare: time dilation factor $v is out of the range supported by the kernel$" \
			--time --time-dilation="$v" --fork echo ran
	done

	# EPERM: no CAP_SYS_TIME (dropped from the bounding set, so root's exec
	# of unshare does not get it back); CAP_SYS_ADMIN still allows unshare -T
	if command -v setpriv >/dev/null; then
		rc=0
		err=$(setpriv --bounding-set=-sys_time --inh-caps=-sys_time \
			"$U" --time --time-dilation=10 --fork echo ran 2>&1 >/dev/null) || rc=$?
		if [ $rc -eq 1 ] && [ "$err" = "unshare: failed to set time dilation factor 10: Operation not permitted" ]; then
			ok "without CAP_SYS_TIME the kernel's EPERM is reported: $err"
		else
			notok "without CAP_SYS_TIME the kernel's EPERM is reported" "exit status $rc (want 1)" "stderr: $err"
		fi
	else
		skip "without CAP_SYS_TIME the kernel's EPERM is reported" "no setpriv"
	fi
else
	expect_fail "kernel without dilation support: clear error" \
		'^unshare: time dilation is not supported by this kernel$' \
		--time --time-dilation=10 --fork echo ran
	for v in "${OUT_OF_RANGE[@]}"; do
		skip "factor $v: the kernel's EINVAL is reported" "kernel without /proc/self/timens_dilation"
	done
	skip "without CAP_SYS_TIME the kernel's EPERM is reported" "kernel without /proc/self/timens_dilation"
fi

# --monotonic/--boottime still work, and still require --time
expect_fail "--monotonic without --time is still refused" \
	'^unshare: options --monotonic and --boottime require unsharing of a time namespace' \
	--monotonic=10 --fork echo ran
up=$("$U" --time --boottime=86400 --fork cat /proc/uptime 2>&1 | cut -d' ' -f1)
if awk -v u="$up" 'BEGIN { exit !(u + 0 >= 86400) }'; then
	ok "--boottime 86400 without --time-dilation still works (uptime $up)"
else
	notok "--boottime 86400 without --time-dilation still works" "uptime: $up"
fi

[ $n -eq $N ] || { echo "# internal error: ran $n of $N points"; exit 1; }
