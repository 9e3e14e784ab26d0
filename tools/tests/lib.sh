# Shared helpers for tests/vm/node-*.t (sourced). TAP output.
#   tap_plan N; ok NAME; notok NAME [DETAIL]; skip NAME REASON; check NAME CMD...
#   need_node_env  -> skips every test (and exits 0) when the kernel has no
#                     time dilation, when not root, or when the tool is missing
ROOT=${TDC_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
DN=$ROOT/tools/bin/dilated-node
export DILATED_NODE_PROFILES=$ROOT/netem-profiles
. "$ROOT/tests/lib/tap.sh"
. "$ROOT/tests/lib/neigh.sh"
TMPD=$(mktemp -d /tmp/dn-test.XXXXXX)
OUT=${TDC_OUT:-$TMPD}

need_node_env() {
	local why=
	if [ "$(id -u)" != 0 ]; then why="not root"
	elif [ ! -e /proc/self/timens_dilation ]; then why="kernel without /proc/self/timens_dilation"
	elif [ ! -x "$DN" ]; then why="$DN not built (make -C tools build)"
	fi
	[ -z "$why" ] || SKIP_REST_NAME="node test" skip_rest "$why"
	if ! grep -q ' - cgroup2 ' /proc/self/mountinfo; then
		mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null ||
			{ mkdir -p /tmp/cg2 && mount -t cgroup2 none /tmp/cg2; }
	fi
	CG=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
}

# leftovers: prints anything a dilated node might have left behind
leftovers() {
	ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^(dn-|dnp-|dnbr0)' | sed 's/^/link /'
	[ -d "$CG/dilated-node" ] && echo "cgroup $CG/dilated-node: $(ls "$CG/dilated-node")"
	return 0
}

# start_node NAME ARGS... -- CMD: runs dilated-node in the background with a
# command that writes its pid to $TMPD/NAME.ready, then waits for it.
# Sets NODE_PID (dilated-node) and NODE_INNER (the command's pid).
start_node() {
	local name=$1; shift
	rm -f "$TMPD/$name.ready"
	"$DN" run --name "$name" "$@" >"$TMPD/$name.out" 2>"$TMPD/$name.err" &
	NODE_PID=$!
	local i
	for i in $(seq 1 300); do
		[ -s "$TMPD/$name.ready" ] && break
		kill -0 "$NODE_PID" 2>/dev/null || break
		sleep 0.1
	done
	NODE_INNER=$(cat "$TMPD/$name.ready" 2>/dev/null)
	[ -n "$NODE_INNER" ]
}

# stop_node PID [SIG]: signal dilated-node and wait for it (max 30 s)
stop_node() {
	local pid=$1 sig=${2:-TERM} i
	kill -"$sig" "$pid" 2>/dev/null
	for i in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; "$DN" cleanup >/dev/null 2>&1; }
	wait "$pid" 2>/dev/null
}

# the command a background node runs: report pid, then wait forever
READY_CMD='echo $$ > "$READY"; exec sleep 100000'

cleanup_all() {
	jobs -p | xargs -r kill 2>/dev/null
	sleep 0.2
	"$DN" cleanup >/dev/null 2>&1
	rm -rf "$TMPD"
}
trap cleanup_all EXIT

# float helpers
fcmp() { awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN { exit !((op == "<=" && a <= b) || (op == ">=" && a >= b) || (op == "<" && a < b) || (op == ">" && a > b)) }'; }
within() { fcmp "$1" ">=" "$2" && fcmp "$1" "<=" "$3"; } # within X LO HI
