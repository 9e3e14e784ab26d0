#!/bin/bash
# Host test of the runner itself: tests/lib/tap.py on canned inputs.
set -u
TAP=$(cd "$(dirname "$0")/../.." && pwd)/tests/lib/tap.py
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
n=0
check() { # check DESC EXPECTED(pass/fail/skip counts "P F S") FILE.tap
	n=$((n + 1))
	got="$(grep -c '^ok' "$3" | tr -d '\n') $(grep -c '^not ok' "$3" | tr -d '\n') $(grep -c '[^\\]# SKIP' "$3" | tr -d '\n')"
	# "ok" lines include skips: P = ok - skip
	set -- "$1" "$2" "$3" $got
	local p=$(($4 - $6)) f=$5 s=$6
	if [ "$p $f $s" = "$2" ]; then echo "ok $n $1"; else echo "not ok $n $1 # got '$p $f $s' want '$2'"; sed 's/^/# /' "$3"; fi
}
echo "1..30"

printf 'TAP version 13\n1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP no\n' > "$d/log"
python3 "$TAP" normalize s 1 "$d/log" > "$d/t"; check "plain TAP" "1 1 1" "$d/t"
# kselftest's ksft_test_result_skip(): no description before the directive
printf 'TAP version 13\n1..3\nok 1 a\nok 2 # SKIP CLOCK_MONOTONIC_RAW\nok 3 #SKIP\n' > "$d/log"
python3 "$TAP" normalize s 0 "$d/log" > "$d/t"; check "skip without a description" "1 0 2" "$d/t"

printf 'TAP version 13\n1..3\nok 1 a\n' > "$d/log"
python3 "$TAP" normalize s 0 "$d/log" > "$d/t"; check "missing points fail" "1 1 0" "$d/t"

: > "$d/log"
python3 "$TAP" normalize s 4 "$d/log" > "$d/t"; check "no TAP, exit 4 = skip" "0 0 1" "$d/t"
python3 "$TAP" normalize s 3 "$d/log" > "$d/t"; check "no TAP, exit 3 = fail" "0 1 0" "$d/t"
printf 'ok 1 a\n' > "$d/log"
python3 "$TAP" normalize s 124 "$d/log" > "$d/t"; check "timeout fails" "1 1 0" "$d/t"

cat > "$d/dmesg" <<'K'
[    0.400000] KTAP version 1
[    0.400001] 1..2
[    0.400002]     KTAP version 1
[    0.400003]     # Subtest: suite_a
[    0.400004]     # module: a
[    0.400005]     1..3
[    0.400006]     ok 1 case_one
[    0.400007]         KTAP version 1
[    0.400008]         # Subtest: case_param
[    0.400009]         ok 1 p1
[    0.400010]     not ok 2 case_param
[    0.400011]     ok 3 case_skip # SKIP not here
[    0.400012] not ok 1 suite_a
[    0.400013]     KTAP version 1
[    0.400014]     # Subtest: suite_b
[    0.400015]     1..0
[    0.400016] not ok 2 suite_b
K
python3 "$TAP" kunit "$d/dmesg" > "$d/t"; check "kunit from dmesg" "1 2 1" "$d/t"
printf '[ 0.1] Linux version\n' > "$d/dmesg"
python3 "$TAP" kunit "$d/dmesg" > "$d/t"; check "no kunit = one skip" "0 0 1" "$d/t"

cat > "$d/go" <<'G'
=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestB
    --- FAIL: TestB/sub (0.00s)
--- FAIL: TestB (0.00s)
--- SKIP: TestC (0.00s)
FAIL	example.com/x	0.01s
FAIL	example.com/y [build failed]
G
python3 "$TAP" gotest 1 "$d/go" > "$d/t"; check "go test -v" "1 2 1" "$d/t"

printf 'TAP version 13\n1..1\nok 1 x # SKIP\n' > "$d/a.tap"
python3 "$TAP" summary "$d/a.tap" > "$d/sum"; rc=$?
n=$((n + 1))
if [ $rc = 1 ] && [ "$(tail -1 "$d/sum")" = "0 passed, 0 failed, 1 skipped" ]; then echo "ok $n summary: nothing ran is an error"; else echo "not ok $n summary rc=$rc"; fi

# ---- the runner's guards: each check fails if its guard is removed ----
pass_if() { # pass_if DESC CONDITION-STATUS [DETAIL]
	n=$((n + 1))
	if [ "$2" = 0 ]; then echo "ok $n $1"; else echo "not ok $n $1"; [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'; fi
}
# run_suite keeps the suite's exit status (tee's "|| true" once turned it to 0
# under pipefail), with pipefail as scripts/run-tests has it and without, as
# tests/guest/run-all has it
for mode in pipefail plain; do
	(
		[ $mode = plain ] || set -o pipefail
		export TDC_ROOT=${TAP%/tests/lib/tap.py} RES=$d/res-$mode
		mkdir -p "$RES"
		. "$TDC_ROOT/tests/lib/suite.sh"
		run_suite failing 10 sh -c 'exit 3' >/dev/null
		run_suite tap-then-exit 10 sh -c 'echo 1..1; echo ok 1 fine; exit 2' >/dev/null
		run_suite slow 1 sleep 5 >/dev/null
	)
	check "run_suite ($mode): a command exiting 3 with no TAP fails" "0 1 0" "$d/res-$mode/failing.tap"
	check "run_suite ($mode): all points ok but exit 2 fails" "1 1 0" "$d/res-$mode/tap-then-exit.tap"
	check "run_suite ($mode): a suite killed by its timeout fails" "0 1 0" "$d/res-$mode/slow.tap"
done

summ() { python3 "$TAP" summary "$@" > "$d/sum" 2>&1; echo $?; }
mkdir -p "$d/s"
printf 'TAP version 13\n1..2\nok 1 a\nok 2 b # SKIP why\n' > "$d/s/good.tap"
: > "$d/s/empty.tap"
printf 'TAP version 13\n1..3\nok 1 a\n' > "$d/s/cut.tap"
printf 'good\n' > "$d/exp1"; printf 'good\nghost\n' > "$d/exp2"
printf 'good 2 1\n' > "$d/man-ok"; printf 'good 3 1\n' > "$d/man-more"
printf 'good 2 0\n' > "$d/man-noskip"; printf 'other 1 0\n' > "$d/man-unknown"
printf 'good 2 1\ngone 4 0\n' > "$d/man-gone"
pass_if "summary: a clean suite that matches the manifest passes" \
	"$(summ --expected "$d/exp1" --tree "$d/exp1" --manifest "$d/man-ok" "$d/s/good.tap")" "$(cat "$d/sum")"
r=$(summ "$d/s/good.tap" "$d/s/empty.tap"); pass_if "summary: an empty .tap is a failure" \
	"$([ "$r" = 1 ] && grep -qx '1 passed, 1 failed, 1 skipped' "$d/sum"; echo $?)" "$(cat "$d/sum")"
r=$(summ "$d/s/cut.tap"); pass_if "summary: a .tap with fewer points than its plan is a failure" \
	"$([ "$r" = 1 ] && grep -q 'no result' "$d/sum"; echo $?)" "$(cat "$d/sum")"
r=$(summ --expected "$d/exp2" "$d/s/good.tap"); pass_if "summary: an expected suite without a result fails" \
	"$([ "$r" = 1 ] && grep -q 'ghost: produced no result' "$d/sum"; echo $?)" "$(cat "$d/sum")"
r=$(summ --manifest "$d/man-more" "$d/s/good.tap"); pass_if "summary: fewer points than the manifest fail" \
	"$([ "$r" = 1 ] && grep -q 'good: 2 points, tests/manifest expects 3' "$d/sum"; echo $?)" "$(cat "$d/sum")"
r=$(summ --manifest "$d/man-noskip" "$d/s/good.tap"); pass_if "summary: more skips than the manifest allows fail" \
	"$([ "$r" = 1 ] && grep -q 'good: 1 skipped, tests/manifest allows 0' "$d/sum"; echo $?)" "$(cat "$d/sum")"
r=$(summ --manifest "$d/man-unknown" "$d/s/good.tap"); pass_if "summary: a suite the manifest does not list fails" \
	"$([ "$r" = 1 ] && grep -q 'good: not in tests/manifest' "$d/sum"; echo $?)" "$(cat "$d/sum")"
r=$(summ --tree "$d/exp1" --manifest "$d/man-gone" "$d/s/good.tap"); pass_if "summary: a manifest suite gone from the tree fails" \
	"$([ "$r" = 1 ] && grep -q 'gone: in tests/manifest but not in the test tree' "$d/sum"; echo $?)" "$(cat "$d/sum")"
r=$(summ --tree "$d/exp1" --manifest "$d/man-gone" --filter '^good$' "$d/s/good.tap"); pass_if "summary: a filtered run ignores manifest suites outside the filter" \
	"$r" "$(cat "$d/sum")"
python3 "$TAP" manifest "$d/m" "$d/s/good.tap" "$d/s/cut.tap" >/dev/null 2>&1; r=$?
pass_if "manifest: refused from a run with a failure" "$([ "$r" != 0 ] && [ ! -s "$d/m" ]; echo $?)"
python3 "$TAP" manifest "$d/m" "$d/s/good.tap"; pass_if "manifest: written from a clean run" "$(grep -qx 'good 2 1' "$d/m"; echo $?)" "$(cat "$d/m")"
python3 "$TAP" summary "$d/s/good.tap" > /dev/null; r=$?
python3 "$TAP" summary --manifest "$d/nonexistent" "$d/s/good.tap" > "$d/sum"; r2=$?
pass_if "summary: a missing manifest file fails every suite as unknown" "$([ "$r" = 0 ] && [ "$r2" = 1 ]; echo $?)" "$(cat "$d/sum")"

cat > "$d/dm" <<'K'
[    1.000000] Linux version 6.12.117
[    2.000000] ------------[ cut here ]------------
[    2.000001] WARNING: CPU: 1 PID: 42 at kernel/time/namespace.c:10 f+0x1/0x2
[    3.000000] BUG: KASAN: slab-use-after-free in timens_x+0x10/0x20
K
python3 "$TAP" dmesg "$d/dm" > "$d/t"; check "dmesg: a WARN and a KASAN report fail their points, the rest pass" "5 2 0" "$d/t"
printf '[ 1.0] Linux version\n[ 2.0] io_uring: deprecated\n' > "$d/dm"
python3 "$TAP" dmesg "$d/dm" > "$d/t"; check "dmesg: a clean log passes every point" "7 0 0" "$d/t"
