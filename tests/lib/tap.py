#!/usr/bin/env python3
"""TAP helpers for the test runner (scripts/run-tests, tests/guest/run-all).

  tap.py normalize NAME RC LOG   one suite's raw output + exit status -> TAP
  tap.py kunit [DMESG]           KUnit KTAP in dmesg -> TAP, one point per case
  tap.py gotest RC LOG           `go test -v` output -> TAP, one point per test
  tap.py dmesg DMESG             one point per kind of kernel report (oops, WARN,
                                 KASAN, UBSAN, lockdep, ...): fails if dmesg has one
  tap.py summary [--expected F] [--tree F] [--manifest F] [--filter RE] FILE.tap...
                                 per-suite counts, then "N passed, N failed, N skipped";
                                 exit 1 if anything failed or nothing passed/failed
                                 (see summary() for what else counts as failed)
  tap.py manifest OUT FILE.tap...  write tests/manifest from a clean run

Normalized TAP: only top-level lines `ok N desc [# SKIP|TODO why]` and
`not ok N desc ...` count. `not ok ... # TODO` counts as skipped. Missing points
(plan 1..N with fewer results), `Bail out!`, a timeout (RC 124/137) or a
non-zero exit other than 4 (kselftest's KSFT_SKIP) with no failing point each
add one failing point. Output with no TAP at all counts as one point from the
exit status: 0 pass, 4 skip, else fail.
"""
import os
import re
import sys

RESULT = re.compile(r'^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?(.*)$')
PLAN = re.compile(r'^1\.\.(\d+)')
# kselftest's skips have no description before the directive: "ok 3 # SKIP why"
DIRECTIVE = re.compile(r'(?:^|\s+)#\s*(SKIP|TODO)\b\s*(.*)$', re.I)


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


# The kernel's own verdict on a run: one point per kind of report, each a
# failure if dmesg has one. The sanitizers and lockdep report only on a debug
# kernel (kernel/config/debug.config); the rest on any.
DMESG_CHECKS = [
    ('no oops, panic or BUG', re.compile(
        r'Oops|Kernel panic|general protection fault|BUG: (?!KASAN|sleeping function)')),
    ('no WARN() splat', re.compile(r'WARNING: CPU: |-+\[ cut here \]-+')),
    ('no KASAN report', re.compile(r'KASAN: ')),
    ('no UBSAN report', re.compile(r'UBSAN: ')),
    ('no lockdep report', re.compile(
        r'possible circular locking|inconsistent lock state|possible recursive locking|'
        r'suspicious RCU usage|bad unlock balance|lock held when returning|'
        r'lockdep is turned off')),
    ('no sleep in atomic context', re.compile(
        r'sleeping function called from invalid context|scheduling while atomic')),
    ('no hung task', re.compile(r'blocked for more than \d+ seconds')),
]


def dmesg(path):
    out = Out()
    lines = [TS.sub('', l.rstrip('\n')) for l in open(path, errors='replace')]
    for desc, pattern in DMESG_CHECKS:
        hits = [l for l in lines if pattern.search(l)]
        if hits:
            out.add('fail', f'dmesg: {desc}', f'{len(hits)} lines, first: {hits[0].strip()[:200]}')
        else:
            out.add('pass', f'dmesg: {desc}')
    out.emit()


def read_tap(path):
    """Counts of one normalized TAP file, the descriptions of its failures, and
    whether it is a result at all: a plan 1..N with N > 0 and exactly N points.
    An empty or truncated file (a normalizer that crashed, a guest that died
    while writing) is not."""
    c = {'pass': 0, 'fail': 0, 'skip': 0}
    failed = []
    plan = None
    try:
        f = open(path, errors='replace')
    except OSError:
        return c, failed, False
    with f:
        for line in f:
            line = line.rstrip('\n')
            m = PLAN.match(line)
            if m and plan is None:
                plan = int(m.group(1))
                continue
            m = RESULT.match(line)
            if m:
                kind, desc, _ = classify(m.group(1), m.group(3))
                c[kind] += 1
                if kind == 'fail':
                    failed.append(desc.strip())
    points = sum(c.values())
    return c, failed, plan is not None and plan == points and points > 0


def read_names(path):
    """One suite name a line; blank lines and # comments ignored."""
    if not path:
        return None
    with open(path) as f:
        return [l.split()[0] for l in f if l.strip() and not l.lstrip().startswith('#')]


def read_manifest(path):
    """tests/manifest: "SUITE POINTS SKIPS" a line: how many points the suite
    reported in the last committed full run, and how many of them may be skips."""
    m = {}
    if not path:
        return None
    if not os.path.exists(path):
        return m    # every suite then fails as unknown: a manifest is not optional
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            parts = line.split()
            if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
                sys.exit(f'tap.py: {path}:{n}: want "SUITE POINTS SKIPS", got {line.strip()!r}')
            m[parts[0]] = (int(parts[1]), int(parts[2]))
    return m


# One-point results the runner writes itself when a build or the VM failed:
# failures already, never in the manifest.
HARNESS_RESULT = re.compile(r'^(build-.*|vm)$')


def suite_name(path):
    return path.rsplit('/', 1)[-1].rsplit('.tap', 1)[0]


def summary(files, expected=None, tree=None, manifest=None, name_filter='.'):
    """Per-suite counts and the closing line. Beyond the points the suites
    reported, each of these is one more failed point: a .tap that is empty or
    unparseable; a suite in the expected list (what this run was to run) with
    no .tap; with a manifest, a suite that reported fewer points or more skips
    than the manifest records, a suite the manifest does not know, and a
    manifest suite the test tree (matching the filter) no longer has."""
    tot = {'pass': 0, 'fail': 0, 'skip': 0}
    failed = []
    ran = {}
    for path in files:
        name = suite_name(path)
        c, f, valid = read_tap(path)
        if not valid:
            c['fail'] += 1
            f.append(f'{name}: no result (empty or unparseable TAP in {path})')
        ran[name] = c
        failed += f
        print(f'  {name:48s} {c["pass"]:4d} passed {c["fail"]:4d} failed {c["skip"]:4d} skipped')
        for k in tot:
            tot[k] += c[k]
    harness = []
    for name in expected or []:
        if name not in ran:
            harness.append(f'{name}: produced no result')
    if manifest is not None:
        for name, c in sorted(ran.items()):
            if name not in manifest:
                if not HARNESS_RESULT.match(name):
                    harness.append(f'{name}: not in tests/manifest (a new suite: scripts/run-tests --update-manifest after a clean run)')
                continue
            want, skips = manifest[name]
            got = sum(c.values())
            if got < want:
                harness.append(f'{name}: {got} points, tests/manifest expects {want}')
            if c['skip'] > skips:
                harness.append(f'{name}: {c["skip"]} skipped, tests/manifest allows {skips}')
        if tree is not None:
            pattern = re.compile(name_filter)
            for name in sorted(manifest):
                if pattern.search(name) and name not in tree:
                    harness.append(f'{name}: in tests/manifest but not in the test tree')
    tot['fail'] += len(harness)
    failed += harness
    if failed:
        print('failed:')
        for d in failed:
            print(f'  {d}')
    print(f'{tot["pass"]} passed, {tot["fail"]} failed, {tot["skip"]} skipped')
    return 1 if tot['fail'] or tot['pass'] + tot['fail'] == 0 else 0


def write_manifest(out, files):
    """The manifest from a clean run's results: refuses a run with failures."""
    rows = []
    for path in files:
        c, f, valid = read_tap(path)
        if f or not valid:
            sys.exit(f'tap.py: {path} has failures or no result: the manifest is made from a clean run only')
        rows.append((suite_name(path), sum(c.values()), c['skip']))
    with open(out, 'w') as f:
        f.write('# Points each suite reported in the last full clean run (scripts/run-tests\n'
                '# --update-manifest), and how many of them may be skips (README: "Skips").\n'
                '# A run that reports fewer points, more skips, or a suite not listed fails.\n'
                '# suite  points  skips\n')
        for name, points, skips in sorted(rows):
            f.write(f'{name} {points} {skips}\n')


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'normalize':
        normalize(*args)
    elif cmd == 'kunit':
        kunit(*args)
    elif cmd == 'gotest':
        gotest(*args)
    elif cmd == 'dmesg':
        dmesg(*args)
    elif cmd == 'summary':
        opts = {'--expected': None, '--tree': None, '--manifest': None, '--filter': '.'}
        while args and args[0] in opts:
            opts[args[0]] = args[1]
            args = args[2:]
        sys.exit(summary(args, read_names(opts['--expected']), read_names(opts['--tree']),
                         read_manifest(opts['--manifest']), opts['--filter']))
    elif cmd == 'manifest':
        write_manifest(args[0], args[1:])
    else:
        sys.exit(f'tap.py: unknown command {cmd}')


if __name__ == '__main__':
    main()
