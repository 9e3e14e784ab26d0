#!/bin/bash
# In-VM TAP test of `unshare --time --time-dilation` (build/bin/unshare, built
# by util-linux/build.sh) on the patched kernel: the factor reaches
# /proc/PID/timens_dilation, and the namespace's clocks run at 1/factor of the
# host rate. Run as root: scripts/vm -- tests/vm/unshare-dilation.t
# Skipped when build/bin/unshare is missing or the kernel has no
# /proc/self/timens_dilation.
#
# Rate measurement: a program in the dilated namespace reads its clocks,
# signals "ready" through a FIFO and blocks reading another FIFO; this script
# (in the root time namespace) then sleeps H seconds of host time, measured
# with its own clock from after "ready" to before "go", and releases it; the
# program reads its clocks again. The inside interval encloses the host
# interval, so ratio = host / inside is at most TDF exactly; latencies (FIFO
# wake-ups, scheduling; large and bursty under QEMU TCG on a loaded host)
# only add to the inside interval and lower the ratio. Hence the bounds:
#   upper: TDF * 1.03 (3 %: clock granularity and the kernel's fixed-point
#          scaling; /proc/uptime has 10 ms resolution: 5 %);
#   lower: TDF * 0.8 (up to 25 % of H = 0.75 s of latency at H = 3 s;
#          measured under TCG: ~10 ms for the FIFO wake-ups, ~0.45 s for
#          the two date(1) starts, which therefore get H = 6 s).
# A wrong rate (1, 2, 5, 20, ...) is far outside. As the noise is one-sided,
# a measurement is retried up to 3 times, and the first one within bounds
# counts (any result above the upper bound fails at once).
# tdc-timeout: 240
set -u
export LC_ALL=C
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
U=${UNSHARE:-$ROOT/build/bin/unshare}
H=${UNSHARE_TEST_HOST_SECONDS:-3}
N=16

echo "TAP version 13"
echo "1..$N"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do printf '%s\n' "$l" | sed 's/^/# /'; done; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
skip_rest() { while [ $n -lt $N ]; do skip unshare-dilation "$1"; done; exit 0; }

[ -x "$U" ] || skip_rest "$U not built (run util-linux/build.sh)"
[ "$(id -u)" = 0 ] || skip_rest "needs root (run it in the VM: scripts/vm -- $0)"
[ -e /proc/self/timens_dilation ] || skip_rest "kernel without /proc/self/timens_dilation"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# reads FACTOR WANT DESC [UNSHARE OPTIONS...]: what the namespace reports
reads() {
	local f=$1 want=$2 desc=$3 got rc=0
	shift 3
	got=$("$U" --time --time-dilation="$f" "$@" cat /proc/self/timens_dilation 2>&1) || rc=$?
	if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
		ok "$desc: --time-dilation=$f ${*:+$* }reads $want"
	else
		notok "$desc: --time-dilation=$f ${*:+$* }reads $want" "exit status $rc, output: $got"
	fi
}

reads 10 10 "decimal" --fork
reads 5/2 5/2 "ratio" --fork
reads 2.5 5/2 "fraction" --fork
reads 10/4 5/2 "ratio, reduced by the kernel" --fork
reads 0.001 1/1000 "lower limit" --fork
reads 1000 1000 "upper limit" --fork
reads 1 1 "factor 1" --fork
# without --fork the program is exec'ed and enters time_for_children at exec
reads 10 10 "without --fork"

# with offsets: unshare writes the offsets first, then the factor (before the
# first task enters, after which the kernel refuses offsets); both must be
# accepted and take effect
out=$("$U" --time --boottime=86400 --monotonic=3600 --time-dilation=10 --fork \
	sh -c 'cat /proc/self/timens_dilation; cut -d" " -f1 /proc/uptime' 2>&1)
if [ "$(echo "$out" | head -1)" = 10 ] && awk -v u="$(echo "$out" | sed -n 2p)" 'BEGIN { exit !(u + 0 >= 86400) }'; then
	ok "--boottime/--monotonic with --time-dilation: factor 10, uptime $(echo "$out" | sed -n 2p)"
else
	notok "--boottime/--monotonic with --time-dilation" "output: $out"
fi

# measure TDF SECS PROG...: run PROG READY GO in a namespace dilated by TDF,
# with SECS s of host time between READY and GO. Prints "host <s>" and PROG's output
# ("<clock> <inside seconds>" lines). Returns 1 if the handshake failed.
measure() {
	local tdf=$1 secs=$2 pid rfd gfd h0 h1 rc=0 line i
	shift 2
	rm -f "$TMP/ready" "$TMP/go" "$TMP/out"
	mkfifo "$TMP/ready" "$TMP/go"
	# O_RDWR opens of a FIFO do not block, so neither side can hang on open
	exec {rfd}<>"$TMP/ready" {gfd}<>"$TMP/go"
	"$U" --time --time-dilation="$tdf" --fork "$@" "$TMP/ready" "$TMP/go" >"$TMP/out" 2>&1 &
	pid=$!
	# wait for "ready": at most 60 s, and only while the program runs
	line='' i=0
	while [ $i -lt 60 ]; do
		read -r -t 1 -u $rfd line && break
		kill -0 $pid 2>/dev/null || break
		i=$((i + 1))
	done
	if [ "$line" = ready ]; then
		h0=$EPOCHREALTIME
		sleep "$secs"
		h1=$EPOCHREALTIME
		echo go >&$gfd
	else
		kill $pid 2>/dev/null
		rc=1
	fi
	wait $pid || rc=1
	exec {rfd}<&- {gfd}<&-
	[ $rc -eq 0 ] && awk -v a="$h0" -v b="$h1" 'BEGIN { printf "host %.6f\n", b - a }'
	cat "$TMP/out"
	return $rc
}

# clocks read in one process (python3: no process start-up inside the window)
PY_CLOCKS='
import sys, time
CLOCKS = [("CLOCK_REALTIME", time.CLOCK_REALTIME), ("CLOCK_MONOTONIC", time.CLOCK_MONOTONIC),
          ("CLOCK_BOOTTIME", time.CLOCK_BOOTTIME), ("CLOCK_MONOTONIC_RAW", time.CLOCK_MONOTONIC_RAW)]
def now():
    t = {name: time.clock_gettime(c) for name, c in CLOCKS}
    with open("/proc/uptime") as f:
        t["/proc/uptime"] = float(f.read().split()[0])
    return t
t0 = now()
with open(sys.argv[1], "w") as f:
    f.write("ready\n")
with open(sys.argv[2]) as f:
    f.readline()
t1 = now()
for name in t0:
    print(name, "%.6f" % (t1[name] - t0[name]))
'
# date(1) started in the namespace before and after, as a shell would do it
# (the two process starts are inside the measured window)
SH_DATE='d0=$(date +%s.%N); echo ready >"$1"; read -r _ <"$2"; d1=$(date +%s.%N)
	awk -v a="$d0" -v b="$d1" "BEGIN { printf \"date(1) %.6f\n\", b - a }"'

# rate TDF SECS "CLOCK..." PROG...: one TAP point per clock
rate() {
	local tdf=$1 secs=$2 clocks=$3 try res bad c host='' in hi all
	shift 3
	for try in 1 2 3; do
		host=
		res=$(measure "$tdf" "$secs" "$@") || { res="handshake failed: $res"; continue; }
		host=$(echo "$res" | awk '$1 == "host" { print $2 }')
		bad=0 all=1
		for c in $clocks; do
			in=$(echo "$res" | awk -v c="$c" '$1 == c { print $2 }')
			hi=1.03; [ "$c" = /proc/uptime ] && hi=1.05
			case $(awk -v h="$host" -v i="$in" -v t="$tdf" -v hi="$hi" 'BEGIN {
				if (i == "" || i <= 0) { print "bad"; exit }
				r = h / i / t
				print (r > hi) ? "bad" : (r < 0.8) ? "low" : "ok" }') in
			bad) bad=1 ;;
			low) all=0 ;;
			esac
		done
		[ $bad = 1 ] || [ $all = 1 ] && break
	done
	for c in $clocks; do
		in=$(echo "$res" | awk -v c="$c" '$1 == c { print $2 }')
		hi=1.03; [ "$c" = /proc/uptime ] && hi=1.05
		if [ -n "$host" ] && [ -n "$in" ] && awk -v h="$host" -v i="$in" -v t="$tdf" -v hi="$hi" \
			'BEGIN { r = h / i / t; exit !(i > 0 && r >= 0.8 && r <= hi) }'; then
			ok "$c at 1/$tdf of the host rate: ${in}s inside for ${host}s of host time (ratio $(awk -v h="$host" -v i="$in" 'BEGIN { printf "%.2f", h / i }'), attempt $try)"
		else
			notok "$c at 1/$tdf of the host rate" "attempt $try: host ${host:-?}s, inside ${in:-?}s; want host/inside in [$(awk -v t="$tdf" -v hi="$hi" 'BEGIN { print 0.8 * t ", " hi * t }')]" "$res"
		fi
	done
}

rate 10 "$H" "CLOCK_REALTIME CLOCK_MONOTONIC CLOCK_BOOTTIME CLOCK_MONOTONIC_RAW /proc/uptime" \
	python3 -c "$PY_CLOCKS"
# two date(1) runs are inside the window: ~0.2 s each under TCG, so a longer one
rate 10 "$((2 * H))" "date(1)" bash -c "$SH_DATE" _
rate 0.5 "$H" "CLOCK_MONOTONIC" python3 -c "$PY_CLOCKS"

[ $n -eq $N ] || { echo "# internal error: ran $n of $N points"; exit 1; }
