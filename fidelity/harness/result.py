"""What an experiment produces: checks against its stated criterion, tables,
plots and data files, all under the run's output directory."""
import csv
import json
import math


class Figure:
    """A plot, kept as data: the experiments run in the VM, where matplotlib
    under QEMU TCG takes about a minute per figure; report.render() draws
    it wherever the report is made (on the host: fidelity/run --report)."""

    def __init__(self, name, title, xlabel, ylabel, xlog=False, ylog=False):
        self.spec = {"file": f"{name}.png", "title": title, "xlabel": xlabel, "ylabel": ylabel,
                     "xlog": xlog, "ylog": ylog, "series": []}

    def _add(self, kind, label, **kw):
        self.spec["series"].append(dict(kind=kind, label=label, **kw))

    def line(self, x, y, label, style="o-"):
        self._add("line", label, x=[float(v) for v in x], y=[float(v) for v in y], style=style)

    def cdf(self, xs, label):
        self._add("cdf", label, values=sorted(float(v) for v in xs))

    def boxes(self, groups, labels):
        self._add("boxes", None, groups=[[float(v) for v in g] for g in groups], labels=labels)

    def hline(self, y, label):
        self._add("hline", label, y=float(y))


class Result:
    def __init__(self, exp, ctx):
        self.name, self.title, self.criterion = exp.NAME, exp.TITLE, exp.criterion(ctx.short)
        self.out, self.short = ctx.out, ctx.short
        self.params, self.checks, self.tables, self.figures, self.data, self.notes = {}, [], [], [], [], []
        self.error = None
        self.skipped = None  # why it could not run here (a missing program)

    # --- verdicts ------------------------------------------------------------
    def check(self, what, value, ok, limit):
        """One comparison of the criterion; value and limit are display strings."""
        ok = bool(ok) and not (isinstance(value, float) and math.isnan(value))
        self.checks.append({"what": what, "value": value, "limit": limit, "passed": ok})
        return ok

    @property
    def verdict(self):
        return "SKIP" if self.skipped else "ERROR" if self.error else "PASS" if self.passed else "FAIL"

    @property
    def passed(self):
        return self.error is None and bool(self.checks) and all(c["passed"] for c in self.checks)

    # --- outputs -------------------------------------------------------------
    def table(self, title, columns, rows):
        self.tables.append({"title": title, "columns": columns, "rows": rows})

    def note(self, text):
        self.notes.append(text)

    def csv(self, suffix, columns, rows):
        fn = f"{self.name}-{suffix}.csv"
        with open(self.out / fn, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(rows)
        self.data.append(fn)
        return fn

    def json(self, suffix, obj):
        fn = f"{self.name}-{suffix}.json"
        (self.out / fn).write_text(json.dumps(obj, indent=1, default=float))
        self.data.append(fn)
        return fn

    def figure(self, suffix, title, xlabel, ylabel, xlog=False, ylog=False):
        f = Figure(f"{self.name}-{suffix}", title, xlabel, ylabel, xlog, ylog)
        self.figures.append(f.spec)
        return f

    def as_dict(self):
        return {"name": self.name, "title": self.title, "criterion": self.criterion,
                "short": self.short, "passed": self.passed, "error": self.error, "skipped": self.skipped,
                "params": self.params, "checks": self.checks, "tables": self.tables,
                "figures": self.figures, "data": self.data, "notes": self.notes}


def fmt(v, nd=3):
    """Compact number formatting for tables."""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 10 ** -nd):
            return f"{v:.{nd}g}"
        return f"{v:.{nd}f}".rstrip("0").rstrip(".") if "." in f"{v:.{nd}f}" else f"{v:.{nd}f}"
    return str(v)


def pct(x):
    return "nan" if isinstance(x, float) and math.isnan(x) else f"{x * 100:+.2f}%"
