#!/bin/bash
# Faults in dilated-node's setup: for every setup step (tools/node FaultSteps:
# record, cgroup, cpu.max, io.max, bridge, veth, qdisc-down, netns, tdf,
# veth-move, address, qdisc-up, neighbour, route, running), the test-only hook
# TDC_FAULT_AFTER=STEP makes `dilated-node run` fail right after it: the run
# must exit non-zero with one line naming the fault, and leave nothing behind;
# TDC_FAULT_AFTER=STEP:kill makes it SIGKILL itself there (no teardown): the
# run dies by SIGKILL and `dilated-node cleanup --name N` must remove all.
# "Nothing" is checked with ip link, tc qdisc, ip route, ip netns, the cgroup
# tree, pgrep, the node records, and the set of network and time namespaces
# of all processes (compared with the set before the test). Then a node
# SIGKILLed while its command runs with a background child (which survives
# its parent), and a node whose command exits leaving a background child:
# both must leave nothing either (cleanup, or the teardown, kills it).
# Missing prerequisites (root, the patched kernel, the tool, a block device)
# are failures.
# tdc-timeout: 900
. "${TDC_ROOT:-$(dirname "$0")/../..}/tools/tests/lib.sh"
STEPS=(record cgroup cpu.max io.max bridge veth qdisc-down netns tdf veth-move address qdisc-up neighbour route running)
N=$((2 * ${#STEPS[@]} + 5))
tap_plan $N
fail_rest() { while [ "$TAP_N" -lt "$N" ]; do notok "node fault test: $1"; done; exit 0; }
if [ "$(id -u)" != 0 ]; then fail_rest "not root"
elif [ ! -e /proc/self/timens_dilation ]; then fail_rest "kernel without /proc/self/timens_dilation"
elif [ ! -x "$DN" ]; then fail_rest "$DN not built (make -C tools build)"
fi
for c in ip tc pgrep losetup; do command -v $c >/dev/null || fail_rest "$c not installed"; done
if ! grep -q ' - cgroup2 ' /proc/self/mountinfo; then
	mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null || fail_rest "cannot mount cgroup2"
fi
CG=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
export DILATED_NODE_RUN_DIR=$TMPD/run
# the steps must be the tool's: a step added there needs a point here
want=$(TDC_FAULT_AFTER=nosuchstep "$DN" run --tdf 10 --name x -- true 2>&1)
for s in "${STEPS[@]}"; do grep -q "[(, ]$s[,;]" <<<"$want" || fail_rest "step $s unknown to the tool: $want"; done
DEV=
if [ -b /dev/nullb0 ] || { modprobe null_blk 2>/dev/null && [ -b /dev/nullb0 ]; }; then DEV=/dev/nullb0
else truncate -s 64M "$TMPD/disk.img" && DEV=$(losetup -f --show "$TMPD/disk.img" 2>/dev/null) || DEV=; fi
[ -b "$DEV" ] || fail_rest "no null_blk or loop device for --disk"

nsset() { # the network and time namespaces of all processes (one find: TCG forks slowly)
	find /proc/[0-9]*/ns -maxdepth 1 \( -name net -o -name time \) -printf '%l\n' 2>/dev/null | grep . | sort -u
}
BASE_NS=$(nsset)
# left: everything a node might have left behind, one item a line
left() {
	timeout 20 ip -o link show 2>&1 | awk -F': ' '{print $2}' | grep -E '^(dn-|dnp-|dnbr)' | sed 's/^/link /'
	timeout 20 tc qdisc show 2>&1 | grep -w netem | sed 's/^/qdisc /'
	timeout 20 ip route show 2>&1 | grep -F '10.213.' | sed 's/^/route /'
	timeout 20 ip netns list 2>&1 | sed 's/^/netns /'
	[ -e "$CG/dilated-node" ] && echo "cgroup $CG/dilated-node: $(ls "$CG/dilated-node" 2>/dev/null | tr '\n' ' ')"
	timeout 20 pgrep -af '[s]leep 10000[0-9]|dilated-node [_]_exec' | sed 's/^/process /'
	ls "$DILATED_NODE_RUN_DIR" 2>/dev/null | sed 's/^/record /'
	comm -13 <(printf '%s\n' "$BASE_NS") <(nsset) | sed 's/^/namespace /'
	return 0
}
l=$(left)
[ -z "$l" ] || fail_rest "leftovers before the test: $l"
NODEARGS=(--quiet --name fz --tdf 10 --cpus 1 --disk "$DEV,rbps=100MB,wiops=1000" --profile dsl --rto-min)
CMD=(sh -c 'sleep 100001 & exec sleep 100002')

for s in "${STEPS[@]}"; do
	# stderr to a file, not a pipe: a process left holding it must show as
	# left behind, not hang the test
	TDC_FAULT_AFTER=$s timeout -k 5 60 "$DN" run "${NODEARGS[@]}" -- "${CMD[@]}" >/dev/null 2>"$TMPD/err"; rc=$?
	err=$(cat "$TMPD/err")
	lines=$(printf '%s\n' "$err" | wc -l)
	l=$(left)
	if [ "$rc" = 2 ] && [ "$lines" = 1 ] && grep -q "fault injected after step $s " <<<"$err" && [ -z "$l" ]; then
		ok "fault after $s: exit 2, one line, nothing left"
	else
		notok "fault after $s: exit 2, one line, nothing left" "rc=$rc err=$err
left: $l"
		timeout -k 5 60 "$DN" cleanup >/dev/null 2>&1
	fi
done

for s in "${STEPS[@]}"; do
	# (in a subshell: bash's own "Killed" line goes to /dev/null)
	(TDC_FAULT_AFTER=$s:kill timeout -k 5 60 "$DN" run "${NODEARGS[@]}" -- "${CMD[@]}" >/dev/null 2>"$TMPD/err") 2>/dev/null; rc=$?
	err=$(cat "$TMPD/err")
	before=$(left | cut -d' ' -f1 | sort -u | tr '\n' ' ')
	timeout -k 5 60 "$DN" cleanup --name fz >"$TMPD/cerr" 2>&1; crc=$?
	cerr=$(cat "$TMPD/cerr")
	l=$(left)
	if [ "$rc" = 137 ] && [ "$crc" = 0 ] && [ -z "$l" ]; then
		ok "SIGKILL after $s (left: ${before:-nothing}), cleanup --name: nothing left"
	else
		notok "SIGKILL after $s, cleanup --name: nothing left" "rc=$rc err=$err cleanup rc=$crc: $cerr
left: $l
$(ps -eo pid,ppid,stat,wchan:24,cmd | grep -E 'dilated|sleep 1000' | grep -v grep)"
		timeout -k 5 60 "$DN" cleanup >/dev/null 2>&1
	fi
done

# SIGKILL while the command runs with a background child: the child
# survives in the node's namespaces and cgroup until cleanup kills it
export READY=$TMPD/fz.ready
bg_cmd='sleep 100003 & echo $$ > "$READY"; exec sleep 100004'
if start_node fz "${NODEARGS[@]}" -- sh -c "$bg_cmd"; then
	kill -KILL "$NODE_PID"; wait "$NODE_PID" 2>/dev/null
	sleep 0.5
	if pgrep -f 'sleep 100003' >/dev/null; then ok "SIGKILLed node: its background process survives the node"
	else notok "SIGKILLed node: its background process survives the node" "$(left)"; fi
	timeout -k 5 60 "$DN" cleanup >"$TMPD/cerr" 2>&1; crc=$?
	cerr=$(cat "$TMPD/cerr")
	l=$(left)
	if [ "$crc" = 0 ] && [ -z "$l" ]; then ok "cleanup (all) after SIGKILL while running: nothing left"
	else notok "cleanup after SIGKILL while running: nothing left" "rc=$crc $cerr
left: $l"; timeout -k 5 60 "$DN" cleanup >/dev/null 2>&1; fi
else
	notok "SIGKILLed node started" "$(cat "$TMPD/fz.err")"; notok "cleanup after SIGKILL while running" "node did not start"
fi

# a command that exits leaving a background child, without a cgroup (no
# cgroup.kill to fall back on): the teardown kills what runs in the node
READY=$TMPD/d.ready
timeout -k 5 60 "$DN" run --quiet --name fz --tdf 10 --profile dsl -- sh -c 'sleep 100005 & echo $$ > "$READY"; exit 3' >"$TMPD/out" 2>&1; rc=$?
out=$(cat "$TMPD/out")
l=$(left)
if [ "$rc" = 3 ] && [ -s "$READY" ] && [ -z "$l" ]; then ok "command exits leaving a background child: status 3, nothing left"
else notok "command exits leaving a background child: nothing left" "rc=$rc $out
left: $l"; timeout -k 5 60 "$DN" cleanup >/dev/null 2>&1; fi

# cleanup leaves a running node alone, and refuses to clean it by name
READY=$TMPD/fz.ready
if start_node fz --quiet --tdf 10 --profile dsl -- sh -c "$READY_CMD"; then
	timeout -k 5 60 "$DN" cleanup >/dev/null 2>&1; a=$?
	timeout -k 5 60 "$DN" cleanup --name fz >"$TMPD/cerr" 2>&1; b=$?
	cerr=$(cat "$TMPD/cerr")
	if [ "$a" = 0 ] && [ "$b" != 0 ] && grep -q 'is running' <<<"$cerr" && ip link show dn-fz >/dev/null 2>&1 && kill -0 "$NODE_INNER" 2>/dev/null; then
		ok "cleanup leaves a running node alone; cleanup --name of it: $cerr"
	else notok "cleanup leaves a running node alone" "cleanup rc=$a, --name rc=$b: $cerr; $(ip -br link)"; fi
	stop_node "$NODE_PID"
	l=$(left)
	if [ -z "$l" ]; then ok "that node stops on SIGTERM: nothing left"; else notok "that node stops on SIGTERM: nothing left" "$l"; fi
else
	notok "running node for cleanup" "$(cat "$TMPD/fz.err")"; notok "that node stops" "did not start"
fi
exit 0
