#!/bin/bash
# Perceived RTT: a node at TDF 10 on wan-transcontinental-100m (80 ms RTT)
# pings the host and measures ~80 ms with its dilated clock, while the host,
# pinging the node with the real clock, measures ~800 ms.
# Tolerances: netem cannot deliver early, so the lower bound is 80 ms minus
# the +-0.5 ms jitter per direction (-5% leaves room); the upper bound allows
# +15% for the undilated path (veth, bridge, ICMP handling: a few ms of real
# time under QEMU TCG, divided by 10 inside the node). The host/node ratio of
# the averages must be 10 +- 10%. Then the same ping inside the node without
# -U: iputils then takes the kernel's receive timestamp, which the kernel
# reports in the node's own CLOCK_REALTIME (before it did not: host time),
# so it must show the perceived RTT too.
# tdc-timeout: 150
. "${TDC_ROOT:-$(dirname "$0")/../..}/tools/tests/lib.sh"
tap_plan 5
need_node_env
# iputils ping with -U (user-to-user: gettimeofday() at both ends; without -U
# it uses the kernel's receive timestamp, checked last), or busybox ping
# (always user-space monotonic time).
if ping -V 2>&1 | grep -q iputils; then PING=(ping -U)
elif command -v busybox >/dev/null && busybox ping 2>&1 | grep -qi usage; then PING=(busybox ping)
else while [ "$TAP_N" -lt 5 ]; do skip "ping" "no iputils or busybox ping"; done; exit 0; fi

export READY=$TMPD/r1.ready
if start_node r1 --tdf 10 --profile wan-transcontinental-100m -- sh -c "$READY_CMD"; then
	ok "node at TDF 10 with wan-transcontinental-100m"
else
	notok "node starts" "$(cat "$TMPD/r1.err")"; skip_rest "no node"
fi
# one ping first: the first packet also waits for ARP (another round trip)
nsenter -t "$NODE_INNER" -n -T "${PING[@]}" -q -c 1 -w 10 10.213.0.1 >/dev/null 2>&1
# -w (a real-time alarm) rather than ping's own linger time: that one is
# computed from the (perceived) RTT but waited in real time (timers are not
# dilated), so ping would give up on the last reply.
in=$(nsenter -t "$NODE_INNER" -n -T "${PING[@]}" -q -c 6 -i 0.2 -w 20 10.213.0.1 2>&1)
sed "s/^/# /" <<<"$in"
node_avg=$(sed -n 's#.*= [0-9.]*/\([0-9.]*\)/.*#\1#p' <<<"$in")
node_min=$(sed -n 's#.*= \([0-9.]*\)/.*#\1#p' <<<"$in")
host=$("${PING[@]}" -q -c 4 -i 0.3 -w 20 10.213.0.2 2>&1)
sed "s/^/# /" <<<"$host"
host_avg=$(sed -n 's#.*= [0-9.]*/\([0-9.]*\)/.*#\1#p' <<<"$host")
note "perceived (node) avg ${node_avg:-?} ms min ${node_min:-?} ms; host avg ${host_avg:-?} ms"
if [ -n "$node_avg" ] && within "$node_avg" 76 92; then ok "perceived RTT ${node_avg} ms in [76, 92] (profile: 80 ms)"
else notok "perceived RTT ${node_avg:-none} ms in [76, 92]"; fi
if [ -n "$host_avg" ] && within "$host_avg" 760 920; then ok "host-side RTT ${host_avg} ms in [760, 920] (10 x 80 ms)"
else notok "host-side RTT ${host_avg:-none} ms in [760, 920]"; fi
if [ -n "$host_avg" ] && [ -n "$node_avg" ]; then
	ratio=$(awk -v h="$host_avg" -v n="$node_avg" 'BEGIN { printf "%.2f", h / n }')
	if within "$ratio" 9 11; then ok "host/node RTT ratio $ratio in [9, 11]"
	else notok "host/node RTT ratio $ratio in [9, 11]"; fi
else
	notok "host/node RTT ratio"
fi
if [ "${PING[0]}" = ping ]; then
	in=$(nsenter -t "$NODE_INNER" -n -T ping -q -c 6 -i 0.2 -w 20 10.213.0.1 2>&1)
	sed "s/^/# /" <<<"$in"
	stamp_avg=$(sed -n 's#.*= [0-9.]*/\([0-9.]*\)/.*#\1#p' <<<"$in")
	if [ -n "$stamp_avg" ] && within "$stamp_avg" 76 92; then
		ok "perceived RTT from the kernel's receive timestamps (ping without -U) ${stamp_avg} ms in [76, 92]"
	else
		notok "perceived RTT from the kernel's receive timestamps (ping without -U) ${stamp_avg:-none} ms in [76, 92]"
	fi
else
	skip "ping without -U" "busybox ping has no kernel timestamps"
fi
stop_node "$NODE_PID"
echo "rtt node_avg_ms=$node_avg host_avg_ms=$host_avg" >> "$OUT/node-figures.txt" 2>/dev/null
exit 0
