#!/bin/bash
# LXC (Debian's LXC 5.0): liblxc-plugin/tdf.conf (time namespace) plus the
# start-host hook liblxc-plugin/tdf-start-host with TDF 10 and cpus=20 start a
# busybox container (lxc-create -t busybox, private lxcpath, no network)
# dilated: /proc/PID/timens_dilation reads 10, cpu.max is 20000 10000, and the
# clock inside (/proc/uptime read by a process started with lxc-attach) advances 1/10 as fast as the
# host's. A bad TDF and a config without the include fail the start with one
# "tdf-start-host:" line and leave nothing; stop + destroy leave nothing.
# SKIPs without lxc, busybox-static, tools/bin/dilated-node or the kernel support.
# tdc-timeout: 300
set -u
export LC_ALL=C
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
PLUG=$ROOT/liblxc-plugin
DN=$ROOT/tools/bin/dilated-node
S=${LXC_TEST_SLEEP:-30}     # host seconds between the two clock reads
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/container.sh"
SKIP_REST_NAME="lxc test"
tap_plan 7

TMPD=$(mktemp -d /tmp/lxc-test.XXXXXX)
P=$TMPD/lxcpath
C=tdfl$$
lx() { local c=$1; shift; timeout 60 "$c" -P "$P" -n "$C" "$@"; }
cleanup() {
	lxc-stop -P "$P" -n "$C" -k >/dev/null 2>&1
	lxc-destroy -P "$P" -n "$C" -f >/dev/null 2>&1
	rmdir /sys/fs/cgroup/lxc.payload."$C" /sys/fs/cgroup/lxc.monitor."$C" 2>/dev/null
	rm -rf "$TMPD"
}
trap cleanup EXIT

# lxc-create -t busybox needs the static busybox too
container_check "lxc-start=apt-get install lxc"
[ -n "$why" ] || [ -x "$DN" ] || why="$DN not built (make -C tools build)"
[ -n "$why" ] && skip_rest "$why"
container_cgroup2
echo "# $(lxc-start --version 2>&1 | head -1 | sed 's/^/lxc /'), kernel $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

mkdir -p "$P"
printf 'lxc.net.0.type = empty\nlxc.apparmor.profile = unconfined\n' >"$TMPD/base.conf"
out=$(lx lxc-create -t busybox -f "$TMPD/base.conf" 2>&1) || skip_rest "lxc-create -t busybox failed: $(echo "$out" | tail -1)"
CFG=$P/$C/config
cp "$CFG" "$TMPD/config.orig"
# mkconfig LINE...: the created config plus these lines
mkconfig() { { cat "$TMPD/config.orig"; printf '%s\n' "$@"; } >"$CFG"; }
HOOK="lxc.hook.start-host = $PLUG/tdf-start-host"
INC="lxc.include = $PLUG/tdf.conf"

leftovers() {
	lxc-ls -P "$P" --running 2>/dev/null
	ls -d /sys/fs/cgroup/lxc.payload."$C"* /sys/fs/cgroup/lxc.monitor."$C"* 2>/dev/null
	return 0
}
# start_fail NAME WANT: lxc-start -F must fail with exactly one hook line, WANT, and leave nothing
start_fail() {
	local name=$1 want=$2 out rc left
	out=$(timeout 60 lxc-start -P "$P" -n "$C" -F </dev/null 2>&1); rc=$?
	echo "# lxc-start: rc $rc: $(grep -F 'tdf-start-host:' <<<"$out" | head -2 | tr '\n' ' ')"
	left=$(leftovers)
	if [ $rc -ne 0 ] && [ "$(grep -cF 'tdf-start-host:' <<<"$out")" = 1 ] && grep -qxF -- "$want" <<<"$out" && [ -z "$left" ]; then
		ok "$name: start fails with \"$want\", nothing left"
	else
		notok "$name: start fails with \"$want\", nothing left" "rc=$rc
$out
left: $left"
	fi
}

# 1, 2: bad TDF; hook without the include (no time namespace)
mkconfig "$INC" "$HOOK 0"
start_fail "bad TDF 0" 'tdf-start-host: invalid TDF "0": must lie in [1/1000, 1000]'
mkconfig "$HOOK 10"
start_fail "no time namespace" "tdf-start-host: container has no time namespace of its own; add lxc.include = $PLUG/tdf.conf (or set lxc.time.offset.boot)"

# 3-6: TDF 10 with 20 perceived CPUs (2 real: lxc-attach must stay quick under QEMU TCG)
mkconfig "$INC" "$HOOK 10 cpus=20"
if out=$(lx lxc-start -l DEBUG -o "$TMPD/start.log" 2>&1) && lx lxc-wait -s RUNNING -t 30 >/dev/null 2>&1; then
	ok "container starts with tdf.conf and tdf-start-host 10 cpus=20"
else
	notok "container starts with tdf.conf and tdf-start-host 10 cpus=20" "$out
$(grep -E 'ERROR|tdf-start-host' "$TMPD/start.log" | tail -8)"
	skip_rest "container did not start"
fi
pid=$(lx lxc-info -pH 2>/dev/null)
host=$(cat "/proc/$pid/timens_dilation" 2>/dev/null)
inside=$(lx lxc-attach -- cat /proc/self/timens_dilation 2>&1)
if [ "$host" = 10 ] && [ "$inside" = 10 ]; then ok "TDF reads 10 (/proc/$pid/timens_dilation and inside via lxc-attach)"
else notok "TDF reads 10" "host /proc/$pid/timens_dilation: '$host', inside: '$inside'"; fi
cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup" 2>/dev/null)
cm=$(cat "/sys/fs/cgroup$cg/cpu.max" 2>/dev/null)
if [ "$cm" = "20000 10000" ]; then ok "cpu.max is 20000 10000 ($cg)"; else notok "cpu.max is 20000 10000" "cgroup '$cg' pid '$pid': '$cm'"; fi

# clock rate: a reader started inside (lxc-attach) blocks on FIFOs in the
# container's rootfs and reads its /proc/uptime when released; the read
# happens at some instant in (h1, s1) and (h2, s2) host time
R=$P/$C/rootfs/tdf-test
mkdir -p "$R" && mkfifo "$R/a" "$R/b"
lx lxc-attach -- sh -c 'echo ready; read x < /tdf-test/a; read u r < /proc/uptime; echo "u1 $u"; read x < /tdf-test/b; read u r < /proc/uptime; echo "u2 $u"' >"$TMPD/rd.out" 2>&1 &
RPID=$!
now() { echo "$EPOCHREALTIME"; }
# wait_line RE: until the reader printed a line matching RE (60 s); prints the host time after
wait_line() { container_wait_line "$TMPD/rd.out" 60 "$RPID" "$1"; }
wait_line '^ready$' >/dev/null
h1=$(now); echo go >"$R/a"; s1=$(wait_line '^u1 ')
sleep "$S"
h2=$(now); echo go >"$R/b"; s2=$(wait_line '^u2 ')
wait "$RPID"
u1=$(awk '$1 == "u1" {print $2}' "$TMPD/rd.out"); u2=$(awk '$1 == "u2" {print $2}' "$TMPD/rd.out")
res=$(awk -v h1="$h1" -v s1="$s1" -v h2="$h2" -v s2="$s2" -v u1="$u1" -v u2="$u2" 'BEGIN {
	d = u2 - u1; if (u1 == "" || u2 == "" || d <= 0.02) { print "bad container", u1, u2, s1, s2; exit }
	lo = (h2 - s1) / (d + 0.01); hi = (s2 - h1) / (d - 0.01)
	okk = (lo <= 10.1 && hi >= 9.9) ? "ok" : "bad"; if (hi / lo > 1.1) okk = "wide"
	printf "%s container %.2f s, host %.3f..%.3f s, TDF in [%.4f, %.4f]\n", okk, d, h2 - s1, s2 - h1, lo, hi }')
echo "# $res"
case ${res%% *} in
ok) ok "clock rate 1/10 of the host (10 +- 1% within the bracket)" ;;
wide) skip "clock rate 1/10 of the host" "bracket wider than 10% (machine too loaded)" ;;
*) notok "clock rate 1/10 of the host" "$res" ;;
esac

# 7: stop and destroy leave nothing
lx lxc-stop -k >/dev/null 2>&1; rs=$?
lx lxc-destroy >/dev/null 2>&1; rd=$?
left=$(leftovers; ls -d "$P/$C" 2>/dev/null)
if [ $rs -eq 0 ] && [ $rd -eq 0 ] && [ -z "$left" ]; then ok "lxc-stop -k and lxc-destroy leave nothing"
else notok "lxc-stop -k and lxc-destroy leave nothing" "stop rc $rs, destroy rc $rd, left: $left"; fi
