#!/bin/bash
# In-VM smoke test of build/bin/dilate (used by `make demo`): a TDF-10
# namespace sees /proc/uptime advance 10x slower than the host, and its
# sleeps last 10x longer.
# tdc-timeout: 120
set -u
echo "TAP version 13"
echo "1..4"
D=${TDC_ROOT:-.}/build/bin/dilate
if [ ! -e /proc/self/timens_dilation ]; then
	for i in 1 2 3 4; do echo "not ok $i dilate: kernel without timens_dilation"; done
	exit 1
fi
if [ ! -x "$D" ]; then
	for i in 1 2 3 4; do echo "not ok $i dilate: $D not built"; done
	exit 1
fi
r=$("$D" 10 cat /proc/self/timens_dilation 2>&1)
[ "$r" = 10 ] && echo "ok 1 dilate 10: timens_dilation reads 10" || echo "not ok 1 dilate 10: read '$r'"
"$D" 10 sh -c 'exit 7'; rc=$?
[ $rc = 7 ] && echo "ok 2 exit status passed through" || echo "not ok 2 exit status $rc, want 7"
# 3: the namespace's /proc/uptime runs at 1/10 of the host's. The child prints
# its uptime, waits for a line, prints it again; the host notes its own clock
# when each line arrives, so host and namespace measure nearly the same
# interval (5 s of host time; /proc/uptime's 10 ms steps are 100 ms of host
# time at TDF 10: 2%). 4: a `sleep 0.3` inside lasts 3 s of host time. Both
# bounded on both sides, so that half or twice the factor fails; a late
# wake-up (only the upper bound missed) is tried again, twice at most.
rate_ok=; sleep_ok=
for try in 1 2 3; do
	coproc DIL { "$D" 10 sh -c 'cut -d" " -f1 /proc/uptime; read x; cut -d" " -f1 /proc/uptime; read x; sleep 0.3; echo slept' 2>&1; }
	read -r u0 <&"${DIL[0]}"; h0=$EPOCHREALTIME
	sleep 5
	echo go >&"${DIL[1]}"; read -r u1 <&"${DIL[0]}"; h1=$EPOCHREALTIME
	s0=$EPOCHREALTIME; echo go >&"${DIL[1]}"; read -r slept <&"${DIL[0]}"; s1=$EPOCHREALTIME
	wait "$DIL_PID" 2>/dev/null
	rate=$(awk -v a="$u0" -v b="$u1" -v h0="$h0" -v h1="$h1" 'BEGIN { d = b - a; if (d <= 0) print "inf"; else printf "%.3f", (h1 - h0) / d }')
	host=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.3f", b - a }')
	echo "# try $try: namespace uptime $u0 -> $u1 over $(awk -v a="$h0" -v b="$h1" 'BEGIN{printf "%.3f", b-a}') s of host time: ratio $rate; sleep 0.3 inside: $host s of host time ($slept)"
	if [ -z "$rate_ok" ] && awk -v r="$rate" 'BEGIN { exit !(r != "inf" && r >= 9.0 && r <= 11.0) }'; then
		rate_ok="ratio $rate (try $try)"
	fi
	if awk -v h="$host" 'BEGIN { exit !(h < 3.0) }'; then
		# the lower bound is exact: a shorter sleep is a dilation bug, not noise
		sleep_ok=; sleep_bad="sleep 0.3 inside lasted only $host s of host time (< 3 s)"
		break
	fi
	if [ -z "$sleep_ok" ] && awk -v h="$host" 'BEGIN { exit !(h <= 4.5) }'; then
		sleep_ok="$host s (try $try)"
	fi
	sleep_bad="sleep 0.3 inside lasted $host s of host time, want [3, 4.5]"
	[ -n "$rate_ok" ] && [ -n "$sleep_ok" ] && break
done
if [ -n "$rate_ok" ]; then
	echo "ok 3 /proc/uptime inside runs at 1/10 of the host's: $rate_ok, want [9, 11]"
else
	echo "not ok 3 /proc/uptime inside runs at 1/10 of the host's: ratio $rate in all 3 tries, want [9, 11]"
fi
if [ -n "$sleep_ok" ]; then
	echo "ok 4 sleep 0.3 inside lasts 3 s of host time: $sleep_ok, want [3, 4.5]"
else
	echo "not ok 4 $sleep_bad"
fi
