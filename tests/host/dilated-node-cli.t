#!/bin/bash
# dilated-node's command line on the host (no root, no patched kernel needed):
# `plan` prints the scaled parameters; bad values give one-line errors.
# Then bad input of every kind to every subcommand (missing and unknown
# flags, NaN, Inf, hex, exponents, huge numbers, stray arguments, an unknown
# fault step): exit 2, exactly one line on stderr naming the problem, nothing
# on stdout, no Go panic trace, no usage dump. Only --help prints the usage.
# Nothing here changes the host: every case fails before `run` or `cleanup`
# would touch anything.
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
DN=$ROOT/tools/bin/dilated-node
export DILATED_NODE_PROFILES=$ROOT/netem-profiles
N=51; n=0
echo "TAP version 13"; echo "1..$N"
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/# /' | head -10; }
if [ ! -x "$DN" ]; then
	while [ $n -lt $N ]; do notok "dilated-node: $DN not built (make -C tools build)"; done; exit 0
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
netem up eth0 limit 1000 delay 400ms 5ms rate 10Mbit
neighbour eth0 times x 10 (perceived: the kernel's ARP and NDP defaults)" --tdf 10 --profile wan-transcontinental-100m --cpus 2
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
printf 'description = "x"\n[link]\ndelay = "10ms"\nloss = "0.1%%"\n[up]\nseed = 42\n' > "$T/seeded.toml"
expect "a seed is not scaled: TDF 10 keeps [up]'s 42, [down] has none" "netem down dn-t limit 1000 delay 100ms loss 0.1%
netem up eth0 limit 1000 delay 100ms loss 0.1% seed 42" --tdf 10 --profile "$T/seeded.toml"
printf 'description = "x"\n[link]\nloss = "1%%"\nseed = -3\n' > "$T/badseed.toml"
bad "negative seed, with file and line" "badseed.toml:4: seed = -3 out of range" --tdf 10 --profile "$T/badseed.toml"
bad "rate x TDF beyond netem" "10gbe-dc.toml:5: .*above" --tdf 1/2 --profile 10gbe-dc
bad "CPU share above the machine" "above" --tdf 1 --cpus 1000
bad "io.max cannot represent 0.5 IOPS" "cannot represent" --tdf 10 --disk 8:0,riops=5
# cli NAME REGEX ARGS...: dilated-node ARGS fails with exit 2 and one line
cli() {
	local name=$1 want=$2; shift 2
	local out err rc
	out=$("$DN" "$@" 2>"$T/err"); rc=$?; err=$(cat "$T/err")
	if [ $rc = 2 ] && [ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && grep -Eq "^dilated-node: .*($want)" <<<"$err" &&
		! grep -Eq '^(panic|goroutine )|usage:' <<<"$err"; then ok "$name: $err"
	else notok "$name" "rc=$rc stdout=$out
stderr: $err"; fi
}
cli "no subcommand" "no subcommand" 
cli "unknown subcommand" 'unknown subcommand "frobnicate"' frobnicate
cli "unknown flag (plan)" "unknown flag --bogus" plan --bogus
cli "unknown flag (run)" "unknown flag --bogus" run --bogus -- true
cli "unknown flag (cleanup)" "unknown flag --force" cleanup --force
cli "flag without its value" "flag --tdf needs a value" plan --tdf
cli "no --tdf" "--tdf is required" plan
cli "TDF NaN" 'invalid TDF "NaN"' plan --tdf NaN
cli "TDF Inf" 'invalid TDF "Inf"' plan --tdf Inf
cli "TDF hex" 'invalid TDF "0x10"' plan --tdf 0x10
cli "TDF with exponent" 'invalid TDF "1e3"' plan --tdf 1e3
cli "TDF huge" 'invalid TDF "99999999999999999999999": must lie in' plan --tdf 99999999999999999999999
cli "TDF ratio with a huge term" "must not exceed 10\^9" plan --tdf 10000000000/10000000
cli "TDF negative" 'invalid TDF "-1"' plan --tdf=-1
cli "TDF with a newline inside" 'invalid TDF "1\\n0"' plan --tdf "$(printf '1\n0')"
cli "scale Inf" 'invalid scale "Inf"' plan --tdf 10 --scale Inf --cpus 1
cli "cpus NaN" '--cpus "NaN"' plan --tdf 10 --cpus NaN
cli "cpus hex (was accepted as 16)" '--cpus "0x10"' plan --tdf 10 --cpus 0x10
cli "cpus hex float (was accepted as 16)" '--cpus "0x1p4"' plan --tdf 10 --cpus 0x1p4
cli "cpus huge" "above the" plan --tdf 10 --cpus 99999999999999999999
cli "cpu-period NaN" '--cpu-period "NaN": expected a duration' plan --tdf 10 --cpus 1 --cpu-period NaN
cli "rto-min Inf" '--rto-min "Inf": invalid duration' plan --tdf 10 --rto-min=Inf
cli "disk NaN" "--disk 8:0,rbps=NaN: rbps" plan --tdf 10 --disk 8:0,rbps=NaN
cli "disk key twice (the first was dropped)" "rbps given twice" plan --tdf 10 --disk 8:0,rbps=1MB,rbps=2MB
cli "disk with a newline" '--disk "/nonexistent\\n' plan --tdf 10 --disk "$(printf '/nonexistent\n,rbps=1')"
cli "subnet garbage" '--subnet "x": expected an IPv4 network' plan --tdf 10 --subnet x
cli "addr garbage" '--addr "1.2.3.4.5"' plan --tdf 10 --addr 1.2.3.4.5
cli "bool flag garbage" '--no-net "maybe": expected true or false' plan --tdf 10 --no-net=maybe
cli "name too long" "1 to 12 characters" plan --tdf 10 --name abcdefghijklm
cli "plan with a command" "plan takes no command" plan --tdf 10 true
cli "profile missing" "no such file|not found" plan --tdf 10 --profile /nonexistent.toml
cli "profiles with an argument" "profiles takes no arguments" profiles dsl
cli "check-profile without one" "check-profile needs" check-profile
cli "cleanup with an argument" "cleanup takes no arguments" cleanup n1
cli "cleanup bad name" 'node name "BAD!"' cleanup --name 'BAD!'
out=$(TDC_FAULT_AFTER=nosuchstep "$DN" run --tdf 10 --name x -- true 2>&1); rc=$?
if [ $rc = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && grep -q 'TDC_FAULT_AFTER=nosuchstep: unknown step' <<<"$out"; then ok "unknown fault step: $out"
else notok "unknown fault step" "rc=$rc $out"; fi
out=$("$DN" --help 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ ! -s "$T/err" ] && grep -q '^usage:' <<<"$out" && grep -q -- '-tdf' <<<"$out"; then ok "--help: usage on stdout, exit 0"
else notok "--help" "rc=$rc $out $(cat "$T/err")"; fi
exit 0
