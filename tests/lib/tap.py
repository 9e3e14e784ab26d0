#!/usr/bin/env python3
"""TAP helpers for the test runner (scripts/run-tests, tests/guest/run-all).

  tap.py normalize NAME RC LOG   one suite's raw output + exit status -> TAP
  tap.py kunit [DMESG]           KUnit KTAP in dmesg -> TAP, one point per case
  tap.py gotest RC LOG           `go test -v` output -> TAP, one point per test
  tap.py summary FILE.tap...     per-suite counts, then "N passed, N failed, N skipped";
                                 exit 1 if anything failed or nothing passed/failed

Normalized TAP: only top-level lines `ok N desc [# SKIP|TODO why]` and
`not ok N desc ...` count. `not ok ... # TODO` counts as skipped. Missing points
(plan 1..N with fewer results), `Bail out!`, a timeout (RC 124/137) or a
non-zero exit other than 4 (kselftest's KSFT_SKIP) with no failing point each
add one failing point. Output with no TAP at all counts as one point from the
exit status: 0 pass, 4 skip, else fail.
"""
import re
import sys

RESULT = re.compile(r'^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?(.*)$')
PLAN = re.compile(r'^1\.\.(\d+)')
DIRECTIVE = re.compile(r'\s+#\s*(SKIP|TODO)\b\s*(.*)$', re.I)


def classify(status, rest):
    m = DIRECTIVE.search(rest)
    desc = rest[:m.start()] if m else rest
    directive = m.group(1).upper() if m else None
    if directive == 'SKIP' or (directive == 'TODO' and status == 'not ok'):
        return 'skip', desc, (m.group(2) if m else '')
    return ('pass' if status == 'ok' else 'fail'), desc, ''


class Out:
    def __init__(self):
        self.lines = []

    def add(self, kind, desc, why=''):
        n = len(self.lines) + 1
        desc = desc.replace('#', '\\#').strip() or '(unnamed)'
        if kind == 'pass':
            self.lines.append(f'ok {n} {desc}')
        elif kind == 'skip':
            self.lines.append(f'ok {n} {desc} # SKIP {why}'.rstrip())
        else:
            self.lines.append(f'not ok {n} {desc}' + (f' # {why}' if why else ''))

    def emit(self):
        print('TAP version 13')
        print(f'1..{len(self.lines)}')
        for line in self.lines:
            print(line)


def normalize(name, rc, path):
    rc = int(rc)
    out = Out()
    plan = None
    fails = 0
    bail = False
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if plan is None:
                m = PLAN.match(line)
                if m:
                    plan = int(m.group(1))
                    continue
            if line.startswith('Bail out!'):
                bail = True
                continue
            m = RESULT.match(line)
            if not m:
                continue
            kind, desc, why = classify(m.group(1), m.group(3))
            fails += kind == 'fail'
            out.add(kind, f'{name}: {desc}', why)
    seen = len(out.lines)
    if rc in (124, 137):
        out.add('fail', f'{name}: timed out (killed by the per-suite timeout)')
    elif bail:
        out.add('fail', f'{name}: Bail out!')
    elif seen == 0:
        if rc == 0:
            out.add('pass', name)
        elif rc == 4:
            out.add('skip', name, 'exit status 4 (KSFT_SKIP)')
        else:
            out.add('fail', f'{name}: exit status {rc}')
    else:
        if plan is not None and seen < plan:
            out.add('fail', f'{name}: only {seen} of {plan} planned test points reported')
        if rc not in (0, 4) and fails == 0:
            out.add('fail', f'{name}: exit status {rc}')
    out.emit()


TS = re.compile(r'^\[\s*\d+\.\d+\]\s?')


def kunit(path=None):
    """Top level of the KUnit KTAP is the list of suites (indent 0); their test
    cases are one level down (4 spaces). One point per case; a suite that
    reports no case (e.g. its init failed) is one point itself."""
    src = open(path, errors='replace') if path else sys.stdin
    out = Out()
    in_ktap = False
    cases = []
    suite = None
    for raw in src:
        line = TS.sub('', raw.rstrip('\n'))
        if not line.strip():
            continue
        if line.startswith('KTAP version') or line.startswith('TAP version'):
            in_ktap = True
            continue
        if not in_ktap:
            continue
        indent = len(line) - len(line.lstrip(' '))
        body = line.strip()
        if indent == 4 and body.startswith('# Subtest:'):
            suite = body.split(':', 1)[1].strip()
            cases = []
            continue
        m = RESULT.match(body)
        if not m:
            continue
        kind, desc, why = classify(m.group(1), m.group(3))
        if indent == 4:
            cases.append((kind, f'kunit: {suite or "?"}.{desc.strip()}', why))
        elif indent == 0:
            if cases:
                for c in cases:
                    out.add(*c)
            else:
                out.add(kind, f'kunit: {desc.strip()}', why)
            cases = []
            suite = None
    if not out.lines:
        out.add('skip', 'kunit', 'no KUnit results in dmesg (no suites built in?)')
    out.emit()


def gotest(rc, path):
    rc = int(rc)
    out = Out()
    res = re.compile(r'^--- (PASS|FAIL|SKIP): (\S+)')
    bad_pkg = re.compile(r'^(FAIL|ok|\?)\s+(\S+)\s*(.*)$')
    with open(path, errors='replace') as f:
        for line in f:
            m = res.match(line)          # top-level tests only (subtests are indented)
            if m:
                kind = {'PASS': 'pass', 'FAIL': 'fail', 'SKIP': 'skip'}[m.group(1)]
                out.add(kind, f'go: {m.group(2)}')
                continue
            m = bad_pkg.match(line)
            if m and m.group(1) == 'FAIL' and ('[build failed]' in m.group(3) or
                                               '[setup failed]' in m.group(3)):
                out.add('fail', f'go: package {m.group(2)} {m.group(3)}')
    if rc in (124, 137):
        out.add('fail', 'go: timed out')
    elif rc != 0 and not any(l.startswith('not ok') for l in out.lines):
        out.add('fail', f'go test: exit status {rc}')
    if not out.lines:
        out.add('skip', 'go', 'no tests')
    out.emit()


def summary(files):
    tot = {'pass': 0, 'fail': 0, 'skip': 0}
    failed = []
    for path in files:
        c = {'pass': 0, 'fail': 0, 'skip': 0}
        with open(path, errors='replace') as f:
            for line in f:
                m = RESULT.match(line.rstrip('\n'))
                if m:
                    kind, desc, _ = classify(m.group(1), m.group(3))
                    c[kind] += 1
                    if kind == 'fail':
                        failed.append(desc.strip())
        name = path.rsplit('/', 1)[-1].rsplit('.tap', 1)[0]
        print(f'  {name:48s} {c["pass"]:4d} passed {c["fail"]:4d} failed {c["skip"]:4d} skipped')
        for k in tot:
            tot[k] += c[k]
    if failed:
        print('failed:')
        for d in failed:
            print(f'  {d}')
    print(f'{tot["pass"]} passed, {tot["fail"]} failed, {tot["skip"]} skipped')
    return 1 if tot['fail'] or tot['pass'] + tot['fail'] == 0 else 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'normalize':
        normalize(*args)
    elif cmd == 'kunit':
        kunit(*args)
    elif cmd == 'gotest':
        gotest(*args)
    elif cmd == 'summary':
        sys.exit(summary(args))
    else:
        sys.exit(f'tap.py: unknown command {cmd}')


if __name__ == '__main__':
    main()
