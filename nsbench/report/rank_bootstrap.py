"""How sure a rank is: a paired bootstrap over clips.

Each resample draws as many clips as there are, with replacement, the same
clips for every system (paired: a hard clip is hard for all), takes each
system's mean of each metric over them and ranks by the very rule of
nsbench.ranking (``rank_arrays``). Over the resamples, each system's
overall rank and category scores give a 95 % percentile interval, widened
where needed to hold the value on the full data (a percentile interval of a
discrete rank may otherwise miss it), and ``p_best``, the share of resamples
in which it ranks first, a tie for first shared equally so that the shares
sum to 1.

No loop over clips or resamples in Python: a resample is its clips' counts
(np.bincount of the drawn indices), and every system's means over it are one
matrix product of the counts with the per-clip score matrix, in chunks of
resamples that bound the memory (nsbench bench/bench_ranking.py: 1,000
resamples over 100,000 clips and 12 systems).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsbench.ranking import rank_arrays

RESAMPLES = 1000
SEED = 0
CONFIDENCE = 0.95
CHUNK_CELLS = 8_000_000  # resamples x clips per matrix product: 64 MB of float64 counts


@dataclass(frozen=True)
class RankIntervals:
    """Per system (in the order given): the overall rank's interval (lo, hi),
    each category score's interval (systems, categories, 2), and p_best."""

    overall: np.ndarray  # (systems, 2), ints
    categories: np.ndarray  # (systems, categories, 2)
    p_best: np.ndarray  # (systems,)
    resamples: int
    seed: int


def bootstrap_ranks(scores: np.ndarray, higher: np.ndarray, category_of: np.ndarray, categories: int,
                    ties: str = "dense", decimals: int | None = None, resamples: int = RESAMPLES,
                    seed: int = SEED, confidence: float = CONFIDENCE) -> RankIntervals:
    """``scores``: (clips, systems, metrics), NaN where a system has no value
    on a clip. The intervals of the ranks ``rank_arrays`` gives on the means
    over all clips (NaN-skipping, as those means are)."""
    clips, systems, metrics = scores.shape
    flat = np.nan_to_num(scores, nan=0.0).reshape(clips, systems * metrics)
    present = ~np.isnan(scores).reshape(clips, systems * metrics)
    counts_needed = not present.all()
    present_f = present.astype(np.float64) if counts_needed else None
    rng = np.random.default_rng(seed)
    overall = np.empty((resamples, systems), dtype=np.int64)
    category_scores = np.empty((resamples, systems, categories))
    chunk = max(1, CHUNK_CELLS // max(clips, 1))
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        weights = np.stack([np.bincount(rng.integers(0, clips, clips), minlength=clips) for _ in range(size)]).astype(np.float64)
        sums = weights @ flat
        counts = weights @ present_f if counts_needed else np.full_like(sums, float(clips))
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts > 0, sums / np.where(counts > 0, counts, 1.0), np.nan).reshape(size, systems, metrics)
        _, scores_here, _, ranks_here = rank_arrays(means, higher, category_of, categories, ties, decimals)
        overall[start:start + size], category_scores[start:start + size] = ranks_here, scores_here
    full = full_data(scores, higher, category_of, categories, ties, decimals)
    tail = (1.0 - confidence) / 2
    low = np.quantile(overall, tail, axis=0, method="lower")
    high = np.quantile(overall, 1 - tail, axis=0, method="higher")
    overall_interval = np.stack([np.minimum(low, full[1]), np.maximum(high, full[1])], axis=-1).astype(np.int64)
    category_low = np.minimum(np.quantile(category_scores, tail, axis=0, method="lower"), full[0])
    category_high = np.maximum(np.quantile(category_scores, 1 - tail, axis=0, method="higher"), full[0])
    return RankIntervals(overall_interval, np.stack([category_low, category_high], axis=-1), p_best(overall), resamples, seed)


def full_data(scores: np.ndarray, higher: np.ndarray, category_of: np.ndarray, categories: int,
              ties: str, decimals: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(category scores, overall ranks) on the means over every clip."""
    with np.errstate(invalid="ignore"):
        means = np.nanmean(np.where(np.isnan(scores).all(axis=0), 0.0, scores), axis=0)  # no warning for an empty column
    means[np.isnan(scores).all(axis=0)] = np.nan
    _, category_scores, _, overall = rank_arrays(means, higher, category_of, categories, ties, decimals)
    return category_scores, overall


def p_best(overall: np.ndarray) -> np.ndarray:
    """Per system, its share of first places: a resample with k systems tied
    first gives each 1/k, so the shares sum to 1."""
    first = overall == 1
    return (first / first.sum(axis=1, keepdims=True)).mean(axis=0)
