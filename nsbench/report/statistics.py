"""Statistics of a cell's values: bootstrap confidence intervals, percentiles.

Deterministic: the resamples are drawn from fixed seeds, so a rerun reports
the same intervals to the last digit.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np


def pooled_mean_ci(per_clip: Sequence[Sequence[tuple[float, float, float]]], level: float = 0.95) -> list[float]:
    """Percentile bootstrap CI of the item-pooled mean, resampling clips (with
    their items), as quick_resample_indices draws them; NaN for one clip."""
    if len(per_clip) < 2:
        return [math.nan, math.nan]
    sums = np.array([sum(mean * count for mean, count, _ in rows) for rows in per_clip])
    counts = np.array([sum(count for _, count, _ in rows) for rows in per_clip])
    indices = quick_resample_indices(len(per_clip))
    estimates = sums[indices].sum(axis=1) / counts[indices].sum(axis=1)
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(estimates, tail)), float(np.percentile(estimates, 100 - tail))]


BOOTSTRAP_RESAMPLES = 1000


@functools.lru_cache(maxsize=32)  # an engine's cells come in a few sizes
def resample_indices(count: int) -> np.ndarray:
    """(resamples, count) indices; the same for every call with this count."""
    return np.stack([np.random.RandomState(i).randint(0, count, count) for i in range(BOOTSTRAP_RESAMPLES)])


@functools.lru_cache(maxsize=32)
def quick_resample_indices(count: int) -> np.ndarray:
    """(resamples, count) indices seeded by the count: the same on every run.
    One generator call, where resample_indices builds 1000 (0.25 s per size):
    the per-cell intervals need determinism, not earthspecies' exact draws."""
    return np.random.default_rng(count).integers(0, count, (BOOTSTRAP_RESAMPLES, count))


def bootstrap_ci(values: Sequence[float], statistic: Callable = np.median, level: float = 0.95) -> list[float]:
    """Percentile bootstrap confidence interval of ``statistic`` (deterministic).

    Resample i draws its indices from ``np.random.RandomState(i)``, as the
    ``confidence_intervals`` package behind earthspecies' results.py does, so
    the pooled interval of the median reproduces theirs on the same rows.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        return [math.nan, math.nan]
    estimates = statistic(array[resample_indices(len(array))], axis=1)
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(estimates, tail)), float(np.percentile(estimates, 100 - tail))]


def bootstrap_median_ci(values: Sequence[float], level: float = 0.95) -> list[float]:
    return bootstrap_ci(values, np.median, level)


def uncertainty(columns: Mapping[str, Sequence[float]]) -> dict[str, dict[str, Any]]:
    """Per column (metric): the tails (5th and 95th percentiles: which is the
    bad one depends on the metric's direction) and percentile-bootstrap 95%
    CIs of the mean and median (quick_resample_indices). A single clip has
    no interval (NaN, shown "–"): every resample of one value is that value,
    and a zero-width interval would claim certainty.

    Columns of equal length go through numpy together: one call per cell
    instead of one per metric (a demo run has about 5000 columns)."""
    by_size: dict[int, list[str]] = {}
    for name, values in columns.items():
        by_size.setdefault(len(values), []).append(name)
    result = {}
    for size, names in by_size.items():
        if not size:
            result.update({name: {"p5": math.nan, "p95": math.nan, "mean_ci95": [math.nan] * 2, "median_ci95": [math.nan] * 2} for name in names})
            continue
        array = np.array([columns[name] for name in names], dtype=np.float64)  # (columns, clips)
        samples = array[:, quick_resample_indices(size)]  # (columns, resamples, clips)
        low, high = np.percentile([samples.mean(axis=2), np.median(samples, axis=2)], [2.5, 97.5], axis=2)
        tails = np.percentile(array, [5, 95], axis=1)
        for i, name in enumerate(names):
            result[name] = {
                "p5": float(tails[0, i]),
                "p95": float(tails[1, i]),
                "mean_ci95": [float(low[0, i]), float(high[0, i])] if size > 1 else [math.nan] * 2,
                "median_ci95": [float(low[1, i]), float(high[1, i])] if size > 1 else [math.nan] * 2,
            }
    return result
