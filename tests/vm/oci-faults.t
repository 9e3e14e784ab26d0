#!/bin/bash
# Faults in tdf-oci-hook as crun's createRuntime hook: the test-only hook
# TDC_FAULT_AFTER=STEP (set in the hook's env in config.json) makes it fail
# right after STEP (state: OCI state and config.json read and checked;
# cpu.max written; tdf: the factor written), STEP:kill makes it SIGKILL
# itself there. Either way crun must fail the start and nothing may remain:
# no container in crun's state, no cgroup, no process of the container, no
# namespace (the set of every process's namespaces is compared with the set
# before the test). Point 1 runs the same container without a fault (it must
# start dilated, else the others prove nothing); the last, an unknown STEP,
# must fail with one line. Missing prerequisites (root, the patched kernel,
# crun, jq, busybox-static, the built hook) are failures.
# tdc-timeout: 300
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HOOK=$ROOT/runtime-hooks/bin/tdf-oci-hook
KEY=io.github.time-dilated-containers.tdf
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/container.sh"
STEPS=(state cpu.max tdf)
N=$((2 * ${#STEPS[@]} + 2))
tap_plan $N
fail_rest() { while [ "$TAP_N" -lt "$N" ]; do notok "oci fault test: $1"; done; exit 0; }
TMPD=$(mktemp -d /tmp/oci-faults.XXXXXX)
STATE=$TMPD/state
CGPREFIX=tdf-oci-fault-$$
rtc() { crun --root "$STATE" "$@"; }
cleanup() {
	local id
	for id in $(rtc list -q 2>/dev/null); do rtc delete -f "$id" >/dev/null 2>&1; done
	rmdir /sys/fs/cgroup/"$CGPREFIX"-* 2>/dev/null
	rm -rf "$TMPD"
}
trap cleanup EXIT
container_check crun jq
[ -n "$why" ] || [ -x "$HOOK" ] || why="$HOOK not built (make -C runtime-hooks build)"
[ -n "$why" ] && fail_rest "$why"
grep -q ' /sys/fs/cgroup .* - cgroup2 ' /proc/self/mountinfo || mount -t cgroup2 none /sys/fs/cgroup || fail_rest "no cgroup2"
echo "# $(crun --version | head -1)"

B=$TMPD/bundle
mkdir -p "$B/rootfs/bin" "$B/rootfs/proc" "$B/rootfs/dev" "$B/rootfs/sys" "$B/rootfs/tmp"
cp "$BB" "$B/rootfs/bin/busybox"
for a in sh cat sleep; do ln -s busybox "$B/rootfs/bin/$a"; done
(cd "$B" && crun spec) || fail_rest "crun spec failed"
cp "$B/config.json" "$TMPD/spec.json"
# mkconfig ID FAULT: TDF 10 and 1 perceived CPU, a new time namespace (no pid
# namespace: crun < 1.8.4 cannot combine it with a time namespace)
mkconfig() {
	jq --arg hook "$HOOK" --arg key "$KEY" --arg cg "/$CGPREFIX-$1" --arg fault "$2" --arg herr "$TMPD/hook-$1.err" '
		.process.terminal = false
		| .process.args = ["/bin/sh", "-c", "cat /proc/self/timens_dilation"]
		| .root.readonly = true
		| .linux.cgroupsPath = $cg
		| .hooks = {createRuntime: [{path: $hook, args: ["tdf-oci-hook"], timeout: 30,
			env: (if $fault != "" then ["TDC_FAULT_AFTER=" + $fault] else [] end)}]}
		| .annotations = {($key): "10", ($key + ".cpus"): "1", "run.oci.hooks.stderr": $herr}
		| .linux.namespaces = ([.linux.namespaces[] | select(.type != "time" and .type != "pid")] + [{type: "time"}])
	' "$TMPD/spec.json" > "$B/config.json"
}
nsset() { for p in /proc/[0-9]*; do readlink "$p"/ns/{net,time,mnt,uts,ipc,pid,cgroup} 2>/dev/null; done | sort -u; }
BASE_NS=$(nsset)
left() {
	rtc list 2>/dev/null | awk 'NR > 1' | sed 's/^/container /'
	ls -d /sys/fs/cgroup/"$CGPREFIX"-* 2>/dev/null | sed 's/^/cgroup /'
	pgrep -af "crun --root $STATE" | sed 's/^/process /'
	comm -13 <(printf '%s\n' "$BASE_NS") <(nsset) | sed 's/^/namespace /'
	return 0
}
l=$(left); [ -z "$l" ] || fail_rest "leftovers before the test: $l"

# run ID FAULT: sets rc, out (crun's output and the hook's stderr)
run() {
	mkconfig "$1" "$2"
	out=$(cd "$B" && timeout 60 crun --root "$STATE" run "$1" </dev/null 2>&1); rc=$?
	[ -s "$TMPD/hook-$1.err" ] && out="$out
$(cat "$TMPD/hook-$1.err")"
}

run plain ""
l=$(left)
if [ $rc = 0 ] && [ "$(head -1 <<<"$out")" = 10 ] && [ -z "$l" ]; then ok "no fault: container runs at TDF 10, nothing left"
else notok "no fault: container runs at TDF 10, nothing left" "rc=$rc $out
left: $l"; fail_rest "the hook does not work without a fault"; fi

i=0
for mode in "" :kill; do
	for s in "${STEPS[@]}"; do
		i=$((i + 1))
		run "f$i" "$s$mode"
		l=$(left)
		if [ -z "$mode" ]; then
			want="tdf-oci-hook: fault injected after step $s "
			good=$(grep -cF "$want" <<<"$out")
		else
			want="hook killed"; good=1
		fi
		if [ $rc != 0 ] && [ "$good" -ge 1 ] && ! grep -qx 10 <<<"$out" && [ -z "$l" ]; then
			ok "fault after $s${mode:+ (SIGKILL)}: start fails, nothing left"
		else
			notok "fault after $s${mode:+ (SIGKILL)}: start fails, nothing left" "rc=$rc $out
left: $l"
		fi
		for id in $(rtc list -q 2>/dev/null); do rtc delete -f "$id" >/dev/null 2>&1; done
	done
done

run bad nosuchstep
l=$(left)
if [ $rc != 0 ] && [ "$(grep -c 'tdf-oci-hook:' <<<"$out")" = 1 ] && grep -q 'unknown step' <<<"$out" && [ -z "$l" ]; then
	ok "unknown fault step: one line, start fails, nothing left"
else notok "unknown fault step: one line" "rc=$rc $out
left: $l"; fi
exit 0
