#!/bin/bash
# Bad input: a one-line error naming the problem (with the profile's file and
# line), a non-zero exit, and nothing configured (no link, bridge or cgroup).
# tdc-timeout: 90
. "${TDC_ROOT:-$(dirname "$0")/../..}/tools/tests/lib.sh"
tap_plan 11
need_node_env
P=$TMPD/p
mkdir -p "$P"
printf 'description = "x"\n[link]\nrate = "10mbit"\nbandwidth = "1mbit"\n' > "$P/unknown-key.toml"
printf 'description = "x"\n[link]\nrate = "10 furlongs"\n' > "$P/bad-rate.toml"
printf 'description = "x"\n[link]\ndelay = "1ms"\njitter = "5ms"\n' > "$P/bad-jitter.toml"
printf 'description = "x"\n[link]\nrate = "100gbit"\n' > "$P/too-fast.toml"
printf 'description = "x"\n[link]\nloss = 1\n' > "$P/bad-type.toml"
# bad NAME WANT-REGEX ARGS...: run must fail with one line matching WANT
bad() {
	local name=$1 want=$2; shift 2
	local err rc left
	err=$("$DN" run --name bad "$@" -- true 2>&1 >/dev/null); rc=$?
	left=$(leftovers)
	if [ "$rc" != 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && grep -Eq "$want" <<<"$err" && [ -z "$left" ]; then
		ok "$name: $err"
	else
		notok "$name" "rc=$rc err=$err left=$left"
	fi
}
bad "unknown key" "unknown-key.toml:4: unknown key \"link.bandwidth\"" --tdf 10 --profile "$P/unknown-key.toml"
bad "bad rate unit" "bad-rate.toml:3: .*furlongs" --tdf 10 --profile "$P/bad-rate.toml"
bad "jitter above delay" "bad-jitter.toml:4: .*jitter" --tdf 10 --profile "$P/bad-jitter.toml"
bad "rate beyond netem" "too-fast.toml:3: .*above" --tdf 1 --profile "$P/too-fast.toml"
bad "wrong type" "bad-type.toml:3: link.loss: wrong type" --tdf 1 --profile "$P/bad-type.toml"
bad "unknown profile" "not found" --tdf 10 --profile no-such-profile
bad "TDF out of range" "TDF.*1000" --tdf 1001
bad "TDF malformed" "TDF" --tdf 1e3
bad "CPU share above the machine" "above" --tdf 1 --cpus 64
bad "missing block device" "not found|block" --tdf 10 --disk 250:250,rbps=1MB
# a failure after the namespaces exist: the command cannot be executed
err=$("$DN" run --quiet --name bad --tdf 10 --profile dsl --cpus 1 -- /nonexistent/cmd 2>&1); rc=$?
left=$(leftovers)
if [ "$rc" = 127 ] && [ -z "$left" ]; then ok "command not found: status 127, nothing left behind"
else notok "command not found" "rc=$rc err=$err left=$left"; fi
exit 0
