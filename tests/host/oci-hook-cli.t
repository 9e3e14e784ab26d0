#!/bin/bash
# tdf-oci-hook's input on the host (no root, no patched kernel needed): empty
# or invalid stdin, a state without a bundle, a missing or invalid
# config.json, NaN/Inf/hex/huge values in the annotations, a dead or missing
# pid, unknown arguments, an unknown fault step. Each must exit 1 with
# exactly one line "tdf-oci-hook: ..." on stderr naming the problem, nothing
# on stdout (the precreate mode's stdout is the engine's new config), and no
# Go panic trace. A config without the annotation exits 0 touching nothing;
# -h prints the usage on stdout. Nothing here reaches /proc/PID/timens_dilation
# or a cgroup: every case fails before.
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HOOK=$ROOT/runtime-hooks/bin/tdf-oci-hook
KEY=io.github.time-dilated-containers.tdf
. "$ROOT/tests/lib/tap.sh"
N=43
tap_plan $N
if [ ! -x "$HOOK" ]; then
	while [ "$TAP_N" -lt $N ]; do notok "tdf-oci-hook: $HOOK not built (make -C runtime-hooks build)"; done; exit 0
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# a pid that is not running (pid_max is at most 2^22)
DEAD=$((4194304 + 1000))
# bundle DIR TDF CPUS [NS]: a config.json with the annotations (- leaves one
# out) and a time namespace unless NS is "none"
bundle() {
	mkdir -p "$T/$1"
	local ann="" ns='{"type":"time"}'
	[ "$2" = - ] || ann="\"$KEY\": \"$2\""
	[ "$3" = - ] || ann="$ann${ann:+, }\"$KEY.cpus\": \"$3\""
	[ "${4:-}" = none ] && ns='{"type":"pid"}'
	printf '{"ociVersion": "1.0.2", "annotations": {%s}, "linux": {"namespaces": [%s]}}\n' "$ann" "$ns" > "$T/$1/config.json"
}
state() { printf '{"ociVersion": "1.0.2", "id": "c", "status": "creating", "pid": %s, "bundle": "%s"}' "$2" "$T/$1"; }
# hook NAME REGEX STDIN [ARGS...]: fails with exit 1 and one line matching
hook() {
	local name=$1 want=$2 in=$3; shift 3
	local out err rc
	out=$(printf '%s' "$in" | "$HOOK" "$@" 2>"$T/err"); rc=$?; err=$(cat "$T/err")
	if [ $rc = 1 ] && [ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && grep -Eq "^tdf-oci-hook: .*($want)" <<<"$err" &&
		! grep -Eq '^(panic|goroutine )|usage:' <<<"$err"; then ok "$name: $err"
	else notok "$name" "rc=$rc stdout=$out
stderr: $err"; fi
}
hook "empty stdin" "stdin is empty" ""
hook "blank stdin" "stdin is empty" "   
"
hook "stdin not JSON" "not valid JSON" "hello"
hook "stdin a JSON array" "not valid JSON" "[]"
hook "two JSON values" "not valid JSON" "{} {}"
hook "state without a bundle" "has no bundle" '{"ociVersion": "1.0.2", "id": "c", "pid": 1}'
hook "a config.json instead of the state" "holds a config.json, not an OCI state" '{"ociVersion": "1.0.2", "process": {}, "root": {"path": "rootfs"}}'
mkdir -p "$T/empty"
hook "bundle without config.json" "reading config.json: .*no such file" "$(state empty 1)"
mkdir -p "$T/badjson"; echo '{"annotations": {' > "$T/badjson/config.json"
hook "invalid config.json" "badjson/config.json: " "$(state badjson 1)"
mkdir -p "$T/wrongtype"; echo '{"annotations": {"'$KEY'": 10}}' > "$T/wrongtype/config.json"
hook "annotation of the wrong JSON type" "wrongtype/config.json: .*cannot unmarshal number" "$(state wrongtype 1)"
hook "pid a huge number" "cannot unmarshal number 1e99" "{\"bundle\": \"$T/empty\", \"pid\": 1e99}"
hook "pid a string" "cannot unmarshal string" "{\"bundle\": \"$T/empty\", \"pid\": \"1\"}"
i=0
for v in NaN Inf -Inf 0x10 1e3 99999999999999999999 10000000000/1 -1 0 "" "1 0" "1\\n0"; do
	i=$((i + 1)); bundle "t$i" "$v" -
	hook "TDF \"$v\"" "annotation $KEY: invalid TDF" "$(state "t$i" "$DEAD")"
done
for v in NaN Inf 0x10 0x1p4 1e3 99999999999999999999 -1 ""; do
	i=$((i + 1)); bundle "t$i" 10 "$v"
	hook "cpus \"$v\"" "annotation $KEY.cpus" "$(state "t$i" "$DEAD")"
done
mkdir -p "$T/typo"
printf '{"annotations": {"%s": "10", "%s.cpu": "1"}, "linux": {"namespaces": [{"type": "time"}]}}\n' "$KEY" "$KEY" > "$T/typo/config.json"
hook "misspelt annotation" "unknown annotation \"$KEY.cpu\"" "$(state typo "$DEAD")"
bundle nons 10 - none
hook "no time namespace" "container has no time namespace" "$(state nons "$DEAD")"
bundle ok 10 -
hook "no pid in the state" "no container pid" "$(state ok 0)"
hook "dead pid" "pid $DEAD in the OCI state is not running" "$(state ok "$DEAD")"
hook "unknown argument" 'unknown arguments \["--bogus"\]' "" --bogus
hook "precreate, empty stdin" "config on stdin is not valid JSON" "" precreate
hook "precreate given the state" "holds an OCI state, not a config.json" "$(state ok 1)" precreate
hook "precreate with an extra argument" 'unknown arguments \["precreate" "x"\]' "{}" precreate x
out=$(state ok "$DEAD" | TDC_FAULT_AFTER=nosuchstep "$HOOK" 2>&1); rc=$?
if [ $rc = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && grep -q 'TDC_FAULT_AFTER=nosuchstep: unknown step' <<<"$out"; then ok "unknown fault step: $out"
else notok "unknown fault step" "rc=$rc $out"; fi
bundle plain - -
out=$(state plain "$DEAD" | "$HOOK" 2>&1); rc=$?
if [ $rc = 0 ] && [ -z "$out" ]; then ok "no annotation: exit 0, silent, touches nothing (not even the dead pid)"
else notok "no annotation: exit 0, silent" "rc=$rc $out"; fi
out=$("$HOOK" -h 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ ! -s "$T/err" ] && grep -q '^usage:' <<<"$out"; then ok "-h: usage on stdout, exit 0"
else notok "-h" "rc=$rc $out $(cat "$T/err")"; fi
exit 0
