#!/bin/bash
# In-VM smoke test of bench/faketime (our dilated vDSO against libfaketime):
# that the benchmark runs and that the "dilated at all" matrix says what it
# must, not the cost figures.  Points: every mechanism has a cost figure; the
# benchmarked clocks run at the expected rates (dilated and both libfaketime
# variants 1/10, root and offset-only 1: [0.8, 1.25] x, as the short batches
# leave pipe latency in the interval); then the six cells of the matrix: our
# TDF-10 time namespace dilates a dynamic C, a static C and a Go binary;
# libfaketime (LD_PRELOAD) dilates the dynamic C binary and neither the
# static C nor the Go one (no libc to interpose).
# tdc-timeout: 180
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
N=8
echo "TAP version 13"
echo "1..$N"
fail_all() {
	for i in $(seq 1 $N); do echo "not ok $i bench-faketime: $1"; done
	exit 1
}
[ "$(id -u)" = 0 ] || fail_all "needs root"
[ -e /proc/self/timens_dilation ] || fail_all "kernel without timens_dilation"
[ -r /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || fail_all "libfaketime not installed"
out=$("$ROOT/bench/faketime/run" -n 20000 -r 5 -s 2 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
get() { # get KIND MATCH KEY: KEY of the first "result KIND" line containing MATCH
	echo "$out" | awk -v k="result $1 " -v m=" $2 " -v key="$3" 'index($0, k) == 1 && index($0 " ", m) {
		for (i = 3; i <= NF; i++) { split($i, a, "="); if (a[1] == key) print a[2] } }' | head -1
}
num() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }

ok=1 figs=
for m in root offset dilated faketime faketime-nocache; do
	v=$(get cost "mech=$m" ns_per_call)
	num "$v" && awk -v v="$v" 'BEGIN { exit !(v > 0) }' || ok=
	figs="$figs $m=$v"
done
[ $rc = 0 ] && [ -n "$ok" ] &&
	echo "ok 1 bench/faketime/run completes, ns/call:$figs" ||
	echo "not ok 1 bench/faketime/run: exit $rc, ns/call:$figs"

ok=1 figs=
for m in root offset dilated faketime faketime-nocache; do
	v=$(get cost "mech=$m" rate)
	case $m in root|offset) want=1 ;; *) want=0.1 ;; esac
	num "$v" && awk -v v="$v" -v w="$want" 'BEGIN { exit !(v >= 0.8 * w && v <= 1.25 * w) }' || ok=
	figs="$figs $m=$v"
done
[ -n "$ok" ] &&
	echo "ok 2 benchmarked clocks at their rates (dilated, libfaketime 0.1; root, offset 1):$figs" ||
	echo "not ok 2 benchmarked clocks' rates:$figs (want 0.1 for dilated and libfaketime, 1 for root and offset)"

n=2
for cell in "dilated dynamic-c yes" "dilated static-c yes" "dilated go yes" \
	"faketime dynamic-c yes" "faketime static-c no" "faketime go no"; do
	set -- $cell
	n=$((n + 1))
	line=$(echo "$out" | grep "^result matrix mech=$1 prog=$2 " | head -1)
	got=$(get matrix "mech=$1 prog=$2" dilated)
	if [ "$got" = "$3" ]; then
		echo "ok $n $1: $2 binary dilated: $3 (${line#result matrix })"
	else
		echo "not ok $n $1: $2 binary dilated: want $3, got '${got}' (${line#result matrix })"
	fi
done
