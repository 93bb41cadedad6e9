"""The statistics of a listening test: the mean score with its 95% interval,
and the agreement of a metric with the listeners (Pearson's r, Spearman's rho,
Kendall's tau-b), as the URGENT 2026 challenge scores MOS predictors.
The correlations are nsbench.report.correlation's, the one implementation
every agreement in nsbench uses.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats as scipy_stats

from nsbench.report.correlation import average_ranks, kendall_tau_b, pearson, spearman  # noqa: F401 (this module's API)

NAN = float("nan")


def mean_ci95(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and Student-t 95% interval over all ratings (listeners x clips), as
    BS.1534-3 section 9.2 computes it: mean +- t(0.975, N-1) s / sqrt(N). It
    treats ratings as independent (a listener's own ratings are not), so it is
    narrower than an interval over listeners alone."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return NAN, NAN, NAN
    mean = float(x.mean())
    if len(x) < 2:
        return mean, NAN, NAN
    half = float(scipy_stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return mean, mean - half, mean + half


def agreement(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    return {"n": len(x), "pearson": pearson(x, y), "spearman": spearman(x, y), "kendall": kendall_tau_b(x, y)}
