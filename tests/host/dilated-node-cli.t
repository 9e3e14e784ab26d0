#!/bin/bash
# dilated-node's command line on the host (no root, no patched kernel needed):
# `plan` prints the scaled parameters; bad values give one-line errors.
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
DN=$ROOT/tools/bin/dilated-node
export DILATED_NODE_PROFILES=$ROOT/netem-profiles
N=12; n=0
echo "TAP version 13"; echo "1..$N"
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/# /' | head -10; }
if [ ! -x "$DN" ]; then
	while [ $n -lt $N ]; do n=$((n + 1)); echo "ok $n - dilated-node # SKIP $DN not built (make -C tools build)"; done; exit 0
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
expect() { # expect NAME WANT-LINES ARGS...: plan output contains every line
	local name=$1 want=$2; shift 2
	local out; out=$("$DN" plan --name t "$@" 2>&1)
	local missing; missing=$(grep -vxF -f <(printf '%s\n' "$out") <<<"$want")
	if [ -z "$missing" ]; then ok "$name"; else notok "$name" "missing: $missing
got: $out"; fi
}
expect "wan at TDF 10: 10 Mbit/s, 400 ms each way, 2 CPUs -> 0.2 CPU" "tdf 10
netem down dn-t limit 1000 delay 400ms 5ms rate 10Mbit
netem up eth0 limit 1000 delay 400ms 5ms rate 10Mbit" --tdf 10 --profile wan-transcontinental-100m --cpus 2
expect "dsl at TDF 5/2 (ratio): asymmetric rates" "tdf 5/2
netem down dn-t limit 300 delay 31.25ms 2.5ms rate 6400Kbit
netem up eth0 limit 300 delay 31.25ms 2.5ms rate 400Kbit" --tdf 5/2 --profile dsl
expect "geo-satellite at TDF 2.5 (decimal): loss unchanged" "tdf 5/2
netem down dn-t limit 2000 delay 750ms 12.5ms loss 1% rate 10Mbit" --tdf 2.5 --profile geo-satellite
expect "lte-4g at TDF 10: slot x TDF, correlation unchanged" "netem up eth0 limit 1000 delay 250ms 50ms 25% distribution normal loss 0.1% rate 1Mbit slot 10ms 10ms" --tdf 10 --profile lte-4g
expect "disk and rto_min" "io.max 8:0 rbps=40000000 wbps=max riops=2000 wiops=max (perceived 8:0,rbps=400MB,riops=20k)
rto_min 2000ms (perceived 200ms)" --tdf 10 --disk 8:0,rbps=400MB,riops=20k --rto-min
out=$("$DN" plan --tdf 20 --scale 10 --cpus 1 2>&1)
if grep -q '^cpu.max 1000 10000 ' <<<"$out" && grep -q 'perceives 2.000 CPUs' <<<"$out"; then ok "scale 10 at TDF 20: 10% CPU, warning"
else notok "scale 10 at TDF 20" "$out"; fi
fails=
for p in 1gbe-lan 10gbe-dc wan-transcontinental-100m geo-satellite lte-4g dsl; do
	"$DN" plan --tdf 10 --profile $p >/dev/null 2>&1 || fails="$fails $p: $("$DN" plan --tdf 10 --profile $p 2>&1)"
done
if [ -z "$fails" ]; then ok "every shipped profile plans at TDF 10"; else notok "every shipped profile plans at TDF 10" "$fails"; fi
bad() { # bad NAME REGEX ARGS...
	local name=$1 want=$2; shift 2
	local err rc; err=$("$DN" plan "$@" 2>&1 >/dev/null); rc=$?
	if [ $rc != 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && grep -Eq "$want" <<<"$err"; then ok "$name: $err"
	else notok "$name" "rc=$rc: $err"; fi
}
printf 'description = "x"\n[link]\nrate = "1mbit"\n\n[down]\nlatency = "1ms"\n' > "$T/x.toml"
bad "unknown key, with file and line" "x.toml:6: unknown key \"down.latency\"" --tdf 10 --profile "$T/x.toml"
bad "TDF out of range" "TDF" --tdf 0.0001
bad "rate x TDF beyond netem" "10gbe-dc.toml:5: .*above" --tdf 1/2 --profile 10gbe-dc
bad "CPU share above the machine" "above" --tdf 1 --cpus 1000
bad "io.max cannot represent 0.5 IOPS" "cannot represent" --tdf 10 --disk 8:0,riops=5
exit 0
