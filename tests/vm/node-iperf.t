#!/bin/bash
# Perceived throughput: two nodes at TDF 10 on the bridge. The client node has
# the asymmetric dsl profile (16 Mbit/s down, 1 Mbit/s up, physically 1.6 Mbit/s
# and 100 kbit/s: slow enough for QEMU TCG); the server node is unshaped. iperf3
# measures with the dilated clocks, so it must report the perceived rates.
# Expected goodput is at most rate x 1448/1514 = 95.6% (TCP/IP and Ethernet
# headers: netem's rate counts the 1514-byte frame); slow start and queue
# overflow at the 300-packet limit cost some more over a 2 s (perceived) test,
# hence the accepted range [75%, 100%] of the profile rate. Windows are capped
# (download 96 KB, about twice the 50 KB bandwidth-delay product; upload 32 KB,
# 10x its 3 KB): otherwise TCP fills the 300-packet modem queues, losses and
# recovery make a 2 s test erratic, and the upload queue alone takes 36 s of
# real time to drain at 100 kbit/s.
# tdc-timeout: 200
. "${TDC_ROOT:-$(dirname "$0")/../..}/tools/tests/lib.sh"
tap_plan 5
need_node_env
command -v iperf3 >/dev/null || { while [ "$TAP_N" -lt 5 ]; do skip "iperf3" "iperf3 not installed"; done; exit 0; }

export READY=$TMPD/srv.ready
start_node srv --tdf 10 --addr 10.213.0.10/24 -- sh -c 'echo $$ > "$READY"; exec iperf3 -s' && SRV=$NODE_PID
export READY=$TMPD/cli.ready
if [ -n "${SRV:-}" ] && start_node cli --tdf 10 --profile dsl --addr 10.213.0.11/24 -- sh -c "$READY_CMD"; then
	ok "server node (unshaped) and client node (dsl) at TDF 10"
else
	notok "nodes start" "$(cat "$TMPD/srv.err" "$TMPD/cli.err")"; skip_rest "no nodes"
fi
CLI=$NODE_PID; CIN=$NODE_INNER
sleep 1
# rate MBIT DIRECTION_ARGS: perceived Mbit/s measured by the receiver
measure() {
	local t0 t1 js
	t0=$(date +%s.%N)
	js=$(nsenter -t "$CIN" -n -T iperf3 -c 10.213.0.10 -t 2 -J "$@" 2>&1)
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }' > "$TMPD/wall"
	python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("%.3f" % (d["end"]["sum_received"]["bits_per_second"]/1e6))' <<<"$js" 2>/dev/null ||
		{ echo "$js" | tail -5 | sed 's/^/# /' >&2; echo 0; }
}
down=$(measure -R -w 96K); wd=$(cat "$TMPD/wall")
note "download (host->node direction of the dsl link): $down Mbit/s perceived, iperf3 ran $wd s real"
if within "$down" 12 16; then ok "download $down Mbit/s perceived in [12, 16] (dsl: 16 Mbit/s)"
else notok "download $down Mbit/s perceived in [12, 16]"; fi
up=$(measure -w 32K); wu=$(cat "$TMPD/wall")
note "upload: $up Mbit/s perceived, iperf3 ran $wu s real"
if within "$up" 0.75 1.0; then ok "upload $up Mbit/s perceived in [0.75, 1.0] (dsl: 1 Mbit/s)"
else notok "upload $up Mbit/s perceived in [0.75, 1.0]"; fi
# physical: bytes the host end of the client's veth sent, over the real time
sent=$(tc -s qdisc show dev dn-cli | awk '/Sent/ {print $2; exit}')
note "host end dn-cli sent $sent bytes"
# a 2 s perceived test takes >= 20 s of real time at TDF 10
if within "$wd" 19 60; then ok "a 2 s (perceived) transfer took $wd s real (TDF 10)"
else notok "a 2 s (perceived) transfer took $wd s real, want [19, 60]"; fi
ratio=$(awk -v d="$down" -v u="$up" 'BEGIN { if (u > 0) printf "%.1f", d / u; else print 0 }')
if within "$ratio" 12 20; then ok "asymmetry down/up $ratio in [12, 20] (profile: 16)"
else notok "asymmetry down/up $ratio in [12, 20]"; fi
stop_node "$CLI"; stop_node "$SRV"
echo "iperf down_mbit=$down up_mbit=$up wall_down_s=$wd wall_up_s=$wu" >> "$OUT/node-figures.txt" 2>/dev/null
exit 0
