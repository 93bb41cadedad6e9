"""Statistics of a cell's values: bootstrap confidence intervals, percentiles.

Deterministic: the resamples are drawn from fixed seeds, so a rerun reports
the same intervals to the last digit.

Memory stays flat in the number of clips: the (1000, N) index matrix of the
resamples is never built for large N. Resamples go through numpy in blocks of
rows (BLOCK_BYTES of values; with their indices and the median's partition
about three times that at the peak, 40-50 MB) and each block's statistic is
kept, 1000 numbers per column. No size keeps the one-call draw: the blocked
draw equals it at every N tried (1 to 301 clips, 1,000 to 100,000, counts
past 2**32), so one code path serves all. The blocks draw the same indices the single
(1000, N) draw did, at every N: numpy's Generator keeps the spare half of a
64-bit draw in the bit generator, not in the call, so drawing row blocks one
after another continues one stream (tests/report/test_statistics_blocks.py
holds the blocked intervals to the one-call draw, to the last digit). Index
matrices of up to CACHED_MAX_BYTES are kept between calls (a run's cells come
in a few sizes), CACHE_BYTES in all, least recently used dropped first.
"""
from __future__ import annotations

import collections
import math
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

BOOTSTRAP_RESAMPLES = 1000
BLOCK_BYTES = 16 * 2**20  # the values of one block of resamples, per call
CACHED_MAX_BYTES = 16 * 2**20  # an index matrix this size or smaller is kept: N <= 2097
CACHE_BYTES = 64 * 2**20  # every kept index matrix together


def pooled_mean_ci(per_clip: Sequence[Sequence[tuple[float, float, float]]], level: float = 0.95) -> list[float]:
    """Percentile bootstrap CI of the item-pooled mean, resampling clips (with
    their items), as quick_resample_indices draws them; NaN for one clip."""
    if len(per_clip) < 2:
        return [math.nan, math.nan]
    sums = np.array([sum(mean * count for mean, count, _ in rows) for rows in per_clip])
    counts = np.array([sum(count for _, count, _ in rows) for rows in per_clip])
    estimates = np.empty(BOOTSTRAP_RESAMPLES)
    for start, indices in quick_resample_blocks(len(per_clip), block_rows(len(per_clip))):
        estimates[start:start + len(indices)] = sums[indices].sum(axis=1) / counts[indices].sum(axis=1)
    return percentile_interval(estimates, level)


def percentile_interval(estimates: np.ndarray, level: float) -> list[float]:
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(estimates, tail)), float(np.percentile(estimates, 100 - tail))]


def block_rows(count: int, columns: int = 1) -> int:
    """Resamples per block: BLOCK_BYTES of float64 values (columns x rows x count), one row at least."""
    return int(max(1, min(BOOTSTRAP_RESAMPLES, BLOCK_BYTES // (8 * count * columns))))


class IndexCache:
    """Index matrices by (kind, count), at most ``limit`` bytes in all; the
    least recently used goes first. Matrices over CACHED_MAX_BYTES are not kept."""

    def __init__(self, limit: int):
        self.limit, self.held = limit, 0
        self.entries: collections.OrderedDict[tuple[str, int], np.ndarray] = collections.OrderedDict()

    def get(self, key: tuple[str, int]) -> np.ndarray | None:
        matrix = self.entries.get(key)
        if matrix is not None:
            self.entries.move_to_end(key)
        return matrix

    def put(self, key: tuple[str, int], matrix: np.ndarray) -> None:
        if matrix.nbytes > CACHED_MAX_BYTES or key in self.entries:
            return
        self.entries[key] = matrix
        self.held += matrix.nbytes
        while self.held > self.limit:
            _, dropped = self.entries.popitem(last=False)
            self.held -= dropped.nbytes

    def clear(self) -> None:
        self.entries.clear()
        self.held = 0


INDEX_CACHE = IndexCache(CACHE_BYTES)


def small_enough_to_keep(count: int) -> bool:
    return BOOTSTRAP_RESAMPLES * count * 8 <= CACHED_MAX_BYTES


def quick_resample_blocks(count: int, rows: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first resample, (rows, count) indices) in order, all BOOTSTRAP_RESAMPLES
    of them, seeded by the count: the same on every run. One generator stream,
    where resample_blocks seeds 1000 (0.25 s per size): the per-cell intervals
    need determinism, not earthspecies' exact draws."""
    cached = INDEX_CACHE.get(("quick", count))
    if cached is None and small_enough_to_keep(count):
        cached = np.random.default_rng(count).integers(0, count, (BOOTSTRAP_RESAMPLES, count))
        INDEX_CACHE.put(("quick", count), cached)
    if cached is not None:
        yield from ((start, cached[start:start + rows]) for start in range(0, BOOTSTRAP_RESAMPLES, rows))
        return
    generator = np.random.default_rng(count)  # the blocks continue one stream: the same draws as one call
    for start in range(0, BOOTSTRAP_RESAMPLES, rows):
        yield start, generator.integers(0, count, (min(rows, BOOTSTRAP_RESAMPLES - start), count))


def resample_blocks(count: int, rows: int) -> Iterator[tuple[int, np.ndarray]]:
    """As quick_resample_blocks, resample i drawn from ``np.random.RandomState(i)``."""
    cached = INDEX_CACHE.get(("seeded", count))
    if cached is None and small_enough_to_keep(count):
        cached = seeded_rows(count, 0, BOOTSTRAP_RESAMPLES)
        INDEX_CACHE.put(("seeded", count), cached)
    for start in range(0, BOOTSTRAP_RESAMPLES, rows):
        stop = min(start + rows, BOOTSTRAP_RESAMPLES)
        yield start, cached[start:stop] if cached is not None else seeded_rows(count, start, stop)


def seeded_rows(count: int, start: int, stop: int) -> np.ndarray:
    return np.stack([np.random.RandomState(i).randint(0, count, count) for i in range(start, stop)])


def bootstrap_ci(values: Sequence[float], statistic: Callable = np.median, level: float = 0.95) -> list[float]:
    """Percentile bootstrap confidence interval of ``statistic`` (deterministic).
    ``statistic(matrix, axis=1)`` must reduce each row alone (np.median, np.mean):
    the rows come in blocks.

    Resample i draws its indices from ``np.random.RandomState(i)``, as the
    ``confidence_intervals`` package behind earthspecies' results.py does, so
    the pooled interval of the median reproduces theirs on the same rows.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        return [math.nan, math.nan]
    estimates = np.empty(BOOTSTRAP_RESAMPLES)
    for start, indices in resample_blocks(array.size, block_rows(array.size)):
        estimates[start:start + len(indices)] = statistic(array[indices], axis=1)
    return percentile_interval(estimates, level)


def bootstrap_median_ci(values: Sequence[float], level: float = 0.95) -> list[float]:
    return bootstrap_ci(values, np.median, level)


def uncertainty(columns: Mapping[str, Sequence[float]]) -> dict[str, dict[str, Any]]:
    """Per column (metric): the tails (5th and 95th percentiles: which is the
    bad one depends on the metric's direction) and percentile-bootstrap 95%
    CIs of the mean and median (quick_resample_blocks). A single clip has
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
        low, high = np.percentile(resampled_mean_and_median(array), [2.5, 97.5], axis=2)
        tails = np.percentile(array, [5, 95], axis=1)
        for i, name in enumerate(names):
            result[name] = {
                "p5": float(tails[0, i]),
                "p95": float(tails[1, i]),
                "mean_ci95": [float(low[0, i]), float(high[0, i])] if size > 1 else [math.nan] * 2,
                "median_ci95": [float(low[1, i]), float(high[1, i])] if size > 1 else [math.nan] * 2,
            }
    return result


def resampled_mean_and_median(array: np.ndarray) -> np.ndarray:
    """(2, columns, resamples): each resample's mean and median, per column of
    ``array`` (columns, clips), in blocks of resamples (and groups of columns)
    whose values stay within BLOCK_BYTES.

    The means are summed as the single (columns, 1000, clips) gather summed
    them, which numpy did in two ways: one column lies contiguous along the
    clips and is summed pairwise; several lay with the columns innermost and
    were summed clip by clip in order. Each way is kept, so every digit is."""
    columns, size = array.shape
    estimates = np.empty((2, columns, BOOTSTRAP_RESAMPLES))
    median = np.median if np.isnan(array).any() else median_without_nan
    if columns == 1:
        for start, indices in quick_resample_blocks(size, block_rows(size)):
            samples = array[0][indices]  # (rows, clips), contiguous: pairwise sums
            estimates[:, 0, start:start + len(indices)] = samples.mean(axis=1), median(samples, axis=1)
        return estimates
    group = int(max(1, BLOCK_BYTES // (8 * size)))  # columns whose one resample fits the block
    for start, indices in quick_resample_blocks(size, block_rows(size, min(group, columns))):
        for first in range(0, columns, group):
            part = array[first:first + group]
            samples = part.T[indices.T]  # (clips, rows, group)
            estimates[0, first:first + len(part), start:start + len(indices)] = in_order_sums(samples).T / size
            estimates[1, first:first + len(part), start:start + len(indices)] = median(samples, axis=0).T
    return estimates


def in_order_sums(samples: np.ndarray) -> np.ndarray:
    """The sums over the first axis, term after term in order (numpy reduces
    a C-ordered array's first axis so, given two or more sums to keep)."""
    flat = samples.reshape(samples.shape[0], -1)
    if flat.shape[1] == 1:  # a single sum would reduce pairwise: add a second one
        flat = np.hstack([flat, np.zeros_like(flat)])
    return np.add.reduce(flat, axis=0)[: samples[0].size].reshape(samples.shape[1:])


def median_without_nan(samples: np.ndarray, axis: int) -> np.ndarray:
    """np.median's floats (the middle value, or the mean of the middle two as
    (a + b) / 2) for values without NaN, from one partition: np.median also
    places the largest value for its NaN check, a third of its time here."""
    size = samples.shape[axis]
    half = size // 2
    part = np.partition(samples, [half] if size % 2 else [half - 1, half], axis=axis)
    upper = np.take(part, half, axis=axis)
    return upper if size % 2 else (np.take(part, half - 1, axis=axis) + upper) / 2
