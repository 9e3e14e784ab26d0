"""The report, made from results.json: a summary table, then one section per
experiment with its criterion (stated before the results), verdicts, tables
and plots. Plots are drawn here with matplotlib (on the host, where it takes
seconds rather than minutes); the VM only records their data."""
import json
from datetime import datetime, timezone

from .result import fmt


def _table(columns, rows):
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    return head + "".join("| " + " | ".join(fmt(c) for c in r) + " |\n" for r in rows)


def verdict(e):
    return "SKIP" if e.get("skipped") else "ERROR" if e["error"] else "PASS" if e["passed"] else "FAIL"


def load_results(out):
    """The experiments of an earlier out/results.json ([] if none)."""
    f = out / "results.json"
    return json.loads(f.read_text())["experiments"] if f.exists() else []


def save_results(out, experiments, env, elapsed_s):
    (out / "results.json").write_text(json.dumps(
        {"environment": env, "elapsed_s": elapsed_s, "generated": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}",
         "experiments": experiments}, indent=1, default=float))


def render(out, spec):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    ax.set_title(spec["title"], fontsize=10)
    ax.grid(True, alpha=0.3)
    for s in spec["series"]:
        if s["kind"] == "line":
            ax.plot(s["x"], s["y"], s["style"], label=s["label"])
        elif s["kind"] == "cdf":
            v = s["values"]
            ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label=s["label"])
        elif s["kind"] == "boxes":
            ax.boxplot(s["groups"], labels=s["labels"])
        elif s["kind"] == "hline":
            ax.axhline(s["y"], ls="--", c="grey", label=s["label"])
    ax.set_xscale("log" if spec["xlog"] else "linear")
    ax.set_yscale("log" if spec["ylog"] else "linear")
    ax.set_xlabel(spec["xlabel"])
    ax.set_ylabel(spec["ylabel"])
    if any(s["label"] for s in spec["series"]):
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / spec["file"])
    plt.close(fig)


def write(out, draw=True):
    """report.md (and, with draw, the PNGs) from out/results.json."""
    doc = json.loads((out / "results.json").read_text())
    env, exps = doc["environment"], doc["experiments"]
    md = ["# Fidelity of time-dilated containers\n",
          f"Generated {doc['generated']} by `fidelity/run` "
          f"({'short variants' if env['short'] else 'full runs'}); its last run took {doc['elapsed_s'] / 60:.1f} min "
          f"(`--update` redoes only the experiments named).\n",
          "## Environment\n",
          _table(["what", "value"], [[k, v] for k, v in env.items()]),
          "\nEvery figure below is what the programs in the nodes perceive (their own clocks), "
          "unless a column says otherwise. Each experiment states its pass criterion first; "
          "a failing criterion is reported as FAIL, not retried or hidden (a packet-timing flow the "
          "link did not pace is measured again, and the report says so).\n",
          "## Summary\n",
          _table(["experiment", "verdict", "criterion"],
                 [[f"[{e['name']}](#{e['name']})", verdict(e), e["criterion"]] for e in exps])]
    for e in exps:
        md.append(f'\n<a id="{e["name"]}"></a>\n## {e["title"]} (`{e["name"]}`): {verdict(e)}\n')
        md.append(f"**Criterion.** {e['criterion']}\n")
        if e["params"]:
            md.append("**Parameters.** " + "; ".join(f"{k}: {v}" for k, v in e["params"].items()) + "\n")
        if e.get("skipped"):
            md.append(f"**Skipped.** {e['skipped']}\n")
        if e["error"]:
            md.append(f"**Error.** `{e['error']}`\n")
        if e["checks"]:
            md.append(_table(["check", "measured", "required", "verdict"],
                             [[c["what"], c["value"], c["limit"], "pass" if c["passed"] else "FAIL"]
                              for c in e["checks"]]))
        for t in e["tables"]:
            md.append(f"\n{t['title']}\n\n" + _table(t["columns"], t["rows"]))
        for spec in e["figures"]:
            if draw:
                render(out, spec)
                md.append(f"\n![{spec['title']}]({spec['file']})\n")
            else:
                md.append(f"\n*Plot {spec['file']} not drawn: `fidelity/run --report {out}` draws it.*\n")
        for n in e["notes"]:
            md.append(f"\n{n}\n")
        if e["data"]:
            md.append("\nData: " + ", ".join(f"[{d}]({d})" for d in e["data"]) + "\n")
    (out / "report.md").write_text("\n".join(md))

