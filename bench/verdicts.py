"""Statistics of a benchmark's repeated figures, and the verdict on a target.

A comparison is measured in pairs (fairbench and the reference tool run one
after the other, seconds apart) and each pair gives one ratio; a time or a
difference is measured in repetitions. `ratio_stats` summarises such values:
the median, the mean with its 95 % confidence interval (Student's t, as
`fairbench compare` gives a mean), the range and the count.

`verdict` judges a target "mean ≤ T" (at_most) or "mean ≥ T" by that
interval, never by the median alone:

  met            the whole interval lies on the target's side (T itself
                 counts as on its side: for "≤ T", high end ≤ T; for
                 "≥ T", low end ≥ T);
  missed         the whole interval lies on the other side (for "≤ T", low
                 end > T; for "≥ T", high end < T);
  not worse      the interval contains T: the runs cannot tell, and they do
                 not show the figure worse than the target;
  too few pairs  fewer than MIN_PAIRS values: no verdict at all.

An interval is only as good as its count: with fewer than seven values the
t quantile is large and one unlucky pair moves the mean far, so no verdict
is given.
"""
import statistics

MIN_PAIRS = 7

MET = "met"
NOT_WORSE = "not worse"
MISSED = "missed"
TOO_FEW = "too few pairs"

# Student's t, 97.5 % quantile, for 1..30 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
# Beyond 30: the quantile at the tabulated count just below (never a smaller
# one, so the interval is never narrower than it should be).
T975_BEYOND = [(40, 2.021), (60, 2.000), (120, 1.980)]


def t975(df):
    """Student's t, 97.5 % quantile, for df ≥ 1 degrees of freedom (rounded down to a tabulated count past 30)."""
    if df < 1:
        raise ValueError("no t quantile for %r degrees of freedom" % df)
    if df <= len(T975):
        return T975[df - 1]
    t = T975[-1]
    for at_least, value in T975_BEYOND:
        if df >= at_least:
            t = value
    return t


def ratio_stats(values):
    """The values' median, mean with its 95 % confidence interval, range and count (a dict; ci95 is [low, high])."""
    values = list(values)
    n = len(values)
    mean = statistics.fmean(values)
    half = 0.0
    if n > 1:
        half = t975(n - 1) * statistics.stdev(values) / n ** 0.5
    return {"median": statistics.median(values), "mean": mean, "ci95": [mean - half, mean + half],
            "min": min(values), "max": max(values), "n": n}


def spread_text(st):
    """"[0.98–1.07]  mean 1.030, 95% CI 1.000–1.050": the range, the mean and its interval."""
    return f"[{st['min']:.2f}–{st['max']:.2f}]  mean {st['mean']:.3f}, 95% CI {st['ci95'][0]:.3f}–{st['ci95'][1]:.3f}"


def verdict(st, target, at_most, what="pairs"):
    """The verdict on "mean ≤ target" (at_most) or "mean ≥ target" from ratio_stats' interval (see the module)."""
    if st["n"] < MIN_PAIRS:
        return TOO_FEW if what == "pairs" else f"too few {what}"
    low, high = st["ci95"]
    if at_most:
        if high <= target:
            return MET
        return MISSED if low > target else NOT_WORSE
    if low >= target:
        return MET
    return MISSED if high < target else NOT_WORSE
