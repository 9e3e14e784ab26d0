#!/bin/bash
# In-VM smoke test of the scale benchmark (bench/scale): that it runs, not its
# figures.  Ten dilated (TDF 10) and ten offset-only time namespaces, each
# with a process on a 10 ms CLOCK_MONOTONIC timer: every run completes, every
# namespace's timer fired in the window, the lateness percentiles and the
# memory, CPU and rate figures are there, no timer woke before its deadline,
# and the dilated timers fire 1/10 as often in host time (expiries seen in
# the window against PERIOD x TDF of host time: [0.8, 1.05]; a kernel that
# ignores the factor fires ten times as often, one that squares it a tenth).
# About 25 s under TCG with build/bench-scale/timens_scale built on the host
# (make -C bench/scale); 80 s when the VM has to compile it.  Then the nodes
# benchmark in short (bench/scale/nodes -n 2 -s 1, about 70 s): both
# dilated-node nodes start, the RTT and rate figures are there (one iperf3
# sample), and nothing is left behind; whether they are in range is for
# tests/vm/node-rtt.t and node-iperf.t.
# tdc-timeout: 360
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
echo "TAP version 13"
echo "1..7"
fail_all() {
	for i in 1 2 3 4 5 6 7; do echo "not ok $i bench-scale: $1"; done
	exit 1
}
[ "$(id -u)" = 0 ] || fail_all "needs root"
[ -e /proc/self/timens_dilation ] || fail_all "kernel without timens_dilation"
# built on the host by make; else run builds it (in the VM: into the overlay)
out=$("$ROOT/bench/scale/run" -n 10 -w 3 -S 200 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
get() { # get MODE KEY
	echo "$out" | awk -v m="$1" -v k="$2" '/^# result / && $0 ~ " mode=" m " " {
		for (i = 3; i <= NF; i++) { split($i, a, "="); if (a[1] == k) print a[2] } }' | head -1
}
num() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }
# expect N OK NOT-OK VALUE WANT...: TAP point N, "ok N OK" when every VALUE
# is its WANT, else "not ok N NOT-OK"
expect() {
	local n=$1 yes=$2 no=$3
	shift 3
	while [ $# -ge 2 ]; do
		[ "$1" = "$2" ] || { echo "not ok $n $no"; return; }
		shift 2
	done
	echo "ok $n $yes"
}

d=$(get dilated ok); o=$(get offset ok)
expect 1 "bench/scale/run -n 10 completes (both modes ok)" \
	"bench/scale/run -n 10: exit $rc, ok=$d/$o" "$rc" 0 "$d" 1 "$o" 1

c=$(get dilated created); s=$(get dilated silent); so=$(get offset silent)
expect 2 "all 10 namespaces created and every timer fired in both modes" \
	"created=$c, namespaces that never fired: dilated $s, offset $so" "$c" 10 "$s" 0 "$so" 0

p50=$(get dilated p50_us); p99=$(get dilated p99_us)
num "$p50" && num "$p99" && awk -v a="$p50" -v b="$p99" 'BEGIN { exit !(a >= 0 && b >= a) }' &&
	echo "ok 3 lateness present: p50 $p50 us, p99 $p99 us of namespace time" ||
	echo "not ok 3 lateness missing or inconsistent: p50 '$p50' p99 '$p99'"

ok=1
for m in dilated offset; do
	for k in create_s teardown_s kmem_per_ns used_per_ns cpu_pct_per_ns task_us_per_fire; do
		v=$(get $m $k); num "$v" || { ok=; echo "# $m $k = '$v'"; }
	done
done
[ -n "$ok" ] && echo "ok 4 creation, teardown, memory and CPU figures present" ||
	echo "not ok 4 some figures missing"

e=$(get dilated early); eo=$(get offset early); er=$(get dilated errors)
expect 5 "no timer woke before its deadline, no clock errors" \
	"early wake-ups: dilated $e, offset $eo; errors $er" "$e" 0 "$eo" 0 "$er" 0

smp=$(get dilated samples); exp=$(get dilated expected)
if num "$smp" && num "$exp" && [ "$exp" -gt 0 ] &&
	awk -v s="$smp" -v e="$exp" 'BEGIN { exit !(s >= 0.8 * e && s <= 1.05 * e) }'; then
	echo "ok 6 dilated timers fire at 1/10 of the host rate: $smp expiries, $exp expected"
else
	echo "not ok 6 dilated expiries $smp, expected $exp at TDF 10 (want [0.8, 1.05] x)"
fi

# 7: the nodes benchmark in short (needs tools/bin/dilated-node and iperf3)
nout=$("$ROOT/bench/scale/nodes" -n 2 -s 1 2>&1); nrc=$?
echo "$nout" | sed 's/^/# /'
nget() { # nget KEY: from the "# result nodes" line
	echo "$nout" | awk -v k="$1" '/^# result nodes / {
		for (i = 4; i <= NF; i++) { split($i, a, "="); if (a[1] == k) print a[2] } }' | head -1
}
st=$(nget started); rs=$(nget rate_sampled); lf=$(nget leftover_links)
rtt=$(nget rtt_ms); rate=$(nget rate_mbit)
# min/med/max figures, the rate above 0 (0: iperf3 gave no result)
figs=$(awk -v r="$rtt" -v m="$rate" 'BEGIN { p = "^[0-9.]+/[0-9.]+/[0-9.]+$"
	print (r ~ p && m ~ p && m + 0 > 0) ? "yes" : "no" }')
expect 7 "bench/scale/nodes -n 2 -s 1 completes: 2 nodes, RTT $rtt ms, rate $rate Mbit/s, no link left" \
	"bench/scale/nodes -n 2 -s 1: exit $nrc, started '$st', rate samples '$rs', RTT '$rtt', rate '$rate', links left '$lf'" \
	"$nrc" 0 "$st" 2 "$rs" 1 "$figs" yes "$lf" 0
