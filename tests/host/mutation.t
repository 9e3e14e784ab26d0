#!/bin/bash
# The tests must fail on a wrong kernel. Builds a kernel that applies twice the
# dilation factor written (scripts/build-variant --mutate twice), boots it, runs a clock,
# a sleep, a node, a container and a helper suite on it, and passes a point
# only when that suite FAILED there: a suite that passes on this kernel could
# not tell TDF 10 from 20. (Half the factor fails the exact lower bounds of the
# same suites: scripts/build-variant mutant-half --mutate half, by hand.)
# tdc-timeout: 1500
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 1
SUITES=(
	selftest-timens_dilation_dilation_rates   # every clock's rate, vDSO and syscall
	selftest-timens_sleep_sleep_nanosleep     # sleeps last d x TDF
	selftest-timens_dilation_dilation_change  # sleeps across a factor change
	selftest-timens_dilation_dilation_tcp     # TCP's RTO and delayed ACK, TCP_INFO
	vm-dilate-helper                          # the demo's helper, /proc/uptime
	vm-node-rtt                               # dilated-node: a perceived RTT
	vm-oci-crun                               # a container through the OCI hook
)
echo "TAP version 13"
echo "1..$(( ${#SUITES[@]} + 1 ))"
img=$(scripts/build-variant mutant-twice --mutate twice 2>"$ROOT/build/mutant-twice.err")
if [ -z "$img" ] || [ ! -r "$img" ]; then
	echo "not ok 1 build the mutant kernel (twice the factor)"
	sed 's/^/# /' "$ROOT/build/mutant-twice.err" | tail -20
	for i in $(seq 2 $(( ${#SUITES[@]} + 1 ))); do echo "not ok $i mutant: not run (no mutant kernel)"; done
	exit 1
fi
echo "ok 1 build the mutant kernel (twice the factor): $img"
OUT=$ROOT/build/vm-out-mutant
rm -rf "$OUT"
filter="^($(IFS='|'; echo "${SUITES[*]}"))\$"
TDC_VM_OUT=$OUT scripts/vm --kernel "$img" --timeout 1200 -- \
	env TDC_FILTER="$filter" tests/guest/run-all > "$ROOT/build/mutant-twice.log" 2>&1
rc=$?
n=1
for s in "${SUITES[@]}"; do
	n=$((n + 1))
	tap=$OUT/results/$s.tap
	if [ ! -s "$tap" ]; then
		echo "not ok $n $s on the mutant: no result (VM exit $rc, build/mutant-twice.log)"
		continue
	fi
	f=$(grep -c '^not ok' "$tap")
	p=$(grep -c '^ok' "$tap")
	if [ "$f" -gt 0 ]; then
		echo "ok $n $s fails on a kernel applying twice the factor ($f failed, $p passed)"
	else
		echo "not ok $n $s PASSES on a kernel applying twice the factor ($p points): its bounds cannot tell TDF from 2 TDF"
	fi
done
