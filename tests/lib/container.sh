# shellcheck shell=bash
# Prerequisites of the container tests (oci-*, lxc-*, podman-*; sourced after
# tap.sh).
#   container_check CMD[=HINT]...  sets why to the reason the tests cannot run
#       here (not root, no dilation in the kernel, a CMD missing, no static
#       busybox), empty if they can; sets BB to the static busybox
#   container_cgroup2              runtimes want cgroup v2 at /sys/fs/cgroup:
#       mount it there, or skip_rest
# shellcheck disable=SC2034 # why and BB are for the caller
container_check() {
	local a c hint
	why=
	BB=$(command -v busybox)
	if [ "$(id -u)" != 0 ]; then why="not root"; return; fi
	if [ ! -e /proc/self/timens_dilation ]; then
		why="kernel without /proc/self/timens_dilation"; return
	fi
	for a; do
		c=${a%%=*} hint=
		[ "$c" = "$a" ] || hint=${a#*=}
		if ! command -v "$c" >/dev/null; then
			why="$c not installed${hint:+ ($hint)}"; return
		fi
	done
	if [ -z "$BB" ] || ! file -L "$BB" 2>/dev/null | grep -q 'statically linked'; then
		why="no static busybox (busybox-static)"
	fi
}

container_cgroup2() {
	grep -q ' /sys/fs/cgroup .* - cgroup2 ' /proc/self/mountinfo ||
		mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null ||
		skip_rest "cannot mount cgroup2 on /sys/fs/cgroup"
}
