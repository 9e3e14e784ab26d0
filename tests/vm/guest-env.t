#!/bin/bash
# In-VM check that the guest kernel has what the project's tests rely on
# (namespaces, cgroup v2 controllers, qdiscs, veth/bridge, block devices).
# tdc-timeout: 120
set -u
n=0
t() { # t DESC CMD...
	n=$((n + 1))
	local out
	if out=$("${@:2}" 2>&1); then echo "ok $n $1"; else echo "not ok $n $1"; echo "$out" | sed 's/^/# /' | head -5; fi
}
echo "TAP version 13"
echo "1..15"
t "time namespace (unshare --time --fork)" unshare --time --fork true
t "/proc/self/timens_offsets" test -e /proc/self/timens_offsets
n=$((n + 1))
if [ -e /proc/self/timens_dilation ]; then
	echo "ok $n /proc/self/timens_dilation"
elif ls "${TDC_ROOT:-.}"/kernel/patches/*.patch >/dev/null 2>&1; then
	echo "not ok $n /proc/self/timens_dilation missing although kernel/patches is not empty"
else
	echo "ok $n /proc/self/timens_dilation # SKIP kernel/patches is empty"
fi
t "user, pid, net, ipc, uts, mount namespaces" unshare --user --map-root-user --pid --fork --net --ipc --uts --mount true

CG=/sys/fs/cgroup
grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts || { mkdir -p /tmp/cg2 && mount -t cgroup2 none /tmp/cg2 && CG=/tmp/cg2; }
for c in cpu io memory pids; do
	t "cgroup v2 controller $c" grep -qw $c $CG/cgroup.controllers
done
mkdir -p $CG/tdc-env-test
echo "+cpu +io +memory" > $CG/cgroup.subtree_control 2>/dev/null
t "cgroup cpu.max / io.max / memory.max" test -e $CG/tdc-env-test/cpu.max -a -e $CG/tdc-env-test/io.max -a -e $CG/tdc-env-test/memory.max
rmdir $CG/tdc-env-test 2>/dev/null

t "veth pair" ip link add tdcv0 type veth peer name tdcv1
t "netem qdisc" tc qdisc add dev tdcv0 root netem delay 10ms
tc qdisc del dev tdcv0 root 2>/dev/null
t "tbf and htb qdiscs" sh -c 'tc qdisc add dev tdcv0 root tbf rate 1mbit burst 32kbit latency 400ms && tc qdisc del dev tdcv0 root && tc qdisc add dev tdcv0 root handle 1: htb'
ip link del tdcv0 2>/dev/null
t "bridge" sh -c 'ip link add tdcbr0 type bridge && ip link del tdcbr0'
t "null_blk /dev/nullb0" test -b /dev/nullb0
t "loop device" sh -c 'f=$(mktemp) && truncate -s 16M $f && d=$(losetup -f --show $f) && losetup -d $d; rm -f $f'
