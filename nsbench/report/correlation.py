"""The correlations every agreement in nsbench is measured with, in one place:
Pearson's r, Spearman's rho (average ranks) and Kendall's tau-b, for one
pair of samples and for many resamples of one (the bootstrap's rows).

The panel's agreement (nsbench.report.agreement), a listening test's
(nsbench.listen.stats) and the listeners' agreement with the metrics
(nsbench.report.p1401) all call these; numpy only (no scipy.stats at import,
see nsbench/report/signed_rank.py for why). The tests hold each to
scipy.stats.pearsonr, spearmanr and kendalltau.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

MIN_ITEMS = 3  # two points always correlate by +-1: too few to say anything


def average_ranks(values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank (scipy.stats.rankdata's "average").
    In numpy throughout (a loop over the runs of equal values was a Python
    step per clip: 100,000 clips x every metric pair)."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Each run of equal values gets the mean of its positions: (start + 1 + end) / 2.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    sizes = np.diff(np.r_[starts, len(values)])
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat((2 * starts + 1 + sizes) / 2, sizes)
    return ranks


def samples(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """The two samples as float64 arrays, or None where no correlation can be
    said (fewer than MIN_ITEMS, or a NaN); a shape mismatch is a bug: ValueError."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a correlation needs two 1-D samples of one length, got {x.shape} and {y.shape}")
    if len(x) < MIN_ITEMS or np.isnan(x).any() or np.isnan(y).any():
        return None
    return x, y


def pearson(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson's r; NaN where either sample is constant or too short."""
    pair = samples(a, b)
    return math.nan if pair is None else float(pearson_rows(pair[0][None], pair[1][None])[0])


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r of the average ranks."""
    pair = samples(a, b)
    return math.nan if pair is None else pearson(average_ranks(pair[0]), average_ranks(pair[1]))


def kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float:
    """(concordant - discordant) / sqrt((pairs - ties in a)(pairs - ties in b))."""
    pair = samples(a, b)
    return math.nan if pair is None else float(kendall_rows(pair[0][None], pair[1][None])[0])


# --------------------------------------------------------------- many rows at once (the bootstrap)


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of ``x`` with the same row of ``y``, (rows, items); NaN for a constant row."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt(np.einsum("ij,ij->i", x, x) * np.einsum("ij,ij->i", y, y))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.einsum("ij,ij->i", x, y) / denominator
    return np.where(denominator > 0, np.clip(r, -1.0, 1.0), np.nan)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    rank = lambda rows: np.array([average_ranks(row) for row in rows]).reshape(rows.shape)
    return pearson_rows(rank(x), rank(y))


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair, from the signs of every pair of items (items x items per row)."""
    i, j = np.triu_indices(x.shape[1], k=1)
    dx, dy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    untied = np.count_nonzero(dx, axis=1) * np.count_nonzero(dy, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.einsum("ij,ij->i", dx, dy) / np.sqrt(untied)
    return np.where(untied > 0, np.clip(tau, -1.0, 1.0), np.nan)
