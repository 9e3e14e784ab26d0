#!/bin/bash
# bench/vdso-native runs and its correctness checks hold (a smoke test of the
# benchmark, not of its figures: missed goals are not failures here).
# The patched vDSO image of build/linux runs natively on synthetic vvar
# pages: root and offset-only clocks read the synthetic host time (plus the
# namespace offsets), and the dilated clocks (TDF 10, TDF 1/1000) advance at
# 1/TDF of the root ones. The pristine image is used when
# bench/vdso-native/build-pristine-vdso has built it (too slow to build
# here); otherwise the run covers the patched image only and point 3 says so.
# No root, no VM, a few seconds.
# tdc-timeout: 120
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=$ROOT/bench/vdso-native
N=10; n=0
echo "TAP version 13"; echo "1..$N"
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/# /' | head -40; }
bail() { while [ $n -lt $N ]; do notok "$1" "${2:-}"; done; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

if out=$(make -s -C "$B" WERROR=1 vdso_native 2>&1); then ok "vdso_native builds with -Werror"
else bail "vdso_native does not build" "$out"; fi

# A private snapshot: build/linux may be rebuilt while we run
VD=$ROOT/build/linux/arch/x86/entry/vdso
if cp "$VD/vdso64.so" "$VD/vdso64.so.dbg" "$T/" 2>/dev/null; then ok "patched vDSO image: $VD/vdso64.so(.dbg)"
else bail "patched vDSO image missing: $VD/vdso64.so(.dbg) (scripts/build-kernel)"; fi

P=$ROOT/build/bench-native/pristine
images=(--no-pristine "$T/vdso64.so"); nvar=4
if [ -f "$P/vdso64.so" ] && [ -f "$P/vdso64.so.dbg" ]; then
	mkdir "$T/p" && cp "$P/vdso64.so" "$P/vdso64.so.dbg" "$T/p/"
	images=("$T/vdso64.so" "$T/p/vdso64.so"); nvar=6
	ok "pristine vDSO image: $P/vdso64.so (patched and pristine measured)"
else
	ok "no pristine vDSO image ($P/vdso64.so; bench/vdso-native/build-pristine-vdso builds it): patched image only"
fi

out=$("$B/run" -r 5 -n 2000 "${images[@]}" 2>&1); rc=$?
if [ $rc = 0 ]; then ok "run exits 0 (every check held)"; else notok "run exits $rc" "$out"; fi

# root and offset-only variants: 5 clocks each read the expected time
want=$(( (nvar - 2) * 5 ))
got=$(grep -c '^check: ok: .* reads host ' <<<"$out")
if [ "$got" = "$want" ] && ! grep -q '^check: FAILED' <<<"$out"; then
	ok "root and offset-only clocks read host time (+ offsets): $got checks"
else notok "root and offset-only clocks: $got of $want checks ok" "$(grep '^check' <<<"$out")"; fi

# dilated variants: 2 factors x 5 clocks advance at 1/TDF
got=$(grep -Ec '^check: ok: p-tdf(10|1/1000) .* x TDF = ' <<<"$out")
if [ "$got" = 10 ]; then ok "dilated clocks advance at 1/TDF of the root's (TDF 10 and 1/1000, 5 clocks)"
else notok "dilated clocks: $got of 10 checks ok" "$(grep '^check' <<<"$out")"; fi

# the alternatives were applied: the TSC is read as the kernel would read it
if grep -Eq '^# patched: .*alternatives ([0-9]+)/\1 applied, 0 unknown, TSC read: (rdtscp|lfence; rdtsc)\)' <<<"$out"; then
	ok "alternatives applied: $(grep -o 'TSC read: [^)]*' <<<"$out" | head -1)"
else notok "alternatives not all applied" "$(grep '^#' <<<"$out")"; fi

# the table: a positive figure for every clock and variant
rows=$(awk -v nv="$nvar" '/^ns per clock_gettime/ { t = 1; next }
	t && /^(MONOTONIC|REALTIME|BOOTTIME|MONOTONIC_COARSE|REALTIME_COARSE) / {
		good = NF == nv + 1; for (i = 2; i <= NF; i++) if (!($i > 0)) good = 0; n += good }
	END { print n + 0 }' <<<"$out")
if [ "$rows" = 5 ]; then ok "figures for 5 clocks x $nvar variants"
else notok "figures: $rows of 5 rows complete" "$out"; fi

# ratios and the goals verdict are printed (whatever they say)
if grep -q '^tdf10/offset  *MONOTONIC ' <<<"$out" && grep -Eq '^goals: (all met|some MISSED)' <<<"$out"; then
	ok "ratios and goals reported: $(grep '^goals:' <<<"$out")"
else notok "ratios or goals missing" "$out"; fi

# the placement control (-s): images off page alignment still read right
out=$("$B/run" -r 2 -n 1000 -s 32 "${images[@]}" 2>&1); rc=$?
if [ $rc = 0 ] && grep -q '^# placement: images moved by 32 bytes' <<<"$out" && [ "$(grep -c '^check: ok' <<<"$out")" = $(( (nvar - 2) * 5 + 10 )) ]; then
	ok "run -s 32 (code placement control): every check holds"
else notok "run -s 32: exit $rc" "$(grep -E '^(#|check: FAILED)' <<<"$out")"; fi
