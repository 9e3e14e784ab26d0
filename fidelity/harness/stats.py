"""Summary statistics and comparisons shared by the experiments (numpy, scipy)."""
import numpy as np
from scipy import stats as _st


def summary(xs):
    """n, mean, sd, cv, median, iqr, p5, p95 of a sample."""
    a = np.asarray(xs, dtype=float)
    if a.size == 0:
        return {"n": 0}
    q5, q25, q50, q75, q95 = np.percentile(a, [5, 25, 50, 75, 95])
    mean = float(a.mean())
    sd = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return {"n": int(a.size), "mean": mean, "sd": sd, "cv": sd / mean if mean else float("nan"),
            "median": float(q50), "iqr": float(q75 - q25), "p5": float(q5), "p95": float(q95)}


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov test: (D statistic, p-value)."""
    if len(a) == 0 or len(b) == 0:
        return float("nan"), float("nan")
    r = _st.ks_2samp(a, b)
    return float(r.statistic), float(r.pvalue)


def rel_diff(x, ref):
    """(x - ref) / ref; nan when ref is 0."""
    return (x - ref) / ref if ref else float("nan")


def jain(xs):
    """Jain's fairness index of per-flow throughputs (1 = perfectly fair)."""
    a = np.asarray(xs, dtype=float)
    return float(a.sum() ** 2 / (a.size * (a ** 2).sum())) if a.size and a.any() else float("nan")
