#!/bin/bash
# dilated-node: what is applied (netem on both veth ends, cpu.max, io.max, TDF,
# cgroup, addresses) is the scaled profile, and everything goes away on
# SIGTERM, SIGINT and normal exit. The node's ARP and NDP times are the
# TDF x the kernel's, so two TDF-100 nodes whose round trip (4 host seconds)
# outlasts ARP's host-time limit (3 s) still find each other.
# tdc-timeout: 240
. "${TDC_ROOT:-$(dirname "$0")/../..}/tools/tests/lib.sh"
tap_plan 22

# 1: plan works without root (runs before the environment check)
if out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$DN" plan --tdf 10 --profile wan-transcontinental-100m --cpus 2 --name p 2>&1) &&
	grep -q '^netem down dn-p limit 1000 delay 400ms 5ms rate 10Mbit$' <<<"$out" &&
	grep -q '^cpu.max 2000 10000 ' <<<"$out"; then
	ok "plan without root prints the scaled parameters"
elif [ ! -x "$DN" ]; then
	skip "plan without root" "$DN not built"
else
	notok "plan without root prints the scaled parameters" "$out"
fi
need_node_env

# a block device for io.max: null_blk, else a loop device on a tmpfs file
DEV=
if [ -b /dev/nullb0 ]; then DEV=/dev/nullb0
elif modprobe null_blk 2>/dev/null && [ -b /dev/nullb0 ]; then DEV=/dev/nullb0
else
	truncate -s 64M "$TMPD/disk.img" && DEV=$(losetup -f --show "$TMPD/disk.img" 2>/dev/null) || DEV=
fi
DISKARG=()
[ -n "$DEV" ] && DISKARG=(--disk "$DEV,rbps=400MB,wbps=200MB,riops=20k,wiops=10k")

export READY=$TMPD/b1.ready
if start_node b1 --tdf 10 --profile wan-transcontinental-100m --cpus 1 "${DISKARG[@]}" --rto-min -- sh -c "$READY_CMD"; then
	ok "node starts (TDF 10, wan-transcontinental-100m, 1 CPU)"
else
	notok "node starts" "$(cat "$TMPD/b1.err")"
	skip_rest "node did not start"
fi
sed "s/^/# /" "$TMPD/b1.err"

q=$(tc qdisc show dev dn-b1)
note "host: $q"
if grep -q 'netem' <<<"$q" && grep -q 'limit 1000 ' <<<"$q" && grep -Eq 'delay 400ms +5ms' <<<"$q" && grep -q 'rate 10Mbit' <<<"$q"; then
	ok "host end dn-b1: netem limit 1000 delay 400ms 5ms rate 10Mbit"
else notok "host end dn-b1 netem" "$q"; fi

q=$(nsenter -t "$NODE_INNER" -n tc qdisc show dev eth0)
note "node: $q"
if grep -Eq 'delay 400ms +5ms' <<<"$q" && grep -q 'rate 10Mbit' <<<"$q"; then
	ok "node end eth0: netem delay 400ms 5ms rate 10Mbit"
else notok "node end eth0 netem" "$q"; fi

check "cpu.max is 1000 10000" test "$(cat "$CG/dilated-node/b1/cpu.max")" = "1000 10000"
if [ -n "$DEV" ]; then
	mm=$(lsblk -dno MAJ:MIN "$DEV" | tr -d ' ')
	io=$(cat "$CG/dilated-node/b1/io.max")
	if [ "$io" = "$mm rbps=40000000 wbps=20000000 riops=2000 wiops=1000" ]; then ok "io.max is $io"
	else notok "io.max scaled" "got: $io"; fi
else
	skip "io.max scaled" "no null_blk or loop device"
fi
check "TDF in the node is 10" test "$(cat /proc/$NODE_INNER/timens_dilation)" = 10
check "node is in cgroup dilated-node/b1" grep -qx '0::/dilated-node/b1' /proc/$NODE_INNER/cgroup
check "node has 10.213.0.2/24 and a default route with rto_min 2000ms" \
	sh -c "nsenter -t $NODE_INNER -n ip -4 addr show eth0 | grep -q 'inet 10.213.0.2/24' &&
	       nsenter -t $NODE_INNER -n ip route show default | grep -q 'rto_min lock 2s'"
check "host bridge dnbr0 has 10.213.0.1/24" sh -c "ip -4 addr show dnbr0 | grep -q 'inet 10.213.0.1/24'"
ref=$(neigh_times dn-b1)
nt=$(neigh_times nsenter -t "$NODE_INNER" -n eth0)
bad=$(neigh_dilated 10 "$ref" "$nt")
if [ -z "$bad" ] && grep -q '^arp_cache retrans ' <<<"$nt" && grep -q '^ndisc_cache retrans ' <<<"$nt"; then
	ok "ARP and NDP times of the node's eth0 are 10 x the host end's ($(grep '^arp_cache retrans ' <<<"$nt"))"
else
	notok "ARP and NDP times of the node's eth0 are 10 x the host end's" "$bad
node: $nt
host end: $ref"
fi

stop_node "$NODE_PID" TERM
left=$(leftovers)
if [ -z "$left" ]; then ok "SIGTERM: nothing left behind"; else notok "SIGTERM: nothing left behind" "$left"; fi

# asymmetric profile, SIGINT
export READY=$TMPD/b2.ready
if start_node b2 --tdf 10 --profile dsl -- sh -c "$READY_CMD"; then
	down=$(tc qdisc show dev dn-b2); up=$(nsenter -t "$NODE_INNER" -n tc qdisc show dev eth0)
	note "down: $down"; note "up: $up"
	if grep -q 'rate 1600Kbit' <<<"$down" && grep -q 'rate 100Kbit' <<<"$up" && grep -q 'limit 300 ' <<<"$up" &&
		grep -Eq 'delay 125ms +10ms' <<<"$up"; then
		ok "dsl: down 1600Kbit on the host end, up 100Kbit on the node end, delay 125ms"
	else notok "dsl asymmetric" "$down / $up"; fi
else
	notok "dsl node starts" "$(cat "$TMPD/b2.err")"
fi
stop_node "$NODE_PID" INT
left=$(leftovers)
if [ -z "$left" ]; then ok "SIGINT: nothing left behind"; else notok "SIGINT: nothing left behind" "$left"; fi

# exit status, normal exit, no network
"$DN" run --quiet --tdf 5/2 --no-net --cpus 0.5 --name b3 -- sh -c 'test "$(cat /proc/self/timens_dilation)" = 5/2 && exit 7'
rc=$?
check "exit status of the command is returned (7), TDF 5/2 seen inside" test "$rc" = 7
left=$(leftovers)
if [ -z "$left" ]; then ok "normal exit: nothing left behind"; else notok "normal exit: nothing left behind" "$left"; fi

# two nodes at once, then a SIGKILLed one is cleaned by 'cleanup'; b4's
# profile seeds netem's random number generator, each direction its own seed
printf 'description = "seeded"\n[link]\ndelay = "1ms"\n[down]\nseed = 11\n[up]\nseed = 9223372036854775807\n' >"$TMPD/seeded.toml"
export READY=$TMPD/b4.ready; start_node b4 --tdf 10 --profile "$TMPD/seeded.toml" -- sh -c "$READY_CMD"; P4=$NODE_PID; I4=$NODE_INNER
seeds="$("$ROOT/tools/tests/netem-seed" dn-b4 2>&1) $(nsenter -t "$I4" -n "$ROOT/tools/tests/netem-seed" eth0 2>&1)"
check "seeded profile: the kernel's netem seeds are 11 (host end) and 2^63-1 (node end), got $seeds" \
	test "$seeds" = "11 9223372036854775807"
export READY=$TMPD/b5.ready; start_node b5 --tdf 10 -- sh -c "$READY_CMD"; P5=$NODE_PID
check "two nodes share dnbr0 and reach each other" nsenter -t "$I4" -n ping -c 1 -W 5 10.213.0.3
stop_node "$P4" TERM
kill -KILL "$P5"; wait "$P5" 2>/dev/null
sleep 1; "$DN" cleanup
sleep 0.5
left=$(leftovers)
if [ -z "$left" ]; then ok "after SIGKILL, dilated-node cleanup leaves nothing"; else notok "cleanup after SIGKILL" "$left"; fi

# Two TDF-100 nodes, 10 ms perceived each way on each end (1 host s per
# netem, 4 netems a round trip): perceived RTT 40 ms, 4 host s. Unscaled,
# ARP gives up after mcast_probes x retrans = 3 host s. The first echo
# waits for ARP, so it takes two round trips: 80 ms perceived (half or
# twice the TDF in the kernel or the netem would give 160 or 40 ms).
printf 'description = "10 ms each way"\n[link]\ndelay = "10ms"\n' >"$TMPD/far.toml"
export READY=$TMPD/b6.ready; start_node b6 --tdf 100 --profile "$TMPD/far.toml" -- sh -c "$READY_CMD"; P6=$NODE_PID; I6=$NODE_INNER
export READY=$TMPD/b7.ready; start_node b7 --tdf 100 --profile "$TMPD/far.toml" -- sh -c "$READY_CMD"; P7=$NODE_PID; I7=$NODE_INNER
A6=$(nsenter -t "$I6" -n ip -4 -o addr show eth0 2>/dev/null | awk '{sub("/.*", "", $4); print $4}')
A7=$(nsenter -t "$I7" -n ip -4 -o addr show eth0 2>/dev/null | awk '{sub("/.*", "", $4); print $4}')
# (ping in the node's time namespace too: -T; its times are perceived)
out=$(timeout 60 nsenter -t "$I6" -n -T ping -n -c 1 -W 1 "$A7" 2>&1)
rtt=$(sed -n 's/.* time=\([0-9.]*\) ms.*/\1/p' <<<"$out")
if [ -n "$rtt" ] && awk -v r="$rtt" 'BEGIN { exit !(r >= 78 && r <= 100) }'; then
	ok "TDF 100, 40 ms perceived RTT: $A6 resolves and pings $A7, first echo ${rtt} ms (ARP + echo, 78-100)"
else
	notok "TDF 100, 40 ms perceived RTT: $A6 resolves and pings $A7 in 78-100 ms" "${A6:-no node b6} -> ${A7:-no node b7}: $out"
fi
# the control: with ARP's retrans back at the kernel's 1000 ms (host time),
# the same echo gets no answer in 200 ms perceived (20 host s)
nsenter -t "$I6" -n ip neigh flush dev eth0
nsenter -t "$I7" -n ip neigh flush dev eth0
nsenter -t "$I6" -n ip ntable change name arp_cache dev eth0 retrans 1000
out=$(timeout 60 nsenter -t "$I6" -n -T ping -n -c 1 -W 0.2 "$A7" 2>&1); rc=$?
echo "$out" | sed 's/^/# control: /'
if [ "$rc" != 0 ] && ! grep -q ' time=' <<<"$out" && grep -q 'Destination Host Unreachable' <<<"$out" && [ -n "$A7" ]; then
	ok "control: with retrans 1000 ms in host time, ARP gives up (ping exit $rc, Destination Host Unreachable)"
else
	notok "control: with retrans 1000 ms in host time, ARP gives up" "rc=$rc: $out"
fi
stop_node "$P6" TERM
stop_node "$P7" TERM
left=$(leftovers)
if [ -z "$left" ]; then ok "TDF-100 pair: nothing left behind"; else notok "TDF-100 pair: nothing left behind" "$left"; fi
[ -n "$DEV" ] && [ "${DEV#/dev/loop}" != "$DEV" ] && losetup -d "$DEV"
exit 0
