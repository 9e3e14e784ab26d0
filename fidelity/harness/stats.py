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


def ks_within(a, b, rel):
    """Two-sample KS distance with a relative tolerance on the values: the
    largest fraction by which one sample's CDF lies more than rel (e.g.
    0.01) to the left of the other's, max over x of F_a(x) - F_b(x (1 +
    rel)) and the mirror, at least 0. rel = 0 gives the plain D. Where both
    samples sit in spikes narrower than rel (a full link: per-second
    goodput at the link's rate plus the timer's jitter), the plain D
    compares the spikes' widths and this is 0; where they are wide, the
    two differ little. Values must be non-negative (goodputs)."""
    a, b = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    if a.size == 0 or b.size == 0:
        return float("nan")

    def left_by(x, y):  # sup over t of F_x(t) - F_y(t (1 + rel)); attained at x's values
        fx = np.searchsorted(x, x, side="right") / x.size
        fy = np.searchsorted(y, x * (1 + rel), side="right") / y.size
        return float(np.max(fx - fy))
    return max(0.0, left_by(a, b), left_by(b, a))


def ks_same_pass(n, m, dmax):
    """How often two samples of n and m values drawn from one continuous
    distribution have a two-sample KS distance D of at most dmax: the
    criterion's chance to pass when nothing differs (Kolmogorov's
    asymptotic distribution of D * sqrt(nm / (n + m)); at n = m = 48 and
    dmax 0.1 it gives 0.03, a simulation 0.04)."""
    return float(_st.kstwobign.cdf(dmax * (n * m / (n + m)) ** 0.5)) if n and m else float("nan")


def ks_samples_needed(dmax, chance=0.95):
    """Values per sample (two of equal size) for which two samples of one
    distribution have D <= dmax with probability chance (asymptotic)."""
    return int(np.ceil(2 * (_st.kstwobign.ppf(chance) / dmax) ** 2))


def rel_diff(x, ref):
    """(x - ref) / ref; nan when ref is 0."""
    return (x - ref) / ref if ref else float("nan")


def jain(xs):
    """Jain's fairness index of per-flow throughputs (1 = perfectly fair)."""
    a = np.asarray(xs, dtype=float)
    return float(a.sum() ** 2 / (a.size * (a ** 2).sum())) if a.size and a.any() else float("nan")
