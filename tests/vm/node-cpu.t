#!/bin/bash
# Perceived CPU: a CPU-bound loop in a node measures its elapsed time with the
# node's (dilated) clock and its CPU time with getrusage (CPU-time clocks are
# not dilated: real CPU seconds). With cpu.max = perceived CPUs / TDF the node
# gets TDF x share CPU-seconds per perceived second; for one busy thread the
# ratio R = perceived elapsed / CPU time is ideally
#   --cpus 1   at TDF 10 (cpu.max 1000 10000):  R1 = 1
#   --cpus 0.5 at TDF 10 (cpu.max 1000 20000):  R2 = 2
#   no cpu.max at TDF 10:                       R0 = 1/10 (a CPU that looks
#                                               10x too fast)
# Under QEMU TCG on a busy host, wall time exceeds CPU time even for an
# uncapped loop (measured: elapsed/CPU = 1.3-1.7 on the guest's own root
# namespace), so the checks are the ratios R1/R0 = 10 and R2/R0 = 20, which
# cancel that factor, and R1 itself loosely. Measured over 7 runs on a host
# busy with other QEMU guests: R1/R0 7.5-13.5, R2/R0 14.9-24.8 (the uncapped
# run is short in real time, so host steal hits it hardest). Accepted: R1/R0 in
# [6.5, 15], R2/R0 in [13, 30]: wide, but no scaling (R1/R0 = 1) or a wrong
# factor (x2) still fails.
# tdc-timeout: 150
. "${TDC_ROOT:-$(dirname "$0")/../..}/tools/tests/lib.sh"
tap_plan 4
need_node_env
# prints "ELAPSED CPU" (seconds) for N iterations of a shell loop
LOOP='TIMEFORMAT="%3R %3U %3S"; { time { i=0; while [ $i -lt $1 ]; do i=$((i+1)); done; } ; } 2>&1 | awk "{ print \$1, \$2 + \$3 }"'
N=20000
read -r e c < <(taskset -c 0 bash -c "$LOOP" _ $N)
N=$(awk -v t="$c" -v n=$N 'BEGIN { m = int(n * 0.25 / (t > 0.01 ? t : 0.01)); print (m < 1000 ? 1000 : m) }')
read -r he hc < <(taskset -c 0 bash -c "$LOOP" _ $N)
note "host: $N iterations: $he s elapsed, $hc s CPU"
ratio() { awk -v e="$1" -v c="$2" 'BEGIN { if (c > 0) printf "%.3f", e / c; else print 0 }'; }
run() { # run N NAME ARGS...
	local n=$1; shift
	"$DN" run --quiet --no-net --tdf 10 --name "$@" -- taskset -c 0 bash -c "$LOOP" _ "$n"
}
out=$(run $N c1 --cpus 1); read -r e1 c1 <<<"$out"; r1=$(ratio "$e1" "$c1")
note "TDF 10 --cpus 1: $e1 s perceived elapsed, $c1 s CPU: R1 = $r1 (host run: $he s elapsed, $hc s CPU)"
out=$(run $N c2 --cpus 0.5); read -r e2 c2 <<<"$out"; r2=$(ratio "$e2" "$c2")
note "TDF 10 --cpus 0.5: $e2 s perceived elapsed, $c2 s CPU: R2 = $r2"
# uncapped: a longer loop (it runs 10x faster in perceived time)
out=$(run $((N * 8)) c3); read -r e3 c3 <<<"$out"; r0=$(ratio "$e3" "$c3")
note "TDF 10 without --cpus: $e3 s perceived elapsed, $c3 s CPU: R0 = $r0"
q1=$(ratio "$r1" "$r0"); q2=$(ratio "$r2" "$r0")
if within "$q1" 6.5 15; then ok "--cpus 1 at TDF 10 vs no cap: R1/R0 = $q1 in [6.5, 15] (ideal 10)"
else notok "--cpus 1 at TDF 10 vs no cap: R1/R0 = $q1 in [6.5, 15]"; fi
if within "$q2" 13 30; then ok "--cpus 0.5 at TDF 10 (period 20 ms) vs no cap: R2/R0 = $q2 in [13, 30] (ideal 20)"
else notok "--cpus 0.5 at TDF 10 vs no cap: R2/R0 = $q2 in [13, 30]"; fi
if within "$r1" 0.7 2; then ok "--cpus 1 at TDF 10: perceived elapsed / CPU time R1 = $r1 in [0.7, 2] (ideal 1)"
else notok "--cpus 1 at TDF 10: R1 = $r1 in [0.7, 2]"; fi
if within "$r0" 0.07 0.2; then ok "no cpu.max at TDF 10: R0 = $r0 in [0.07, 0.2] (ideal 0.1)"
else notok "no cpu.max at TDF 10: R0 = $r0 in [0.07, 0.2]"; fi
rh=$(awk -v a="$e1" -v b="$he" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print 0 }')
note "same loop: perceived time with --cpus 1 / host time = $rh (not checked: TCG speed drifts between runs)"
echo "cpu host_s=$he R1=$r1 R2=$r2 R0=$r0 R1/R0=$q1 R2/R0=$q2 vs_host=$rh" >> "$OUT/node-figures.txt" 2>/dev/null
exit 0
