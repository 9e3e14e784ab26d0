#!/bin/bash
# Host test of the runner itself: tests/lib/tap.py on canned inputs.
set -u
TAP=$(cd "$(dirname "$0")/../.." && pwd)/tests/lib/tap.py
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
n=0
check() { # check DESC EXPECTED(pass/fail/skip counts "P F S") FILE.tap
	n=$((n + 1))
	got="$(grep -c '^ok' "$3" | tr -d '\n') $(grep -c '^not ok' "$3" | tr -d '\n') $(grep -c '# SKIP' "$3" | tr -d '\n')"
	# "ok" lines include skips: P = ok - skip
	set -- "$1" "$2" "$3" $got
	local p=$(($4 - $6)) f=$5 s=$6
	if [ "$p $f $s" = "$2" ]; then echo "ok $n $1"; else echo "not ok $n $1 # got '$p $f $s' want '$2'"; sed 's/^/# /' "$3"; fi
}
echo "1..9"

printf 'TAP version 13\n1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP no\n' > "$d/log"
python3 "$TAP" normalize s 1 "$d/log" > "$d/t"; check "plain TAP" "1 1 1" "$d/t"

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

printf 'ok 1 x # SKIP\n' > "$d/a.tap"
python3 "$TAP" summary "$d/a.tap" > "$d/sum"; rc=$?
n=$((n + 1))
if [ $rc = 1 ] && [ "$(tail -1 "$d/sum")" = "0 passed, 0 failed, 1 skipped" ]; then echo "ok $n summary: nothing ran is an error"; else echo "not ok $n summary rc=$rc"; fi
