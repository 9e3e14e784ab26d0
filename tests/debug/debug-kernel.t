#!/bin/bash
# The debug kernel: the same series built with KASAN, lockdep (PROVE_LOCKING),
# UBSAN, DEBUG_ATOMIC_SLEEP and timer debug objects (kernel/config/debug.config,
# scripts/build-variant debug), booted once to run every timens_* kselftest of
# selftests/tests.list (among them timens_churn/dilation_churn: 1000 dilated
# namespaces created and destroyed while two writers re-anchor them and
# readers read every clock through vDSO and syscall) and then dmesg's verdict
# (tests/guest/run-all: no oops, WARN, KASAN, UBSAN, lockdep or sleep-in-atomic
# report). Every point of those suites is a point here, as "debug: ...".
# Every suite's timeout is 4 times its normal one (TDC_TIMEOUT_SCALE): under
# KASAN and lockdep in the TCG guest the churn test took 222 s and the write
# fuzz test over 120 s (5 s on the normal kernel), on a loaded host.
# Not part of `make test` yet: a warm build takes 71 s, but the VM run took
# 21 min on a loaded host (about 12 min expected on an idle one), which would
# take CI from 26 to about 40 min warm and over 60 min cold. Run it with
# `make test-debug`.
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 1
echo "TAP version 13"
t0=$(date +%s)
img=$(scripts/build-variant debug --config kernel/config/debug.config 2>"$ROOT/build/debug.err")
if [ -z "$img" ] || [ ! -r "$img" ]; then
	echo "1..1"
	echo "not ok 1 debug: build the debug kernel (kernel/config/debug.config)"
	sed 's/^/# /' "$ROOT/build/debug.err" | tail -20
	exit 1
fi
t1=$(date +%s)
OUT=$ROOT/build/vm-out-debug
rm -rf "$OUT"
TDC_VM_OUT=$OUT scripts/vm --kernel "$img" --timeout 3000 -- \
	env TDC_TIMEOUT_SCALE=4 TDC_FILTER='^(selftest-timens_.*|dmesg)$' tests/guest/run-all > "$ROOT/build/debug-vm.log" 2>&1
rc=$?
t2=$(date +%s)
echo "# debug kernel: built in $((t1 - t0)) s, VM run $((t2 - t1)) s (exit $rc), log build/debug-vm.log"
# One TAP stream of every suite's points, and a failure for a suite with no result.
python3 - "$OUT/results" "$ROOT/selftests/tests.list" "$rc" "$t1" <<'PY'
import os, re, sys
res, tests_list, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
suites = []
for line in open(tests_list):
    line = line.strip()
    if line and not line.startswith('#'):
        name = 'selftest-' + re.sub(r'[^A-Za-z0-9_.-]', '_', line.split()[0])
        if name.startswith('selftest-timens_'):
            suites.append(name)
suites.append('dmesg')
points = ['ok 1 debug: build the debug kernel (KASAN, PROVE_LOCKING, UBSAN, DEBUG_ATOMIC_SLEEP)']
for s in suites:
    path = os.path.join(res, s + '.tap')
    lines = [l.rstrip('\n') for l in open(path)] if os.path.exists(path) else []
    got = [l for l in lines if re.match(r'^(not ok|ok)\b', l)]
    if not got:
        points.append(f'not ok {len(points) + 1} debug: {s}: no result (VM exit {rc})')
        continue
    for l in got:
        m = re.match(r'^(not ok|ok)\s*\d*\s*(.*)$', l)
        points.append(f'{m.group(1)} {len(points) + 1} debug: {m.group(2)}')
print(f'1..{len(points)}')
print('\n'.join(points))
PY
