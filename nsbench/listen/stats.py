"""The statistics of a listening test: the mean score with its 95% interval,
and the agreement of a metric with the listeners (Pearson's r, Spearman's rho,
Kendall's tau-b), as the URGENT 2026 challenge scores MOS predictors.
Written out here (numpy only) and checked against scipy in the tests.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats as scipy_stats

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


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 3:
        return NAN
    a, b = a - a.mean(), b - b.mean()
    denominator = math.sqrt(float(a @ a) * float(b @ b))
    return float(a @ b) / denominator if denominator > 0 else NAN


def average_ranks(x: Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank."""
    values = np.asarray(x, dtype=float)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and values[order[end + 1]] == values[order[start]]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    return pearson(average_ranks(x), average_ranks(y))


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """(concordant - discordant) / sqrt((pairs - ties in x)(pairs - ties in y))."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 3:
        return NAN
    i, j = np.triu_indices(len(a), k=1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    untied_a, untied_b = np.count_nonzero(da), np.count_nonzero(db)
    if not untied_a or not untied_b:
        return NAN
    return float(np.sum(da * db)) / math.sqrt(untied_a * untied_b)


def agreement(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    return {"n": len(x), "pearson": pearson(x, y), "spearman": spearman(x, y), "kendall": kendall_tau_b(x, y)}
