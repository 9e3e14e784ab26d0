#!/bin/bash
# Perceived disk rate: fio in a node at TDF 10 with --disk DEV,rbps=200MB,wiops=2000
# (io.max rbps=20000000 wiops=200) sees ~200 MB/s and ~2000 IOPS. fio must use
# clock_gettime (its default on x86 may be the undilated TSC). The device is
# null_blk (no media latency; reads return zeros) or a loop device on tmpfs.
# blk-throttle enforces the limits per 100 ms slice of real time, so over a 1 s
# (perceived) run, i.e. 10 s real, the error is a few %; accepted: +-15%.
# tdc-timeout: 150
. "${TDC_ROOT:-$(dirname "$0")/../..}/tools/tests/lib.sh"
tap_plan 4
need_node_env
command -v fio >/dev/null || { while [ "$TAP_N" -lt 4 ]; do skip "fio" "fio not installed"; done; exit 0; }
DEV=; LOOP=
if [ -b /dev/nullb0 ] || { modprobe null_blk 2>/dev/null && [ -b /dev/nullb0 ]; }; then DEV=/dev/nullb0
else
	truncate -s 256M "$TMPD/disk.img" && LOOP=$(losetup -f --show "$TMPD/disk.img" 2>/dev/null) && DEV=$LOOP
fi
if [ -z "$DEV" ]; then
	while [ "$TAP_N" -lt 4 ]; do skip "fio" "no null_blk or loop device"; done; exit 0
fi
ok "block device $DEV"
fio_in_node() { # fio_in_node FIO-ARGS...: prints the JSON
	"$DN" run --quiet --no-net --tdf 10 --name f1 --disk "$DEV,rbps=200MB,wiops=2000" -- \
		fio --name=t --filename="$DEV" --direct=1 --ioengine=psync --clocksource=clock_gettime \
		--runtime=1 --time_based --output-format=json "$@"
}
t0=$(date +%s.%N)
js=$(fio_in_node --rw=read --bs=64k 2>&1)
t1=$(date +%s.%N)
rbw=$(python3 -c 'import json,sys; s=sys.stdin.read(); d=json.loads(s[s.find("{"):]); print("%.1f" % (d["jobs"][0]["read"]["bw_bytes"]/1e6))' <<<"$js" 2>/dev/null)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
note "sequential read: ${rbw:-?} MB/s perceived, run took $wall s real"
if [ -n "$rbw" ] && within "$rbw" 170 230; then ok "read ${rbw} MB/s perceived in [170, 230] (perceived device: 200 MB/s)"
else notok "read ${rbw:-none} MB/s perceived in [170, 230]" "$(tail -5 <<<"$js")"; fi
js=$(fio_in_node --rw=randwrite --bs=4k 2>&1)
wiops=$(python3 -c 'import json,sys; s=sys.stdin.read(); d=json.loads(s[s.find("{"):]); print("%.0f" % d["jobs"][0]["write"]["iops"])' <<<"$js" 2>/dev/null)
note "random write: ${wiops:-?} IOPS perceived"
if [ -n "$wiops" ] && within "$wiops" 1700 2300; then ok "write ${wiops} IOPS perceived in [1700, 2300] (perceived device: 2000)"
else notok "write ${wiops:-none} IOPS perceived in [1700, 2300]" "$(tail -5 <<<"$js")"; fi
if within "$wall" 9 40; then ok "1 s perceived run took $wall s real"; else notok "1 s perceived run took $wall s real, want [9, 40]"; fi
[ -n "$LOOP" ] && losetup -d "$LOOP"
echo "fio read_MBps=$rbw write_iops=$wiops wall_s=$wall" >> "$OUT/node-figures.txt" 2>/dev/null
exit 0
