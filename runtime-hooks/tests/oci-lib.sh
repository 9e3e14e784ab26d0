# shellcheck shell=bash
# Shared body of tests/vm/oci-runc.t, oci-runc-upstream.t and oci-crun.t
# (sourced with RT set to the runtime: a command or a path, runc or crun;
# RT_HINT: how to get it when missing). TAP. Builds a busybox rootfs in a temp
# dir, generates config.json with "$RT spec" + jq, installs
# runtime-hooks/bin/tdf-oci-hook as a createRuntime hook, and runs containers
# with "$RT run".
ROOT=${TDC_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
HOOK=$ROOT/runtime-hooks/bin/tdf-oci-hook
KEY=io.github.time-dilated-containers.tdf
NOPID=
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/container.sh"
TMPD=$(mktemp -d /tmp/oci-test.XXXXXX)
STATE=$TMPD/state           # --root of the runtime: only our containers
CGPREFIX=tdf-oci-test-$$
S=${OCI_TEST_SLEEP:-25}     # host seconds between the two clock reads

RTNAME=$(basename "$RT")
tap_plan 9
SKIP_REST_NAME="$RTNAME test"
rtc() { "$RT" --root "$STATE" "$@"; }
cleanup() {
	local id
	for id in $(rtc list -q 2>/dev/null); do rtc delete -f "$id" >/dev/null 2>&1; done
	jobs -p | xargs -r kill 2>/dev/null
	rmdir /sys/fs/cgroup/"$CGPREFIX"-* 2>/dev/null
	rm -rf "$TMPD"
}
trap cleanup EXIT

container_check "$RT=${RT_HINT:-apt-get install $RTNAME}" jq
[ -n "$why" ] || [ -x "$HOOK" ] || why="$HOOK not built (make -C runtime-hooks build)"
[ -n "$why" ] && skip_rest "$why"
container_cgroup2
echo "# $("$RT" --version | head -1), kernel $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# does the runtime know time namespaces? runc: "runc features" (>= 1.1) lists them;
# crun has had "time" since 0.x (crun 1.8.1 has no "features" command)
TIMENS=yes
if [ "$RTNAME" = runc ]; then
	f=$("$RT" features 2>/dev/null | jq -r '.linux.namespaces // [] | join(",")')
	case ",$f," in *,time,*) ;; *) TIMENS="runc $("$RT" --version | awk 'NR==1{print $3}') has no time namespace support (runc features: $f); it needs runc >= 1.2.0 (runtime-hooks/build-runc.sh)" ;; esac
fi

# rootfs: static busybox and a control directory bind-mounted at /ctl
B=$TMPD/bundle
mkdir -p "$B/rootfs/bin" "$B/rootfs/proc" "$B/rootfs/dev" "$B/rootfs/sys" "$B/rootfs/tmp" "$B/rootfs/ctl" "$TMPD/ctl"
cp "$BB" "$B/rootfs/bin/busybox"
for a in sh cat echo sleep; do ln -s busybox "$B/rootfs/bin/$a"; done
(cd "$B" && "$RT" spec) || skip_rest "$RT spec failed"
cp "$B/config.json" "$TMPD/spec.json"

# mkconfig ID TDF|- TIMENS(yes|no) SCRIPT [CPUS]: writes $B/config.json
mkconfig() {
	local id=$1 tdf=$2 tns=$3 script=$4 cpus=${5:-}
	jq --arg hook "$HOOK" --arg key "$KEY" --arg tdf "$tdf" --arg cpus "$cpus" --arg tns "$tns" \
		--arg script "$script" --arg ctl "$TMPD/ctl" --arg cg "/$CGPREFIX-$id" --arg nopid "$NOPID" --arg herr "$TMPD/hook-$id.err" '
		.process.terminal = false
		| .process.args = ["/bin/sh", "-c", $script]
		| .root.readonly = true
		| .linux.cgroupsPath = $cg
		| .hooks = {createRuntime: [{path: $hook, args: ["tdf-oci-hook"], timeout: 30}]}
		| .mounts += [{destination: "/ctl", type: "bind", source: $ctl, options: ["rbind", "rw"]}]
		| .annotations = ((.annotations // {})
			+ (if $tdf != "-" then {($key): $tdf} else {} end)
			+ (if $cpus != "" then {($key + ".cpus"): $cpus} else {} end))
		| .annotations["run.oci.hooks.stderr"] = $herr
		| .linux.namespaces = ([.linux.namespaces[] | select(.type != "time")
				| select($tns != "yes" or $nopid == "" or .type != "pid")]
			+ (if $tns == "yes" then [{type: "time"}] else [] end))
	' "$TMPD/spec.json" > "$B/config.json"
}

# leftovers ID: containers in our state dir and our cgroups
leftovers() {
	rtc list 2>/dev/null | awk 'NR > 1'
	ls -d /sys/fs/cgroup/"$CGPREFIX"-* 2>/dev/null
	return 0
}

# run_fail NAME ID WANT: the run must fail with WANT in the output, and leave nothing
run_fail() {
	local name=$1 id=$2 want=$3 out rc left
	out=$(cd "$B" && timeout 60 "$RT" --root "$STATE" run "$id" </dev/null 2>&1); rc=$?
	# crun does not show a hook's stderr; the run.oci.hooks.stderr annotation sends it to a file
	[ -s "$TMPD/hook-$id.err" ] && out="$out
$(cat "$TMPD/hook-$id.err")"
	out=${out//\\/}   # runc's logger escapes the quotes of the hook's line
	echo "# $RT run: rc $rc: $(printf '%s' "$out" | head -3 | tr '\n' ' ')"
	left=$(leftovers)
	if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$out" && [ "$(grep -cF 'tdf-oci-hook:' <<<"$out")" -ge 1 ] && [ -z "$left" ]; then
		ok "$name: start fails with \"$want\", nothing left"
	else
		notok "$name: start fails with \"$want\", nothing left" "rc=$rc
$out
left: $left"
	fi
}

# 1: hook installed, no annotation: runs normally (the hook touches nothing)
mkconfig plain - no 'echo hello; cat /proc/self/timens_dilation 2>/dev/null || echo none'
out=$(cd "$B" && timeout 60 "$RT" --root "$STATE" run plain </dev/null 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -qx hello <<<"$out" && grep -Eqx '1|none' <<<"$out" && [ -z "$(leftovers)" ]; then
	ok "no annotation: container runs undilated, hook does nothing"
else
	notok "no annotation: container runs undilated" "rc=$rc $out"
	skip_rest "$RT cannot run a container here"
fi

# crun < 1.8.4 cannot start a container with both a new pid and a new time
# namespace on any kernel ("write to sync socket: Connection reset by peer",
# hook or not): it creates the pid namespace in its first clone, so the
# process that forks into the time namespace is the pid namespace's init and
# its exit kills the child (fixed by crun commit bfa4f48d, 1.8.4). The dilated
# containers below then run without a pid namespace (runtime-hooks/README.md)
NOPID=
if [ "$TIMENS" = yes ]; then
	mkconfig probe - yes 'echo hello'
	jq 'del(.hooks)' "$B/config.json" > "$B/c" && mv "$B/c" "$B/config.json"
	if ! out=$(cd "$B" && timeout 60 "$RT" --root "$STATE" run probe </dev/null 2>&1); then
		echo "# $RT cannot run pid + time namespaces together: $(echo "$out" | head -1); testing without a pid namespace"
		NOPID=1
		rtc delete -f probe >/dev/null 2>&1; rmdir "/sys/fs/cgroup/$CGPREFIX-probe" 2>/dev/null
	fi
fi

# 2, 3: bad TDF; no time namespace (the hook parses the TDF first, so these
# run with every runtime)
mkconfig bad 0 no 'echo should-not-run'
run_fail "bad TDF 0" bad "tdf-oci-hook: annotation $KEY: invalid TDF \"0\": must lie in [1/1000, 1000]"
mkconfig nons 10 no 'echo should-not-run'
run_fail "no time namespace" nons 'tdf-oci-hook: container has no time namespace; add {"type": "time"} to linux.namespaces'

# 4: bad cpus annotation
if [ "$TIMENS" = yes ]; then
	mkconfig badcpu 10 yes 'echo should-not-run' 100000
	run_fail "cpus above the machine" badcpu "tdf-oci-hook: annotation $KEY.cpus: 100000.000 perceived CPUs at scale 10 need 10000.000 real CPUs"
else
	skip "cpus above the machine" "$TIMENS"
fi

# 5-9: TDF 10 with 20 perceived CPUs (2 real: a smaller share would make the
# container's reactions too slow under QEMU TCG for a tight bracket); clock rate measured against the host
if [ "$TIMENS" != yes ]; then
	for t in "container starts with TDF 10" "TDF in the container reads 10" "cpu.max is 20000 10000" \
		"clock rate 1/10 of the host (within 1%)" "nothing left after exit"; do skip "$t" "$TIMENS"; done
	exit 0
fi
mkfifo "$TMPD/ctl/a" "$TMPD/ctl/b"
# shellcheck disable=SC2016 # expanded in the container
mkconfig dil 10 yes 'cat /proc/self/timens_dilation; echo ready; read x < /ctl/a; read u1 r < /proc/uptime; echo "u1 $u1"; read x < /ctl/b; read u2 r < /proc/uptime; echo "u2 $u2"' 20
(cd "$B" && exec "$RT" --root "$STATE" run dil </dev/null >"$TMPD/dil.out" 2>"$TMPD/dil.err") &
RPID=$!
now() { echo "$EPOCHREALTIME"; }
# wait_line RE: until the container printed a line matching RE (60 s); prints the host time after
wait_line() { container_wait_line "$TMPD/dil.out" 60 "$RPID" "$1"; }
if wait_line '^ready$' >/dev/null; then
	ok "container starts with TDF 10 (createRuntime hook)"
else
	notok "container starts with TDF 10" "$(cat "$TMPD/dil.out" "$TMPD/dil.err")"
	skip_rest "container did not start"
fi
tdf=$(head -1 "$TMPD/dil.out")
if [ "$tdf" = 10 ]; then ok "TDF in the container reads 10"; else notok "TDF in the container reads 10" "got: $tdf"; fi
cpid=$(rtc state dil 2>/dev/null | jq -r .pid)
cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$cpid/cgroup" 2>/dev/null)
cm=$(cat "/sys/fs/cgroup$cg/cpu.max" 2>/dev/null)
if [ "$cm" = "20000 10000" ]; then ok "cpu.max is 20000 10000 ($cg)"; else notok "cpu.max is 20000 10000" "cgroup '$cg' pid '$cpid': '$cm'"; fi

h1=$(now); echo go > "$TMPD/ctl/a"
s1=$(wait_line '^u1 ')
sleep "$S"
h2=$(now); echo go > "$TMPD/ctl/b"
s2=$(wait_line '^u2 ')
wait "$RPID"; rc=$?
u1=$(awk '$1 == "u1" {print $2}' "$TMPD/dil.out"); u2=$(awk '$1 == "u2" {print $2}' "$TMPD/dil.out")
res=$(container_rate 10 "$h1" "$s1" "$h2" "$s2" "$u1" "$u2")
echo "# $res"
# the bracket is as wide as the host's and the container's reaction times
# (hundreds of ms under a loaded QEMU TCG): pass when TDF 10 +- 1% lies in it
if [ $rc -eq 0 ] && [ "${res%% *}" = ok ]; then ok "clock rate 1/10 of the host (10 +- 1% within the bracket)"
elif [ $rc -eq 0 ] && [ "${res%% *}" = wide ]; then skip "clock rate 1/10 of the host" "bracket wider than 10% (machine too loaded)"
else notok "clock rate 1/10 of the host (within 1%)" "rc=$rc $res
$(cat "$TMPD/dil.out" "$TMPD/dil.err")"; fi
left=$(leftovers)
if [ -z "$left" ]; then ok "nothing left after exit"; else notok "nothing left after exit" "$left"; fi
