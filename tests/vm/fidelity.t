#!/bin/bash
# The fidelity experiments' short variants (fidelity/run --short): each one
# is a test point that passes when the experiment met its short criterion
# (stated in its report section and by `fidelity/run --list`). Then the
# report: report.md, results.json with each experiment's plot data, and a CSV
# per experiment (plots are drawn on the host: fidelity/run --report DIR).
# The full runs are a benchmark: make fidelity.
# tdc-timeout: 900
set -u
ROOT=${TDC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/lib/tap.sh"
SKIP_REST_NAME="fidelity experiment"
EXPS=(packet-timing throughput congestion-control beyond-machine cpu-scaling disk diecast)
tap_plan $((${#EXPS[@]} + 1))
OUTD=${TDC_OUT:-/tmp}/fidelity-short
why=
if [ "$(id -u)" != 0 ]; then why="not root"
elif [ ! -e /proc/self/timens_dilation ]; then why="kernel without time dilation"
elif ! /usr/bin/python3 -c 'import numpy, scipy' 2>/dev/null; then
	why="python3-numpy or python3-scipy missing (scripts/setup-host)"
fi
[ -n "$why" ] && skip_rest "$why"

rm -rf "$OUTD"
"$ROOT/fidelity/run" --short --out "$OUTD" 2>&1 | sed 's/^/# /'
[ -s "$OUTD/results.json" ] || { notok "fidelity/run wrote results.json"; skip_rest "no results"; }
# one TAP point per experiment, from results.json
/usr/bin/python3 - "$OUTD/results.json" "${EXPS[@]}" <<'PY'
import json, sys
res = {e["name"]: e for e in json.load(open(sys.argv[1]))["experiments"]}
for i, name in enumerate(sys.argv[2:], 1):
    e = res.get(name)
    if e is None:
        print(f"not ok {i} - {name}: not run")
    elif e.get("skipped"):
        print(f"ok {i} - {name} # SKIP {e['skipped']}")
    elif e["passed"]:
        print(f"ok {i} - {name}: {e['criterion']}")
    else:
        print(f"not ok {i} - {name}: {e['criterion']}")
        for c in e["checks"]:
            print(f"#   {'pass' if c['passed'] else 'FAIL'}: {c['what']}: {c['value']} ({c['limit']})")
        if e["error"]:
            print(f"#   error: {e['error']}")
PY
TAP_N=${#EXPS[@]}
missing=$(/usr/bin/python3 - "$OUTD" "${EXPS[@]}" <<'PY'
import json, os, sys
out = sys.argv[1]
res = {e["name"]: e for e in json.load(open(f"{out}/results.json"))["experiments"]}
for name in sys.argv[2:]:
    e = res.get(name, {})
    if e.get("skipped"):
        continue
    if not e.get("figures") or not all(f["series"] for f in e["figures"]):
        print(f"{name}: plot data")
    if not any(d.endswith(".csv") and os.path.getsize(f"{out}/{d}") for d in e.get("data", [])):
        print(f"{name}: CSV")
PY
)
[ -s "$OUTD/report.md" ] || missing+=" report.md"
if [ -z "$missing" ]; then ok "report.md, and plot data and a CSV for every experiment"
else notok "report.md, and plot data and a CSV for every experiment" "missing: $missing"; fi
