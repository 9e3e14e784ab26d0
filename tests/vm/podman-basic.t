#!/bin/bash
# Podman (Debian's podman 4.3 + crun 1.8.1) with runtime-hooks/hooks.d/tdf-oci-hook.json
# (hooks.d schema 1.0.0, stage createRuntime, when.annotations on the tdf key;
# hook path rewritten to this checkout's runtime-hooks/bin/tdf-oci-hook):
# without the annotation a container runs and the hook does nothing; with
# --annotation io.github.time-dilated-containers.tdf=10 the hook runs and, as
# podman 4.3 cannot put a time namespace into the spec, refuses with its "no
# time namespace" line and the container does not run. The dilated run is
# SKIPped with the reason. SKIPs without podman, busybox-static, jq or the hook.
# tdc-timeout: 240
set -u
export LC_ALL=C
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
HOOK=$ROOT/runtime-hooks/bin/tdf-oci-hook
KEY=io.github.time-dilated-containers.tdf
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/container.sh"
SKIP_REST_NAME="podman test"
tap_plan 3

TMPD=$(mktemp -d /tmp/podman-test.XXXXXX)
pm() { timeout 120 podman --root "$TMPD/root" --runroot "$TMPD/runroot" --storage-driver vfs \
	--cgroup-manager=cgroupfs --events-backend=file --hooks-dir "$TMPD/hooks.d" "$@"; }
cleanup() {
	pm rm -af >/dev/null 2>&1
	pm system reset -f >/dev/null 2>&1
	rm -rf "$TMPD" 2>/dev/null
}
trap cleanup EXIT

container_check "podman=apt-get install podman" jq
[ -n "$why" ] || [ -x "$HOOK" ] || why="$HOOK not built (make -C runtime-hooks build)"
[ -n "$why" ] && skip_rest "$why"
container_cgroup2
echo "# $(podman --version), $(crun --version 2>/dev/null | head -1), kernel $(uname -r)"

# the shipped hooks.d file, hook path pointing at this checkout
mkdir -p "$TMPD/hooks.d" "$TMPD/rootfs/bin" "$TMPD/rootfs/proc" "$TMPD/rootfs/dev" "$TMPD/rootfs/sys" "$TMPD/rootfs/tmp"
jq --arg p "$HOOK" '.hook.path = $p' "$ROOT/runtime-hooks/hooks.d/tdf-oci-hook.json" >"$TMPD/hooks.d/tdf-oci-hook.json"
cp "$BB" "$TMPD/rootfs/bin/busybox"
for a in sh cat echo; do ln -s busybox "$TMPD/rootfs/bin/$a"; done
tar -C "$TMPD/rootfs" -cf "$TMPD/rootfs.tar" .
out=$(pm import "$TMPD/rootfs.tar" localhost/tdf-busybox:test 2>&1) || skip_rest "podman import failed: $(echo "$out" | tail -1)"
RUN=(run --rm --network none --pull never)

# 1: no annotation: runs undilated, the hook is not called
out=$(pm "${RUN[@]}" localhost/tdf-busybox:test sh -c 'echo hello; cat /proc/self/timens_dilation' 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(printf '%s' "$out" | tr '\n' ' ')" = "hello 1" ]; then ok "no annotation: container runs undilated"
else notok "no annotation: container runs undilated" "rc=$rc $out"; skip_rest "podman cannot run a container here"; fi

# 2: annotation: the hook runs (createRuntime, from hooks.d) and refuses: no time namespace
out=$(pm "${RUN[@]}" --annotation "$KEY=10" --annotation "run.oci.hooks.stderr=$TMPD/hook.err" \
	localhost/tdf-busybox:test sh -c 'echo should-not-run' 2>&1); rc=$?
herr=$(cat "$TMPD/hook.err" 2>/dev/null)
left=$(pm ps -aq 2>&1)
echo "# podman run: rc $rc, hook: $herr"
want='tdf-oci-hook: container has no time namespace; add {"type": "time"} to linux.namespaces'
if [ $rc -ne 0 ] && [ "$herr" = "$want" ] && ! grep -q should-not-run <<<"$out" && [ -z "$left" ]; then
	ok "tdf=10: hook from hooks.d refuses (no time namespace), container does not run, nothing left"
else
	notok "tdf=10: hook from hooks.d refuses (no time namespace), container does not run" "rc=$rc
$out
hook: $herr
left: $left"
fi

# 3: dilated run
skip "podman container dilated with TDF 10" "podman 4.3 has no option to add a time namespace to the OCI spec (no --timens; crun 1.8.1's run.oci.timens_offset annotation sets offsets, it does not add the namespace the hook requires), and crun 1.8.1 cannot start pid + time namespaces together on this kernel (runtime-hooks/README.md)"
