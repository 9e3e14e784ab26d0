#!/bin/bash
# /proc/stat's btime in a dilated time namespace (TDF 10, boot offset 1 day):
# the boot time the namespace's tools compute from must agree with its own
# dilated clocks, also after the host's CLOCK_REALTIME was stepped.
#   1 btime + /proc/uptime = the namespace's CLOCK_REALTIME, less 0 to 1.05 s
#     (btime is whole seconds, uptime has 10 ms resolution)
#   2 btime is the same value 2 s of host time later (it must not drift at
#     the host rate against the dilated uptime, nor flicker)
#   3 ps -o lstart of a task in the namespace: its start in the namespace's
#     CLOCK_REALTIME, less 0 to 2.05 s (ps adds the dilated start time to
#     btime, both truncated)
#   4 uptime -s (procps: time() - uptime): btime, within 1 s
#   5 after the host's CLOCK_REALTIME is stepped forward by 1 h (and back,
#     after the point), btime + uptime = the namespace's CLOCK_REALTIME
#     again. Before the series dilated btime, btime followed the host step
#     (1 h) while the namespace's clock moved by the step / TDF: 54 min apart.
# tdc-timeout: 120
set -u
export LC_ALL=C TZ=UTC
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
U=$ROOT/build/bin/unshare
. "$ROOT/tests/lib/tap.sh"
tap_plan 5
SKIP_REST_NAME=btime
[ "$(id -u)" = 0 ] || skip_rest "needs root (run it in the VM)"
[ -e /proc/self/timens_dilation ] || skip_rest "kernel without /proc/self/timens_dilation"
[ -x "$U" ] || { while [ "$TAP_N" -lt "$TAP_TOTAL" ]; do notok btime "$U not built"; done; exit 1; }

T=$(mktemp -d)
stepped=0
# The host clock goes back to where it would be without the step: the
# realtime at the start plus the monotonic time elapsed since.
restore() {
	[ "$stepped" = 1 ] && python3 -c '
import sys, time
r0, m0 = float(sys.argv[1]), float(sys.argv[2])
time.clock_settime(time.CLOCK_REALTIME, r0 + time.clock_gettime(time.CLOCK_MONOTONIC) - m0)' "$R0" "$M0"
	stepped=0
}
trap 'restore; rm -rf "$T"' EXIT
R0=$(python3 -c 'import time; print(repr(time.clock_gettime(time.CLOCK_REALTIME)))')
M0=$(python3 -c 'import time; print(repr(time.clock_gettime(time.CLOCK_MONOTONIC)))')

# The program in the namespace: one line per check, "name ok|fail detail".
cat > "$T/inside.py" <<'PY'
import datetime, os, subprocess, sys, time
T = sys.argv[1]

def btime():
    for line in open("/proc/stat"):
        if line.startswith("btime "):
            return int(line.split()[1])

def consistent(name):
    # btime + uptime against the clock, read between two readings of the clock
    r1 = time.clock_gettime(time.CLOCK_REALTIME)
    b = btime()
    up = float(open("/proc/uptime").read().split()[0])
    r2 = time.clock_gettime(time.CLOCK_REALTIME)
    # btime drops the fraction of a second (up to 1 s), uptime below 10 ms
    d = b + up - (r1 + r2) / 2
    print(name, "ok" if -1.05 <= d <= 0.05 else "fail",
          f"btime {b} + uptime {up:.2f} - REALTIME {r2:.2f} = {d:+.2f} s", flush=True)

consistent("sum")
b1 = btime()
time.sleep(0.2)                     # 2 s of host time at TDF 10
b2 = btime()
print("constant", "ok" if b1 == b2 else "fail", f"{b1} then {b2}", flush=True)

start = time.clock_gettime(time.CLOCK_REALTIME)
p = subprocess.Popen(["sleep", "1"])
out = subprocess.run(["ps", "-o", "lstart=", "-p", str(p.pid)], capture_output=True, text=True).stdout.strip()
p.wait()
try:
    lstart = datetime.datetime.strptime(out, "%a %b %d %H:%M:%S %Y").replace(tzinfo=datetime.timezone.utc).timestamp()
    d = lstart - start
    # ps adds the start time (whole jiffies) to btime (whole seconds) and
    # prints whole seconds: up to 2 s early; the task started after `start`
    print("lstart", "ok" if -2.05 <= d <= 0.5 else "fail", f"ps -o lstart {out!r}, started at {start:.1f}: {d:+.1f} s", flush=True)
except ValueError:
    print("lstart", "fail", f"ps -o lstart printed {out!r}", flush=True)

# procps computes it as time() - uptime: within a second of btime
out = subprocess.run(["uptime", "-s"], capture_output=True, text=True).stdout.strip()
b = btime()
try:
    got = datetime.datetime.strptime(out, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    print("uptime-s", "ok" if abs(got - b) <= 1 else "fail", f"uptime -s {out!r}, btime {b}: {got - b:+.0f} s", flush=True)
except ValueError:
    print("uptime-s", "fail", f"uptime -s printed {out!r}", flush=True)

open(f"{T}/ready", "w").close()
while not os.path.exists(f"{T}/stepped"):
    time.sleep(0.01)
consistent("stepped")
PY

"$U" --time --boottime=86400 --time-dilation=10 --fork python3 "$T/inside.py" "$T" > "$T/out" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -e "$T/ready" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
if [ -e "$T/ready" ]; then
	stepped=1
	python3 -c 'import time; time.clock_settime(time.CLOCK_REALTIME, time.clock_gettime(time.CLOCK_REALTIME) + 3600)'
fi
touch "$T/stepped"
wait $pid
rc=$?
restore

for name in sum constant lstart uptime-s stepped; do
	line=$(grep "^$name " "$T/out")
	case $name in
	sum) desc="btime + /proc/uptime = the namespace's CLOCK_REALTIME (TDF 10, boot offset 1 day)" ;;
	constant) desc="btime does not move in 2 s of host time" ;;
	lstart) desc="ps -o lstart: the task's start in the namespace's CLOCK_REALTIME" ;;
	uptime-s) desc="uptime -s agrees with btime" ;;
	stepped) desc="after the host's CLOCK_REALTIME stepped by +1 h: btime + uptime = the namespace's CLOCK_REALTIME" ;;
	esac
	case $line in
	"$name ok "*) ok "$desc: ${line#"$name ok "}" ;;
	*) notok "$desc" "${line:-no result (exit $rc): $(tail -5 "$T/out")}" ;;
	esac
done
