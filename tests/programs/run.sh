# shellcheck shell=bash
# Shared part of tests/vm/programs-*.t: run whole programs under
# tests/programs/bin/tdfrun in a dilated time namespace and turn their output
# (protocol: tests/programs/tdfprog.h) into TAP.
#
#   programs_init                 TAP header; skips everything (exit 0) unless
#                                 root, dilation in the kernel, tdfrun built
#   run_program NAME TDF SECS CMD...   one program: a point per CHECK line
#                                 (its own clocks), per HOST line (tdfrun's
#                                 host-time check of a MARKed phase), and one
#                                 for "exit 0, DONE, every phase checked"
#   skip_program NAME WHY         one skipped point
#   programs_finish               the plan, at the end
# Build: make -C tests/programs build (on the host; the runner does it).
# PROGRAMS_TDF overrides every program's factor.  TDFRUN_PRETEND=1 (harness
# development on a kernel without dilation) is passed through to tdfrun: the
# factor is not written (use it with PROGRAMS_TDF=1).
ROOT=${TDC_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PBIN=$ROOT/tests/programs/bin
export LC_ALL=C
n=0

tap() { # tap ok|fail|skip DESC [WHY]
	n=$((n + 1))
	case $1 in
	ok) echo "ok $n - $2" ;;
	skip) echo "ok $n - $2 # SKIP $3" ;;
	*) echo "not ok $n - $2" ;;
	esac
}

programs_init() {
	local why=
	echo "TAP version 13"
	if [ "$(id -u)" != 0 ]; then
		why="needs root (run it in the VM: scripts/vm -- $0)"
	elif [ ! -e /proc/self/timens_dilation ] && [ -z "${TDFRUN_PRETEND:-}" ]; then
		why="kernel without /proc/self/timens_dilation"
	elif [ ! -x "$PBIN/tdfrun" ]; then
		why="tests/programs not built (make -C tests/programs build)"
	fi
	if [ -n "$why" ]; then
		echo "1..1"
		echo "ok 1 - $(basename "$0" .t) # SKIP $why"
		exit 0
	fi
}

skip_program() {
	tap skip "$1" "$2"
}

run_program() {
	local name=$1 tdf=${PROGRAMS_TDF:-$2} secs=$3 out rc t0 t1 checks=0 marks=0 hosts=0 done_n= kind rest
	shift 3
	t0=$(date +%s%N)
	out=$(timeout -k 5 "$secs" "$PBIN/tdfrun" "$tdf" "$@" </dev/null 2>&1)
	rc=$?
	t1=$(date +%s%N)
	printf '%s\n' "$out" | sed 's/^/# /'
	echo "# $name: exit $rc after $(( (t1 - t0) / 1000000 )) ms of host time"
	while IFS= read -r line; do
		case $line in
		"CHECK "*|"HOST "*)
			kind=${line%% *}
			rest=${line#* }
			[ "$kind" = CHECK ] && checks=$((checks + 1)) || hosts=$((hosts + 1))
			local what="$name tdf=$tdf"
			[ "$kind" = HOST ] && what="$what host time of"
			case $rest in
			"ok "*) tap ok "$what ${rest#ok }" ;;
			*) tap fail "$what ${rest#* }" ;;
			esac
			;;
		"MARK begin "*) marks=$((marks + 1)) ;;
		"DONE "*) done_n=${line#DONE } ;;
		esac
	done <<< "$out"
	if [ "$rc" = 0 ] && [ "$done_n" = "$checks" ] && [ "$marks" -gt 0 ] && [ "$hosts" = "$marks" ]; then
		tap ok "$name tdf=$tdf: ran to the end ($checks own-clock checks, $marks phases timed on the host)"
	else
		tap fail "$name tdf=$tdf: exit status $rc (124: timed out after $secs s), DONE ${done_n:-missing}, $checks CHECK lines, $marks phases, $hosts host checks"
	fi
}

programs_finish() {
	echo "1..$n"
}
