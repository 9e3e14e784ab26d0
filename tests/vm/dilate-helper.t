#!/bin/bash
# In-VM smoke test of build/bin/dilate (used by `make demo`): a TDF-10
# namespace sees /proc/uptime advance about 10x slower than the host.
# tdc-timeout: 120
set -u
echo "TAP version 13"
echo "1..3"
D=${TDC_ROOT:-.}/build/bin/dilate
if [ ! -e /proc/self/timens_dilation ]; then
	for i in 1 2 3; do echo "ok $i dilate # SKIP kernel without timens_dilation"; done
	exit 0
fi
if [ ! -x "$D" ]; then
	for i in 1 2 3; do echo "not ok $i dilate: $D not built"; done
	exit 1
fi
r=$("$D" 10 cat /proc/self/timens_dilation 2>&1)
[ "$r" = 10 ] && echo "ok 1 dilate 10: timens_dilation reads 10" || echo "not ok 1 dilate 10: read '$r'"
"$D" 10 sh -c 'exit 7'; rc=$?
[ $rc = 7 ] && echo "ok 2 exit status passed through" || echo "not ok 2 exit status $rc, want 7"
h0=$(cut -d" " -f1 /proc/uptime)
el=$("$D" 10 sh -c 'a=$(cut -d" " -f1 /proc/uptime); sleep 0.3; b=$(cut -d" " -f1 /proc/uptime); awk -v a=$a -v b=$b "BEGIN{print b-a}"')
h1=$(cut -d" " -f1 /proc/uptime)
host=$(awk -v a="$h0" -v b="$h1" 'BEGIN { print b - a }')
if awk -v i="$el" -v h="$host" 'BEGIN { exit !(h >= 2.5 && i >= 0.25 && i < 0.5) }'; then
	echo "ok 3 sleep 0.3 inside took ${host}s of host time (inside: ${el}s)"
else
	echo "not ok 3 sleep 0.3 inside: host ${host}s (want >= 3), inside ${el}s (want ~0.3)"
fi
