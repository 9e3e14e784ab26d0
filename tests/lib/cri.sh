# shellcheck shell=bash
# The setup of the CRI tests (tests/vm/cri-*.t; sourced after tap.sh and
# container.sh, with ROOT set): Debian's containerd 1.6 with its built-in CRI
# plugin, started with its own config and tmpfs root/state, driven by
# runtime-hooks/bin/tdf-cri. Runtime handler "dilated" (what a RuntimeClass
# "dilated" names): the runc shim with BinaryName =
# runtime-hooks/bin/tdf-runtime, which execs build/bin/runc (runc 1.3.6: time
# namespaces) and adds the time namespace and tdf-oci-hook to annotated
# bundles; pod_annotations lets io.github.time-dilated-containers.* through.
# CNI: Debian's bridge + host-local, chained with tools/bin/tdf-cni (netem from
# the netem annotation, scaled by the TDF). Images: OCI archives made from
# busybox-static by "tdf-cri mkimage" and imported with ctr (no registry).
#   cri_setup [-p] BIN...   check the prerequisites (and the host binaries
#       BIN), mount the tmpfs $T, write the configs, start containerd (trap:
#       cleanup); a missing prerequisite fails every point (fail_rest). -p:
#       tdf-cni's profiles from $T/profiles, a copy of netem-profiles/ the
#       test adds its own to

#   cri ARGS...         tdf-cri against our containerd (300 s at most)
#   cri_mkimage NAME REF [-f SRC:/DST]... CMD...   an image from busybox-static
#       (plus the files), imported into the k8s.io namespace, seen by the CRI
#   podjson NAME UID ANNOTATIONS(JSON object)      a PodSandboxConfig
#   ctrjson NAME CTLDIR QUOTA SCRIPT [IMAGE]       a ContainerConfig: sh -c
#       SCRIPT, CTLDIR at /ctl, the CPU limit QUOTA per 100 ms
#   bridge_ports, leftovers, shims_left, rmstep CRI-ARGS...   see below
RUNC=$ROOT/build/bin/runc
WRAP=$ROOT/runtime-hooks/bin/tdf-runtime
HOOK=$ROOT/runtime-hooks/bin/tdf-oci-hook
CRI=$ROOT/runtime-hooks/bin/tdf-cri
CNI=$ROOT/tools/bin/tdf-cni
KEY=io.github.time-dilated-containers.tdf
NKEY=io.github.time-dilated-containers.netem
BR=tdfcri0
CTRD=

# a missing prerequisite is a failure here (setup-host installs them all)
fail_rest() {
	while [ "$TAP_N" -lt "$TAP_TOTAL" ]; do notok "CRI test" "$1"; done
	exit 1
}

cri() { timeout 300 "$CRI" -e "unix://$SOCK" "$@"; }

cleanup() {
	local id p
	if [ -n "$CTRD" ]; then
		for id in $(cri ps 2>/dev/null | awk '{print $1}'); do cri stop "$id" >/dev/null 2>&1; cri rm "$id" >/dev/null 2>&1; done
		for id in $(cri pods 2>/dev/null | awk '{print $1}'); do cri stopp "$id" >/dev/null 2>&1; cri rmp "$id" >/dev/null 2>&1; done
		kill "$CTRD" 2>/dev/null; wait "$CTRD" 2>/dev/null
		# shims left by a failed run: they name our socket on their command line
		for p in $(pgrep -f -- "-address $SOCK"); do kill "$p" 2>/dev/null; done
	fi
	jobs -p | xargs -r kill 2>/dev/null
	ip link del "$BR" 2>/dev/null
	find "/sys/fs/cgroup/$CGP" -depth -type d -exec rmdir {} \; 2>/dev/null
	umount -l "$T" 2>/dev/null
	rm -rf "$T"
}

cri_setup() {
	local f p up _ profiles=$ROOT/netem-profiles own=
	[ "${1:-}" = -p ] && { own=1; shift; }
	T=$(mktemp -d /tmp/cri-test.XXXXXX)
	SOCK=$T/containerd.sock
	CGP=tdf-cri-test-$$
	trap cleanup EXIT
	container_check containerd ctr containerd-shim-runc-v2 jq nsenter tc
	[ -n "$why" ] && fail_rest "$why"
	for f in "$RUNC" "$WRAP" "$HOOK" "$CRI" "$CNI" /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback "$@"; do
		[ -x "$f" ] || fail_rest "$f missing (make build-tools; containernetworking-plugins)"
	done
	container_cgroup2
	mount -t tmpfs -o mode=0755 tmpfs "$T" || fail_rest "cannot mount a tmpfs on $T"
	mkdir -p "$T/bin" "$T/cni-bin" "$T/net.d" "$T/ipam" "$T/logs"
	if [ -n "$own" ]; then
		profiles=$T/profiles
		cp -r "$ROOT/netem-profiles" "$profiles" || fail_rest "cannot copy netem-profiles/"
	fi
	# the binaries that run per container go to the tmpfs: from the guest's 9p
	# root every exec of a 16 MB Go binary (runc, the shim) costs seconds of
	# page faults, and containerd gives a task's delete 10 s
	cp "$RUNC" "$WRAP" "$HOOK" "$CRI" "$CNI" "$(command -v containerd-shim-runc-v2)" "$T/bin/" ||
		fail_rest "cannot copy the binaries to $T/bin"
	RUNC=$T/bin/runc WRAP=$T/bin/tdf-runtime HOOK=$T/bin/tdf-oci-hook CRI=$T/bin/tdf-cri CNI=$T/bin/tdf-cni
	export PATH=$T/bin:$PATH
	for p in bridge host-local loopback; do ln -s "/usr/lib/cni/$p" "$T/cni-bin/$p"; done
	ln -s "$CNI" "$T/cni-bin/tdf-cni"
	cat >"$T/net.d/10-tdf.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "tdf-test", "plugins": [
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.231.0.0/24"}]], "dataDir": "$T/ipam"}},
  {"type": "tdf-cni", "profileDir": "$profiles",
   "capabilities": {"io.kubernetes.cri.pod-annotations": true}}
]}
EOF
	cat >"$T/tdf-runtime.conf" <<EOF
# tdf-runtime's configuration (TDF_RUNTIME_CONFIG)
runtime = $RUNC
hook = $HOOK
EOF
	cat >"$T/config.toml" <<EOF
version = 2
root = "$T/root"
state = "$T/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/tdf-pause:1"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$RUNC"
        Root = "$T/runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.dilated]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["io.github.time-dilated-containers.*"]
      container_annotations = ["io.github.time-dilated-containers.*"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.dilated.options]
        BinaryName = "$WRAP"
        Root = "$T/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$T/cni-bin"
    conf_dir = "$T/net.d"
EOF
	echo "# $(containerd --version), $("$RUNC" --version | head -1), kernel $(uname -r)"
	TDF_RUNTIME_CONFIG=$T/tdf-runtime.conf containerd --config "$T/config.toml" >"$T/containerd.log" 2>&1 &
	CTRD=$!
	up=
	for _ in $(seq 1 120); do
		cri version >/dev/null 2>&1 && { up=1; break; }
		kill -0 "$CTRD" 2>/dev/null || break
		sleep 0.5
	done
	[ -n "$up" ] || fail_rest "containerd did not come up: $(tail -5 "$T/containerd.log")"
	echo "# CRI: $(cri version)"
}

# cri_mkimage NAME REF [-f SRC:/DST]... CMD...: $T/NAME.tar, imported
cri_mkimage() {
	local name=$1 ref=$2 files=()
	shift 2
	while [ "${1:-}" = -f ]; do files+=(-f "$2"); shift 2; done
	"$CRI" mkimage "${files[@]}" "$T/$name.tar" "$ref" "$BB" "$@" &&
		ctr --address "$SOCK" -n k8s.io images import --snapshotter native "$T/$name.tar" &&
		cri image "$ref"
}

podjson() {
	cat <<EOF
{"metadata": {"name": "$1", "uid": "$2", "namespace": "default", "attempt": 0},
 "hostname": "$1", "log_directory": "$T/logs/$1", "annotations": $3,
 "linux": {"cgroup_parent": "/$CGP"}}
EOF
}
ctrjson() {
	jq -n --arg name "$1" --arg ctl "$2" --argjson quota "$3" --arg script "$4" --arg image "${5:-localhost/tdf-busybox:1}" '{
		metadata: {name: $name}, image: {image: $image},
		command: ["/bin/sh", "-c", $script], log_path: ($name + ".log"),
		mounts: [{container_path: "/ctl", host_path: $ctl}],
		linux: {resources: {cpu_quota: $quota, cpu_period: 100000}}}'
}
bridge_ports() { ip -o link show master "$BR" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1; }
# what a test's pods can leave: containers, pods, runc state, cgroups, veths,
# netem qdiscs, netns, IP allocations (empty: nothing)
leftovers() {
	cri ps 2>&1; cri pods 2>&1
	[ -d "$T/runc/k8s.io" ] && "$RUNC" --root "$T/runc/k8s.io" list -q 2>&1
	find "/sys/fs/cgroup/$CGP" -mindepth 1 -type d 2>/dev/null
	bridge_ports
	tc qdisc show 2>/dev/null | grep netem
	ls /var/run/netns 2>/dev/null | grep '^cni-'
	find "$T/ipam" -type f ! -name 'last_reserved_ip*' ! -name lock 2>/dev/null
	return 0
}
# shims (they name our socket) still running after up to 20 s
shims_left() {
	local _
	for _ in $(seq 1 40); do
		pgrep -f -- "-address $SOCK" >/dev/null || return 0
		sleep 0.5
	done
	pgrep -af -- "-address $SOCK"
}
# cri_check_removed RC WHAT [--ps]: the point after removing the pods (RC:
# the removal steps' status; WHAT: "both pods", "the 4 pods"): ok when RC is 0
# and nothing is left (leftovers, shims_left); else not ok with what is left
# and the end of containerd's log (--ps: the shells, shims and runc running)
cri_check_removed() {
	local rc=$1 what=$2 left
	left=$(leftovers; shims_left)
	if [ "$rc" -eq 0 ] && [ -z "$left" ]; then
		ok "stop and remove $what: no container, shim, runc state, cgroup, veth, netem, netns or IP left"
	else
		notok "removing the pods leaves nothing" "rc $rc
left: $left"
		tail -15 "$T/containerd.log" | sed 's/^/# containerd: /'
		[ "${3:-}" != --ps ] ||
			ps -eo pid,stat,wchan:20,args | grep -v grep | grep -E 'sh -c|shim|runc' | sed 's/^/# ps: /'
	fi
}
# rmstep CRI-ARGS...: one step of the removal, timed (runc calls take seconds
# in a TCG guest)
rmstep() {
	local t0=$EPOCHREALTIME out rc
	out=$(timeout 120 "$CRI" -e "unix://$SOCK" "$@" 2>&1); rc=$?
	echo "# $*: rc $rc, $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s${out:+: $out}"
	return $rc
}
