#!/bin/bash
# tdc-timeout: 600
# Kubernetes path through the CRI (the API the kubelet uses): containerd 1.6
# with its CRI plugin, runtime handler "dilated" (tdf-runtime), CNI bridge +
# host-local + tdf-cni, busybox images; the setup is tests/lib/cri.sh's.
#   1 the CRI plugin is loaded; 2 the images are visible through the CRI
#   3-9 pod with tdf=10, netem=dsl and a container with a 20-CPU limit: the
#     sandbox and the container run, TDF 10 in a time namespace of its own,
#     cpu.max 20000 10000 (the limit read as perceived), netem down on the
#     host end and up on the pod end scaled by 10 (and the pod end's ARP and
#     NDP times x 10), CNI CHECK passes, clock
#     rate 1/10 of the host's (bracketed from outside)
#   10 a pod without annotations (same handler): untouched
#   11, 12 a bad TDF, an unknown netem profile: the pod fails with one line
#     (tdf-runtime's, tdf-cni's), nothing left
#   13 removing the pods leaves nothing (containers, runc state, cgroups,
#     veths, qdiscs, netns, IP allocations)
set -u
export LC_ALL=C
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
S=${CRI_TEST_SLEEP:-30}     # host seconds between two clock reads
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/container.sh"
. "$ROOT/tests/lib/cri.sh"
. "$ROOT/tests/lib/neigh.sh"
tap_plan 13
cri_setup
mkdir -p "$T/ctl" "$T/ctl2"

# 1: the CRI plugin is built in and loaded
out=$(ctr --address "$SOCK" plugins ls 2>&1)
if grep -Eq '^io\.containerd\.grpc\.v1 +cri +.* ok *$' <<<"$out"; then
	ok "containerd's CRI plugin is loaded ($(cri version))"
else
	notok "containerd's CRI plugin is loaded" "$(grep -i cri <<<"$out")"
fi

# 2: images from busybox-static, imported into the k8s.io namespace
out=$( { cri_mkimage pause localhost/tdf-pause:1 /bin/sh -c 'trap "exit 0" TERM; while :; do sleep 3600 & wait; done' &&
	cri_mkimage busybox localhost/tdf-busybox:1 /bin/sh; } 2>&1)
if [ $? -eq 0 ]; then ok "images imported, visible through the CRI"; else notok "images imported" "$out"; fail_rest "no images"; fi

# 3-9: the dilated pod
podjson tdf-pod uid-tdf-1 "{\"$KEY\": \"10\", \"$NKEY\": \"dsl\"}" >"$T/pod.json"
mkfifo "$T/ctl/a"
# shellcheck disable=SC2016 # expanded in the container
ctrjson c1 "$T/ctl" 2000000 'cat /proc/self/timens_dilation > /ctl/tdf; echo ready >> /ctl/out
	n=0; trap "exit 0" TERM
	while read x < /ctl/a && [ "$x" = go ]; do read u r < /proc/uptime; n=$((n + 1)); echo "u$n $u" >> /ctl/out; done
	while :; do sleep 3600 & wait; done' >"$T/c1.json"
if POD=$(cri runp -r dilated "$T/pod.json" 2>&1); then
	ok "RunPodSandbox (handler dilated, $KEY=10, $NKEY=dsl)"
else
	notok "RunPodSandbox (handler dilated)" "$POD
$(tail -5 "$T/containerd.log")"
	fail_rest "no dilated pod"
fi
if C1=$(cri create "$POD" "$T/c1.json" "$T/pod.json" 2>&1) && out=$(cri start "$C1" 2>&1) &&
	container_wait_line "$T/ctl/out" 120 "" '^ready$' >/dev/null; then
	ok "CreateContainer + StartContainer: the container runs"
else
	notok "container runs" "$C1 $out $(cat "$T/ctl/out" 2>/dev/null)
$(tail -5 "$T/containerd.log")"
	fail_rest "no dilated container"
fi
CPID=$(cri pid "$C1")
tdf=$(cat "$T/ctl/tdf" 2>/dev/null)
tns=$(readlink "/proc/$CPID/ns/time") hns=$(readlink /proc/self/ns/time)
if [ "$tdf" = 10 ] && [ -n "$tns" ] && [ "$tns" != "$hns" ]; then
	ok "TDF 10 in a time namespace of its own ($tns)"
else
	notok "TDF 10 in a time namespace of its own" "tdf '$tdf', container $tns, host $hns, pid $CPID"
fi
cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$CPID/cgroup" 2>/dev/null)
cm=$(cat "/sys/fs/cgroup$cg/cpu.max" 2>/dev/null)
if [ "$cm" = "20000 10000" ]; then
	ok "cpu.max 20000 10000: the 20-CPU limit read as perceived, scaled by 1/10 ($cg)"
else
	notok "cpu.max 20000 10000" "cgroup '$cg': '$cm'"
fi
# netem, dsl.toml at TDF 10: delay 12.5 ms -> 125 ms, jitter 1 ms -> 10 ms,
# limit 300; down 16 Mbit/s -> 1600 kbit/s on the host end, up 1 Mbit/s ->
# 100 kbit/s in the pod
VETH=$(bridge_ports | head -1)
down=$(tc qdisc show dev "$VETH" 2>&1 | grep netem)
up=$(nsenter -t "$CPID" -n tc qdisc show dev eth0 2>&1 | grep netem)
echo "# host end $VETH: $down"
echo "# pod end eth0: $up"
nm() { grep -q 'limit 300 ' <<<"$1" && grep -q 'delay 125ms  10ms' <<<"$1" && grep -q "rate $2 " <<<"$1 "; }
# tdf-cni multiplies the pod end's neighbour times; the host end keeps the kernel's
nt=$(neigh_times nsenter -t "$CPID" -n eth0)
nbad=$(neigh_dilated 10 "$([ -n "$VETH" ] && neigh_times "$VETH")" "$nt")
echo "# pod end eth0 ARP: $(grep '^arp_cache' <<<"$nt" | cut -d' ' -f2- | tr '\n' ' ')"
if [ -n "$VETH" ] && nm "$down" 1600Kbit && nm "$up" 100Kbit && [ -z "$nbad" ] && grep -q '^arp_cache retrans ' <<<"$nt"; then
	ok "veth netem scaled by 10 both ways (down 1600Kbit, up 100Kbit, delay 125ms jitter 10ms), ARP/NDP times x 10 in the pod"
else
	notok "veth netem scaled by 10 both ways, ARP/NDP times x 10 in the pod" "veth '$VETH' down '$down' up '$up' neighbour: $nbad"
fi
# CHECK per the CNI spec, with the prevResult bridge gave (CNI_* as a runtime sets them)
NETNS=$(cri inspectp "$POD" | jq -r '.info.info | fromjson | .runtimeSpec.linux.namespaces[] | select(.type == "network") | .path')
prev=$(jq -n --arg veth "$VETH" --arg ns "$NETNS" --arg br "$BR" '{cniVersion: "1.0.0",
	interfaces: [{name: $br}, {name: $veth}, {name: "eth0", sandbox: $ns}], ips: []}')
chk() {
	jq --argjson prev "$prev" --argjson ann "{\"$KEY\": \"$1\", \"$NKEY\": \"dsl\"}" \
		'.plugins[1] + {cniVersion, name, prevResult: $prev, runtimeConfig: {"io.kubernetes.cri.pod-annotations": $ann}}' \
		"$T/net.d/10-tdf.conflist" | CNI_COMMAND=CHECK CNI_CONTAINERID="$POD" CNI_NETNS="$NETNS" CNI_IFNAME=eth0 \
		CNI_PATH="$T/cni-bin" "$CNI" 2>&1
}
c10=$(chk 10); r10=$?; c5=$(chk 5); r5=$?
if [ $r10 -eq 0 ] && [ $r5 -ne 0 ] && grep -q 'want limit 300' <<<"$c5"; then
	ok "tdf-cni CHECK: passes at TDF 10, fails at TDF 5"
else
	notok "tdf-cni CHECK" "netns '$NETNS' TDF 10: rc $r10 $c10; TDF 5: rc $r5 $c5"
fi
# clock rate from outside: host times around two reads of the container's
# /proc/uptime S host seconds apart; up to four tries when the bracket is
# wider than 10% (reaction times of a loaded TCG guest: 0.3-2 s here)
now() { echo "$EPOCHREALTIME"; }
n=0 res=
for try in 1 2 3 4; do
	h1=$(now); echo go > "$T/ctl/a"; n=$((n + 1))
	s1=$(container_wait_line "$T/ctl/out" 60 "" "^u$n ")
	sleep "$S"
	h2=$(now); echo go > "$T/ctl/a"; n=$((n + 1))
	s2=$(container_wait_line "$T/ctl/out" 60 "" "^u$n ")
	u1=$(awk -v k="u$((n - 1))" '$1 == k {print $2}' "$T/ctl/out"); u2=$(awk -v k="u$n" '$1 == k {print $2}' "$T/ctl/out")
	res=$(container_rate 10 "$h1" "$s1" "$h2" "$s2" "$u1" "$u2")
	echo "# try $try: $res"
	[ "${res%% *}" = wide ] || break
done
if [ "${res%% *}" = ok ]; then ok "clock rate 1/10 of the host (10 +- 1% within the bracket: ${res#ok })"
else notok "clock rate 1/10 of the host" "$res
$(cat "$T/ctl/out")"; fi

# 10: no annotations, same handler: passed through untouched
podjson plain-pod uid-plain-1 '{}' >"$T/pod2.json"
ctrjson c2 "$T/ctl2" 50000 'cat /proc/self/timens_dilation > /ctl/tdf 2>/dev/null || echo none > /ctl/tdf; echo ready >> /ctl/out; trap "exit 0" TERM; while :; do sleep 3600 & wait; done' >"$T/c2.json"
ports0=$(bridge_ports)
if POD2=$(cri runp -r dilated "$T/pod2.json" 2>&1) && C2=$(cri create "$POD2" "$T/c2.json" "$T/pod2.json" 2>&1) &&
	cri start "$C2" >/dev/null 2>&1 && container_wait_line "$T/ctl2/out" 120 "" '^ready$' >/dev/null; then
	p2=$(cri pid "$C2")
	cg2=$(awk -F: '$1 == "0" {print $3}' "/proc/$p2/cgroup" 2>/dev/null)
	cm2=$(cat "/sys/fs/cgroup$cg2/cpu.max" 2>/dev/null)
	v2=$(comm -13 <(echo "$ports0" | sort) <(bridge_ports | sort))
	q2=$(tc qdisc show dev "$v2" 2>&1 | grep netem; nsenter -t "$p2" -n tc qdisc show dev eth0 | grep netem)
	t2=$(cat "$T/ctl2/tdf")
	b2=$(jq -c '[.linux.namespaces[].type, (.hooks // {} | keys[])]' "$T/state/io.containerd.runtime.v2.task/k8s.io/$C2/config.json" 2>&1)
	if [ "$(readlink "/proc/$p2/ns/time")" = "$hns" ] && [ "$t2" = 1 ] && [ "$cm2" = "50000 100000" ] &&
		[ -n "$v2" ] && [ -z "$q2" ] && ! grep -q time <<<"$b2"; then
		ok "unannotated pod: host time namespace, TDF 1, cpu.max 50000 100000 as set, no netem"
	else
		notok "unannotated pod untouched" "tdf '$t2' cpu.max '$cm2' veth '$v2' netem '$q2' spec $b2"
	fi
else
	notok "unannotated pod runs" "$POD2 ${C2:-} $(tail -5 "$T/containerd.log")"
fi

# 11, 12: bad annotations fail the pod with one line, and leave nothing
badpod() {
	local name=$1 ann=$2 want=$3 out rc left
	podjson "$name" "uid-$name" "$ann" >"$T/$name.json"
	out=$(cri runp -r dilated "$T/$name.json" 2>&1); rc=$?
	echo "# $name: $out"
	left=$(cri pods | grep -v -e "^$POD " -e "^$POD2 "; ls /var/run/netns 2>/dev/null | grep -c '^cni-')
	if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$out" && [ "$(wc -l <<<"$out")" = 1 ] && [ "$left" = 2 ]; then
		ok "$4: RunPodSandbox fails with \"$want\", nothing left"
	else
		notok "$4: RunPodSandbox fails with \"$want\", nothing left" "rc $rc: $out
left (2 netns expected): $left"
	fi
}
badpod bad-tdf "{\"$KEY\": \"0\"}" "tdf-runtime: annotation $KEY: invalid TDF \"0\": must lie in [1/1000, 1000]" "bad TDF"
badpod bad-netem "{\"$KEY\": \"10\", \"$NKEY\": \"no-such\"}" "annotation $NKEY: profile \"no-such\" not found" "unknown netem profile"

# 13: remove everything, nothing left (each step timed: the kubelet's order;
# StopContainer with the kubelet's default grace period of 30 s: runc calls
# take seconds in this TCG guest). c1 leaves its FIFO loop first, so that
# both containers wait for SIGTERM in "wait"
timeout 20 sh -c "echo quit > '$T/ctl/a'"
rmstep stop "$C1" && rmstep rm "$C1" && rmstep stop "$C2" && rmstep rm "$C2" &&
	rmstep stopp "$POD" && rmstep rmp "$POD" && rmstep stopp "$POD2" && rmstep rmp "$POD2"
cri_check_removed $? "both pods" --ps
