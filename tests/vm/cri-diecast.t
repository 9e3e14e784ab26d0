#!/bin/bash
# tdc-timeout: 720
# DieCast through the CRI (fidelity/experiments/diecast.py's run, with pods
# instead of dilated-node nodes): M server pods (busybox httpd) and M client
# pods (runtime-hooks/bin/tdf-fetch, which times each fetch with its own
# clock: perceived times, one connection per fetch), each pod on the netem
# profile "diecast" below and each container with a 1-CPU limit. Baseline:
# TDF 1, those resources as they are. DieCast: the same pods at TDF N = 4,
# where tdf-runtime reads the CPU limit as perceived (cpu.max 1/4 CPU) and
# tdf-cni scales netem by 4, so the pods perceive the baseline's resources;
# the completion-time distributions should match (diecast.py's criterion).
# Setup (containerd, handler "dilated", CNI): tests/lib/cri.sh.
#   1 the images (busybox + tdf-fetch) are visible through the CRI
#   2, 3 baseline (TDF 1): the pods run (cpu.max 1 CPU, the profile unscaled
#     on both ends of each veth); every fetch completes (HTTP 200, the size)
#   4, 5 TDF 4: the pods run with TDF 4, cpu.max 1/4 CPU, the profile scaled
#     by 4; every fetch completes
#   6 what was measured is dilated: host time per perceived time of a client's
#     fetch loop is 1 (baseline) and 4 (TDF 4), +- 5% each
#   7 diecast.py's criterion, first half: median completion time at TDF 4
#     within +-10% of the baseline's
#   8 second half: a two-sample KS test does not tell them apart (p > 0.05)
#   9 removing the pods leaves nothing
#
# Why this tells a right factor from a wrong one: the resources are scaled by
# N in host time (cpu.max, netem rate and delay), so a fetch takes N times its
# baseline host time whatever the kernel does; the perceived time is that
# host time divided by the factor the kernel applies. A kernel applying 2N
# halves the perceived times (-50%), one applying N/2 doubles them (+100%):
# both far outside the two-sided +-10% of point 7 (point 6 sees the same in
# the other direction).
#
# Why these parameters: what a TCG guest spends in host time that the
# dilation does not scale (softirq and timer work outside the pods' cgroups,
# wake-up latencies, CPU bursts shorter than the 2.5 ms quota at TDF 4) is
# perceived in full at TDF 1 and a quarter of it at TDF 4, so it must be
# small against what is scaled. Hence link-bound work: files of 64-512 KiB
# (log-uniform, a fixed sequence, the same in both runs: a smooth CDF for the
# KS test, as diecast.py's three sizes give with its many nodes) over
# 512 kbit/s, about 3.5 s a fetch. None of netem-profiles/ fits: the bottleneck
# must be the client's down link, which tdf-cni puts on the host end of the
# veth, where the TCP sender's small-queue limit (about 2 packets in its own
# qdiscs) does not reach, so the queue stays full and per-packet latencies do
# not idle the link. On dsl (1 Mbit/s up, 16 down) the bottleneck is the
# server's up link, in its own netns, and the TDF-1 run came out 25% slower
# (4-128 KiB files); 16 Mbit/s down is more than the guest forwards on time.
# At 1 Mbit/s down, 2 up, the TDF-1 run was still 6-7% slower (about 150 ms
# of a fetch's 2 s went to what is not scaled: per fetch the handshake,
# httpd's fork and the wake-ups of 3 processes, per packet 4 netem timers):
# half the rate halves that share.
# 20 ms one way, no jitter or loss (loss would bring RTOs, whose floor runs
# in host time).
set -u
export LC_ALL=C
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
FETCH=$ROOT/runtime-hooks/bin/tdf-fetch
N=4                                 # the TDF of the DieCast run (diecast.py's 4 nodes at TDF 4)
M=${CRI_DIECAST_PODS:-2}            # server pods, and as many client pods
K=${CRI_DIECAST_FETCHES:-8}         # fetches per client: 2 x 8 per run (diecast.py: 4 x 30, shorter fetches)
PROFILE=diecast
QUOTA=100000                        # 1 CPU per container (per 100 ms)
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/container.sh"
. "$ROOT/tests/lib/cri.sh"
tap_plan 9
cri_setup -p "$FETCH"
command -v python3 >/dev/null || fail_rest "python3 missing"
cat >"$T/profiles/$PROFILE.toml" <<'EOF'
# tests/vm/cri-diecast.t's link (see there): the bottleneck down, in the host
description = "512 kbit/s down, 1 Mbit/s up, 40 ms RTT"

[link]
delay = "20ms"
limit = 1000

[down]
rate = "512kbit"

[up]
rate = "1mbit"
EOF

# 1: the pause image and one with busybox and the load generator (for both
# the servers and the clients)
out=$( { cri_mkimage pause localhost/tdf-pause:1 /bin/sh -c 'trap "exit 0" TERM; while :; do sleep 3600 & wait; done' &&
	cri_mkimage fetch localhost/tdf-fetch:1 -f "$FETCH:/bin/tdf-fetch" /bin/sh; } 2>&1)
if [ $? -eq 0 ]; then ok "images imported (busybox + tdf-fetch), visible through the CRI"; else notok "images imported" "$out"; fail_rest "no images"; fi

# the files: K sizes log-uniform in [64 KiB, 512 KiB] from a fixed seed
mkdir -p "$T/www"
awk -v k="$K" 'BEGIN { srand(13); for (j = 1; j <= k; j++) printf "%d\n", 65536 * exp(rand() * log(8)) }' >"$T/sizes"
j=0
while read -r sz; do j=$((j + 1)); head -c "$sz" /dev/urandom >"$T/www/f$j"; done <"$T/sizes"

# wait_out FILE SECS RE: the host time at which FILE has a line matching RE
# (seen within 0.1 s), for at most SECS s. container_wait_line's grep and
# sleep 100 times a second would cost the TCG guest a CPU while the pods
# run: contention that the pods at TDF 1 perceive in full, at TDF 4 a quarter
# of it. This loop forks nothing (builtins; a read with a timeout on a FIFO
# nobody writes as the sleep)
mkfifo "$T/tick"
exec {TICK}<>"$T/tick"
wait_out() {
	local end=$((SECONDS + $2)) l
	while [ $SECONDS -lt $end ]; do
		if [ -f "$1" ]; then
			while IFS= read -r l; do [[ $l =~ $3 ]] && { echo "$EPOCHREALTIME"; return 0; }; done <"$1"
		fi
		read -rt 0.1 -u "$TICK" _
	done
	return 1
}

# run TDF: M server pods, then M client pods that wait at a FIFO; opens the
# FIFOs and waits for the fetches. Points: the pods as expected, the fetches
# complete. Writes $T/times-TDF (bytes and completion time in ms a line), sets
# RATE[TDF] (host s per perceived s of client 1's loop, bracketed by the
# host's views of its first and last lines: "RATIO HOST-S PERCEIVED-S")
PODS=() CTRS=()
declare -A RATE
run() {
	local tdf=$1 ann role i j id pod c out ips=() bad= ports0 v q cg cm t dl up want h0 ha hb ta tb p urls
	# the baseline names TDF 1: tdf-cni wants a TDF with a netem profile
	ann="{\"$KEY\": \"$tdf\", \"$NKEY\": \"$PROFILE\"}"
	ports0=$(bridge_ports)
	# the profile: delay 20 ms, 512 kbit/s down (host end), 1 Mbit/s up (pod
	# end); the 1-CPU limit as tdf-runtime writes it (10 ms periods)
	if [ "$tdf" = 1 ]; then dl="delay 20ms +rate 512Kbit" up="delay 20ms +rate 1Mbit" want="10000 10000"
	else dl="delay 80ms +rate 128Kbit" up="delay 80ms +rate 250Kbit" want="2500 10000"; fi
	for role in srv cli; do
		for i in $(seq 1 "$M"); do
			id=$role-$tdf-$i
			mkdir -p "$T/$id"
			podjson "$id" "uid-$id" "$ann" >"$T/$id.pod.json"
			if [ $role = srv ]; then
				cp -r "$T/www" "$T/$id/"
				# httpd binds, then goes to the background: "ready" means listening
				ctrjson "$id" "$T/$id" "$QUOTA" 'busybox httpd -p 80 -h /ctl/www && echo ready > /ctl/ready
					trap "exit 0" TERM; while :; do sleep 3600 & wait; done' localhost/tdf-fetch:1 >"$T/$id.json"
			else
				mkfifo "$T/$id/go"
				urls=
				for j in $(seq 1 "$K"); do urls="$urls http://${ips[$(((i + j) % M))]}/f$j"; done
				# shellcheck disable=SC2016 # expanded in the container
				ctrjson "$id" "$T/$id" "$QUOTA" "echo ready > /ctl/ready; read x < /ctl/go; exec tdf-fetch$urls > /ctl/out 2>&1" \
					localhost/tdf-fetch:1 >"$T/$id.json"
			fi
			if ! pod=$(cri runp -r dilated "$T/$id.pod.json" 2>&1) || ! c=$(cri create "$pod" "$T/$id.json" "$T/$id.pod.json" 2>&1) ||
				! out=$(cri start "$c" 2>&1) || ! container_wait_line "$T/$id/ready" 120 "" '^ready$' >/dev/null; then
				bad="$id: ${pod:-} ${c:-} ${out:-} $(tail -3 "$T/containerd.log")"
				break 2
			fi
			PODS+=("$pod") CTRS+=("$c")
			p=$(cri pid "$c")
			[ $role = srv ] && ips+=("$(cri inspectp "$pod" | jq -r .status.network.ip)")
			# TCP's delayed-ACK timer (40 ms and up) runs in host time, so
			# dilated it lasts TDF times less perceived time: ACK every
			# segment at once at every TDF alike (fidelity/harness/netutil.py's
			# quickack, on the pod's routes)
			while read -r v; do
				# shellcheck disable=SC2086 # the route's words
				out=$(nsenter -t "$p" -n ip route change $v quickack 1 2>&1) || bad="$bad $id: route $v quickack: $out;"
			done < <(nsenter -t "$p" -n ip -o route show)
			cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$p/cgroup" 2>/dev/null)
			cm=$(cat "/sys/fs/cgroup$cg/cpu.max" 2>/dev/null)
			q=$(nsenter -t "$p" -n tc qdisc show dev eth0 2>&1 | grep netem)
			t=$(cat "/proc/$p/timens_dilation" 2>/dev/null || echo none)
			[ "$cm" = "$want" ] && grep -qE "$up( |$)" <<<"$q" && [ "$t" = "$tdf" ] ||
				bad="$bad $id: TDF '$t' cpu.max '$cm' (want $want), pod end '$q' (want $up);"
		done
	done
	if [ -z "$bad" ]; then
		for v in $(comm -13 <(echo "$ports0" | sort) <(bridge_ports | sort)); do
			q=$(tc qdisc show dev "$v" | grep netem)
			grep -qE "$dl( |$)" <<<"$q" || bad="$bad host end $v: '$q' (want $dl);"
		done
	fi
	echo "# TDF $tdf: servers ${ips[*]}; cpu.max '$cm'; pod end '$q'"
	if [ -z "$bad" ] && [ "${#ips[@]}" = "$M" ]; then
		ok "TDF $tdf: $M server and $M client pods run (TDF $tdf, cpu.max $want, netem ${up/ +/ } up, ${dl/ +/ } down)"
	else
		notok "TDF $tdf: pods run as expected" "$bad"
		notok "TDF $tdf: fetches complete" "no pods"
		return 1
	fi
	h0=$EPOCHREALTIME
	for i in $(seq 1 "$M"); do echo go >"$T/cli-$tdf-$i/go"; done
	# the limit: 20 s a fetch (about 3 s perceived each) in host time
	ha=$(wait_out "$T/cli-$tdf-1/out" $((60 + 20 * tdf)) '^200 ')
	hb=$(wait_out "$T/cli-$tdf-1/out" $((60 + 20 * tdf * K)) '^(done |tdf-fetch: )')
	for i in $(seq 2 "$M"); do wait_out "$T/cli-$tdf-$i/out" $((60 + 20 * tdf * K)) '^(done |tdf-fetch: )' >/dev/null; done
	echo "# TDF $tdf: fetch phase $(awk -v a="$h0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s host time"
	ta=$(awk 'NR == 1 {print $4}' "$T/cli-$tdf-1/out")
	tb=$(awk '$1 == 200 {t = $4} END {print t}' "$T/cli-$tdf-1/out")
	RATE[$tdf]=$(awk -v ha="$ha" -v hb="$hb" -v ta="$ta" -v tb="$tb" 'BEGIN {
		if (tb > ta && hb > ha) printf "%.4f %.2f %.2f", (hb - ha) / ((tb - ta) / 1000), hb - ha, (tb - ta) / 1000 }')
	bad=
	: >"$T/times-$tdf"
	for i in $(seq 1 "$M"); do
		out=$T/cli-$tdf-$i/out
		# the line of fetch j: 200, the size of f(j)
		if ! grep -qx "done $K" "$out" || [ "$(awk '$1 == 200 {print $2}' "$out")" != "$(cat "$T/sizes")" ]; then
			bad="$bad client $i: $(tail -3 "$out" 2>&1);"
		fi
		awk '$1 == 200 {print $2, $3}' "$out" >>"$T/times-$tdf"
	done
	if [ -z "$bad" ]; then
		ok "TDF $tdf: $M x $K fetches, HTTP 200 and the file's size each"
	else
		notok "TDF $tdf: fetches complete" "$bad"
		return 1
	fi
}

run 1; r1=$?
run "$N"; rn=$?

# 6: host time per perceived time
r1_=${RATE[1]:-} rn_=${RATE[$N]:-}
echo "# host s per perceived s of client 1's loop: TDF 1: ${r1_:-?}; TDF $N: ${rn_:-?} (ratio, host s, perceived s)"
if [ $r1 -eq 0 ] && [ $rn -eq 0 ] && awk -v a="${r1_%% *}" -v b="${rn_%% *}" -v n="$N" \
	'BEGIN {exit !(a >= 0.95 && a <= 1.05 && b >= n * 0.95 && b <= n * 1.05)}'; then
	ok "dilated: host time per perceived time 1 at TDF 1 (${r1_%% *}), $N at TDF $N (${rn_%% *}), +-5%"
else
	notok "host time per perceived time 1 and $N" "TDF 1: '$r1_', TDF $N: '$rn_'"
fi

# 7, 8: diecast.py's criterion with fidelity/harness/stats.py (median,
# rel_diff, ks: scipy's ks_2samp); without numpy/scipy the same statistics in
# plain python, the KS p-value from the asymptotic Kolmogorov distribution
# (Stephens' small-sample correction; scipy computes it exactly at these
# sizes, which differs near p = 0.05 by a few thousandths)
# shellcheck disable=SC2016
res=$(python3 - "$ROOT/fidelity" "$T/times-1" "$T/times-$N" <<'EOF' 2>&1
import math, statistics, sys
sys.path.insert(0, sys.argv[1])

def load(f):
    rows = [line.split() for line in open(f)]
    return [float(r[1]) for r in rows], [float(r[0]) / 1024 for r in rows]


def fit(t, kib):
    """least squares t = a + b kib: a the fixed ms of a fetch, b ms per KiB"""
    n, mx, my = len(t), sum(kib) / len(t), sum(t) / len(t)
    b = sum((x - mx) * (y - my) for x, y in zip(kib, t)) / sum((x - mx) ** 2 for x in kib)
    return f"{my - b * mx:.0f}+{b:.2f}/KiB"


a, ka = load(sys.argv[2])
b, kb = load(sys.argv[3])
try:
    import numpy as np
    from harness import stats
    m1, mn = float(np.median(a)), float(np.median(b))
    d = stats.rel_diff(mn, m1)
    D, p = stats.ks(b, a)
    how = "scipy"
except ImportError:
    m1, mn = statistics.median(a), statistics.median(b)
    d = (mn - m1) / m1
    xs = sorted(set(a + b))
    D = max(abs(sum(x <= v for x in a) / len(a) - sum(x <= v for x in b) / len(b)) for v in xs)
    en = math.sqrt(len(a) * len(b) / (len(a) + len(b)))
    lam = (en + 0.12 + 0.11 / en) * D
    p = 1.0 if lam < 0.2 else min(1.0, max(0.0, 2 * sum((-1) ** (j - 1) * math.exp(-2 * j * j * lam * lam) for j in range(1, 101))))
    how = "asymptotic, no scipy"
print(f"{m1:.1f} {mn:.1f} {d:.4f} {D:.4f} {p:.4f} {len(a)} {len(b)} {fit(a, ka)} {fit(b, kb)} {how}")
EOF
)
echo "# medians (ms, perceived): TDF 1 / TDF $N, difference, KS D, p, n, n, ms per fetch (fixed + per KiB, least squares) TDF 1 / TDF $N: $res"
read -r m1 mn d D p n1 nn _ _ how <<<"$res"
if [ $r1 -eq 0 ] && [ $rn -eq 0 ] && awk -v d="$d" 'BEGIN {exit !(d >= -0.10 && d <= 0.10)}' 2>/dev/null; then
	ok "median completion time at TDF $N (1/$N of the resources) within +-10% of TDF 1's: $mn vs $m1 ms ($(awk -v d="$d" 'BEGIN {printf "%+.1f%%", d * 100}'))"
else
	notok "median completion time at TDF $N within +-10% of TDF 1's" "$res"
fi
if [ $r1 -eq 0 ] && [ $rn -eq 0 ] && awk -v p="$p" 'BEGIN {exit !(p > 0.05)}' 2>/dev/null; then
	ok "KS test TDF $N vs TDF 1 over $nn and $n1 fetches: D = $D, p = $p > 0.05 (${how})"
else
	notok "KS test TDF $N vs TDF 1: p > 0.05" "$res"
fi

# 9: remove everything (the kubelet's order), nothing left; one pod after
# the other (in parallel, StopContainer failed now and then in the TCG guest:
# "failed to kill container: ttrpc: closed")
rc=0
for c in "${CTRS[@]}"; do rmstep stop "$c" 10 >/dev/null && rmstep rm "$c" >/dev/null || rc=1; done
for pod in "${PODS[@]}"; do rmstep stopp "$pod" >/dev/null && rmstep rmp "$pod" >/dev/null || rc=1; done
cri_check_removed $rc "the ${#PODS[@]} pods"
