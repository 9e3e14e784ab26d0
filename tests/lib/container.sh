# shellcheck shell=bash
# Prerequisites of the container tests (oci-*, lxc-*, podman-*; sourced after
# tap.sh).
#   container_check CMD[=HINT]...  sets why to the reason the tests cannot run
#       here (not root, no dilation in the kernel, a CMD missing, no static
#       busybox), empty if they can; sets BB to the static busybox
#   container_cgroup2              runtimes want cgroup v2 at /sys/fs/cgroup:
#       mount it there, or skip_rest
#   container_rate TDF H1 S1 H2 S2 U1 U2   the container's /proc/uptime read U1
#       at some host instant in (H1, S1) and U2 in (H2, S2): prints "ok|wide|bad
#       DETAILS", ok when TDF +- 1% lies in the bracket of the rate, wide when
#       the bracket is wider than 10% (reaction times of a loaded QEMU TCG)
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

# container_wait_line FILE SECS PID RE: wait until FILE has a line matching RE,
# for at most SECS s, and while PID lives (PID "": no such check); then print
# the host time ($EPOCHREALTIME), as the clock rate checks need it
container_wait_line() {
	local _
	for _ in $(seq 1 $(($2 * 100))); do
		grep -Eq "$4" "$1" 2>/dev/null && { echo "$EPOCHREALTIME"; return 0; }
		[ -z "$3" ] || kill -0 "$3" 2>/dev/null || break
		sleep 0.01
	done
	return 1
}

# /proc/uptime truncates to 0.01 s, hence the +- 0.01 on the container's side
container_rate() {
	awk -v t="$1" -v h1="$2" -v s1="$3" -v h2="$4" -v s2="$5" -v u1="$6" -v u2="$7" 'BEGIN {
		d = u2 - u1
		if (u1 == "" || u2 == "" || s1 == "" || s2 == "" || d <= 0.02) { print "bad container", u1, u2, s1, s2; exit }
		lo = (h2 - s1) / (d + 0.01); hi = (s2 - h1) / (d - 0.01)
		r = (lo <= t * 1.01 && hi >= t * 0.99) ? "ok" : "bad"; if (hi / lo > 1.1) r = "wide"
		printf "%s container %.2f s, host %.3f..%.3f s, TDF in [%.4f, %.4f]\n", r, d, h2 - s1, s2 - h1, lo, hi }'
}
