#!/bin/bash
# Podman (Debian's podman 4.3 + crun 1.8.1) with runtime-hooks/hooks.d/ (hooks
# schema 1.0.0, when.annotations on the tdf key; hook path rewritten to this
# checkout's runtime-hooks/bin/tdf-oci-hook): tdf-oci-hook-precreate.json
# (stage precreate: adds the time namespace podman has no option for) and
# tdf-oci-hook.json (stage createRuntime: dilates it).
#   1 no annotation: the container runs undilated, no hook is called
#   2 createRuntime file alone: the hook refuses (no time namespace)
#   3 both, bad TDF: the namespace is added, createRuntime refuses the TDF
#   4-7 both, --annotation io.github.time-dilated-containers.tdf=10: the
#     container starts, reads TDF 10 in a time namespace of its own, its
#     clock runs at 1/10 of the host's (within 1%), podman stop leaves nothing
#   8 TDF 10 under build/bin/runc (runtime-hooks/build-runc.sh), which keeps
#     the pid namespace with any crun
# crun < 1.8.4 cannot start a new pid + time namespace together (see
# runtime-hooks/README.md), so 3-7 run with --uidmap there: in a user
# namespace crun creates both with its last fork, and the container keeps a
# pid namespace. SKIPs without podman, busybox-static, jq or the hook.
# tdc-timeout: 360
set -u
export LC_ALL=C
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HOOK=$ROOT/runtime-hooks/bin/tdf-oci-hook
RUNC=$ROOT/build/bin/runc
KEY=io.github.time-dilated-containers.tdf
S=${OCI_TEST_SLEEP:-25}     # host seconds between the two clock reads
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/container.sh"
SKIP_REST_NAME="podman test"
tap_plan 8

TMPD=$(mktemp -d /tmp/podman-test.XXXXXX)
HOOKS=$TMPD/hooks.d
pm() { timeout 120 podman --root "$TMPD/root" --runroot "$TMPD/runroot" --storage-driver vfs \
	--cgroup-manager=cgroupfs --events-backend=file --hooks-dir "$HOOKS" "$@"; }
cleanup() {
	HOOKS=$TMPD/hooks.d
	pm rm -af -t 0 >/dev/null 2>&1
	pm system reset -f >/dev/null 2>&1
	rm -rf "$TMPD" 2>/dev/null
}
trap cleanup EXIT

container_check "podman=apt-get install podman" jq
[ -n "$why" ] || [ -x "$HOOK" ] || why="$HOOK not built (make -C runtime-hooks build)"
[ -n "$why" ] && skip_rest "$why"
container_cgroup2
CRUN=$(crun --version 2>/dev/null | awk 'NR == 1 {print $3}')
echo "# $(podman --version), crun $CRUN, kernel $(uname -r)"

# the shipped hooks.d files, hook path pointing at this checkout; hooks-cr.d:
# the createRuntime one alone (what podman-basic.t tested before precreate)
mkdir -p "$HOOKS" "$TMPD/hooks-cr.d" "$TMPD/rootfs/bin" "$TMPD/rootfs/proc" "$TMPD/rootfs/dev" \
	"$TMPD/rootfs/sys" "$TMPD/rootfs/tmp" "$TMPD/rootfs/ctl" "$TMPD/ctl"
for f in tdf-oci-hook tdf-oci-hook-precreate; do
	jq --arg p "$HOOK" '.hook.path = $p' "$ROOT/runtime-hooks/hooks.d/$f.json" >"$HOOKS/$f.json"
done
cp "$HOOKS/tdf-oci-hook.json" "$TMPD/hooks-cr.d/"
cp "$BB" "$TMPD/rootfs/bin/busybox"
for a in sh cat echo sleep ls; do ln -s busybox "$TMPD/rootfs/bin/$a"; done
tar -C "$TMPD/rootfs" -cf "$TMPD/rootfs.tar" .
out=$(pm import "$TMPD/rootfs.tar" localhost/tdf-busybox:test 2>&1) || skip_rest "podman import failed: $(echo "$out" | tail -1)"
RUN=(run --rm --network none --pull never)

# 1: no annotation: runs undilated, no hook is called (when.annotations)
out=$(pm "${RUN[@]}" localhost/tdf-busybox:test sh -c 'echo hello; cat /proc/self/timens_dilation' 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(printf '%s' "$out" | tr '\n' ' ')" = "hello 1" ]; then ok "no annotation: container runs undilated"
else notok "no annotation: container runs undilated" "rc=$rc $out"; skip_rest "podman cannot run a container here"; fi

# run_fail NAME WANT ARGS...: podman run ARGS must fail, the createRuntime
# hook's line must be WANT (crun sends it to run.oci.hooks.stderr), the
# container must not run, nothing may be left
run_fail() {
	local name=$1 want=$2 out rc herr left
	shift 2
	rm -f "$TMPD/hook.err"
	out=$(pm "${RUN[@]}" "$@" --annotation "run.oci.hooks.stderr=$TMPD/hook.err" \
		localhost/tdf-busybox:test sh -c 'echo should-not-run' 2>&1); rc=$?
	herr=$(cat "$TMPD/hook.err" 2>/dev/null)
	left=$(pm ps -aq 2>&1)
	echo "# podman run: rc $rc, hook: $herr"
	if [ $rc -ne 0 ] && [ "$herr" = "$want" ] && ! grep -q should-not-run <<<"$out" && [ -z "$left" ]; then
		ok "$name: \"$want\", container does not run, nothing left"
	else
		notok "$name: \"$want\", container does not run, nothing left" "rc=$rc
$out
hook: $herr
left: $left"
	fi
}

# 2: without the precreate file podman gives no time namespace: the hook refuses
HOOKS=$TMPD/hooks-cr.d
run_fail "createRuntime hook alone refuses" \
	'tdf-oci-hook: container has no time namespace; add {"type": "time"} to linux.namespaces' --annotation "$KEY=10"
HOOKS=$TMPD/hooks.d

# 3-7 run in a user namespace with crun < 1.8.4 (see the top)
NS=()
if [ "$(printf '%s\n' 1.8.4 "$CRUN" | sort -V | head -1)" != 1.8.4 ]; then
	NS=(--uidmap 0:100000:65536 --gidmap 0:100000:65536)
	echo "# crun $CRUN < 1.8.4 cannot create pid + time namespaces together: running in a user namespace (${NS[*]})"
fi

# 3: precreate adds the namespace whatever the TDF; createRuntime validates it
run_fail "bad TDF 0" "tdf-oci-hook: annotation $KEY: invalid TDF \"0\": must lie in [1/1000, 1000]" "${NS[@]}" --annotation "$KEY=0"

# 4-7: TDF 10, clock rate against the host. The container writes to /ctl/out
# (a bind mount: no attach buffering in between) and waits on FIFOs there
now() { echo "$EPOCHREALTIME"; }
# wait_line RE: until the container wrote a line matching RE (90 s); prints the host time after
wait_line() { container_wait_line "$TMPD/ctl/out" 90 "" "$1"; }
: >"$TMPD/ctl/out"
chmod 666 "$TMPD/ctl/out"   # container root may be uid 100000 on the host
mkfifo -m 666 "$TMPD/ctl/a" "$TMPD/ctl/b"
# shellcheck disable=SC2016 # expanded in the container
SCRIPT='o=/ctl/out; cat /proc/self/timens_dilation >> $o; ls -l /proc/self/ns/time /proc/self/ns/pid >> $o; echo ready >> $o
read x < /ctl/a; read u r < /proc/uptime; echo "u1 $u" >> $o
read x < /ctl/b; read u r < /proc/uptime; echo "u2 $u" >> $o; exec sleep 1000000'
out=$(pm "${RUN[@]}" -d --name tdf-dil "${NS[@]}" --annotation "$KEY=10" --annotation "run.oci.hooks.stderr=$TMPD/hook.err" \
	-v "$TMPD/ctl:/ctl" localhost/tdf-busybox:test sh -c "$SCRIPT" 2>&1); rc=$?
if [ $rc -eq 0 ] && wait_line '^ready$' >/dev/null; then
	ok "tdf=10: container starts (precreate + createRuntime from hooks.d)"
else
	notok "tdf=10: container starts (precreate + createRuntime from hooks.d)" "rc=$rc $out
hook: $(cat "$TMPD/hook.err" 2>/dev/null)
$(cat "$TMPD/ctl/out")"
	skip_rest "the dilated container did not start"
fi
cpid=$(pm inspect -f '{{.State.Pid}}' tdf-dil 2>/dev/null)
tns=$(readlink "/proc/$cpid/ns/time" 2>/dev/null)
cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$cpid/cgroup" 2>/dev/null)
tdf=$(head -1 "$TMPD/ctl/out")
if [ "$tdf" = 10 ] && [ -n "$tns" ] && [ "$tns" != "$(readlink /proc/self/ns/time)" ]; then
	ok "TDF in the container reads 10, in a time namespace of its own ($tns)"
else
	notok "TDF in the container reads 10, in a time namespace of its own" "read: $tdf; pid '$cpid' $tns; host $(readlink /proc/self/ns/time)
$(cat "$TMPD/ctl/out")"
fi
grep -F /proc/self/ns/ "$TMPD/ctl/out" | sed 's/^/# /'

h1=$(now); echo go >"$TMPD/ctl/a"
s1=$(wait_line '^u1 ')
sleep "$S"
h2=$(now); echo go >"$TMPD/ctl/b"
s2=$(wait_line '^u2 ')
u1=$(awk '$1 == "u1" {print $2}' "$TMPD/ctl/out"); u2=$(awk '$1 == "u2" {print $2}' "$TMPD/ctl/out")
res=$(container_rate 10 "$h1" "$s1" "$h2" "$s2" "$u1" "$u2")
echo "# $res"
case ${res%% *} in
ok) ok "clock rate 1/10 of the host (10 +- 1% within the bracket)" ;;
wide) skip "clock rate 1/10 of the host" "bracket wider than 10% (machine too loaded)" ;;
*) notok "clock rate 1/10 of the host (within 1%)" "$res
$(cat "$TMPD/ctl/out")" ;;
esac

# stop (--rm: podman's cleanup removes it, asynchronously): no container,
# no task left in its time namespace, no cgroup
out=$(pm stop -t 1 tdf-dil 2>&1); rc=$?
for _ in $(seq 1 30); do
	left=$(pm ps -aq 2>&1)
	[ -z "$left" ] && break
	sleep 2
done
for p in /proc/[0-9]*; do
	[ -n "$tns" ] && [ "$(readlink "$p/ns/time" 2>/dev/null)" = "$tns" ] && left="$left ${p#/proc/}"
done
[ -n "$cg" ] && [ -d "/sys/fs/cgroup$cg" ] && left="$left /sys/fs/cgroup$cg"
if [ $rc -eq 0 ] && [ -z "$left" ]; then ok "podman stop leaves nothing (container, time namespace, cgroup)"
else notok "podman stop leaves nothing" "stop rc $rc: $out
left: $left"; fi

# 8: runc >= 1.2 as podman's runtime (its nsexec creates pid and time
# namespaces together); without libseccomp-dev at build time it refuses
# podman's default seccomp profile, hence unconfined then
if [ ! -x "$RUNC" ]; then
	skip "podman --runtime build/bin/runc: TDF reads 10 in a pid namespace" "$RUNC not built (runtime-hooks/build-runc.sh)"
	exit 0
fi
SEC=()
"$RUNC" --version | grep -q '^libseccomp:' || SEC=(--security-opt seccomp=unconfined)
out=$(pm --runtime "$RUNC" "${RUN[@]}" "${SEC[@]}" --annotation "$KEY=10" localhost/tdf-busybox:test \
	sh -c 'cat /proc/self/timens_dilation; echo pid $$' 2>&1); rc=$?
left=$(pm ps -aq 2>&1)
v=$("$RUNC" --version | awk 'NR == 1 {print $3}')
if [ $rc -eq 0 ] && [ "$(printf '%s' "$out" | tr '\n' ' ')" = "10 pid 1" ] && [ -z "$left" ]; then
	ok "podman --runtime build/bin/runc (runc $v${SEC[*]:+, ${SEC[*]}}): TDF reads 10 in a pid namespace, nothing left"
else
	notok "podman --runtime build/bin/runc (runc $v): TDF reads 10 in a pid namespace, nothing left" "rc=$rc $out
left: $left"
fi
