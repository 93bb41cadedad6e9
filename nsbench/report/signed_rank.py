"""The Wilcoxon signed-rank test's two-sided p-value, as
``scipy.stats.wilcoxon(differences).pvalue`` gives it (scipy 1.17's defaults:
zeros dropped, no continuity correction, method "auto"), without importing
scipy.stats: that import costs 0.7-1.1 s of CPU, paid by every run that
compares an engine with its baseline, often more than the scoring of a short run.

scipy's "auto" picks, for n differences (zeros included):

* n > 50: the normal approximation, with the tie correction of the variance;
* no zeros and no tied magnitudes: the exact null distribution of the sum of
  positive ranks (each rank's sign a fair coin);
* otherwise, n <= 13: an exact permutation test over all 2**n sign flips,
  comparing with scipy's relative tolerance of 100 eps;
* otherwise: the normal approximation.

One deliberate difference: all-zero differences give p = 1.0 ("not
distinguishable") for every n >= 1, where scipy gives NaN.

tests/report/test_signed_rank.py compares the p-values with scipy's on generated
samples of every kind (ties, zeros, each branch's edges).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from nsbench.report import walsh

EXACT_MAX = 50  # above this many differences scipy uses the normal approximation
FLIPS_MAX = 13  # 2**13 sign flips fit scipy's 9999 resamples: its permutation test is exact


def wilcoxon_p(differences: np.ndarray) -> float:
    d = np.asarray(differences, dtype=np.float64).ravel()
    if d.size == 0 or np.isnan(d).any():
        return math.nan
    nonzero = d[d != 0]
    if not nonzero.size:
        # Every difference zero: nothing tells the two apart, p = 1 for any n.
        # scipy returns NaN here (with a warning); n <= 13 crashed the flips.
        return 1.0
    ranks, ties = _average_ranks(np.abs(nonzero))
    positive = nonzero > 0
    r_plus = float(np.sum(ranks[positive]))
    has_ties, has_zeros = bool(np.any(ties > 1)), nonzero.size < d.size
    if d.size <= EXACT_MAX and not (has_ties or has_zeros):
        return _exact_p(r_plus, nonzero.size)
    if d.size <= FLIPS_MAX:
        return _flipped_signs_p(r_plus, ranks, d.size)
    return _normal_p(r_plus, nonzero.size, ties)


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks from 1, ties given their average; and the sizes of the tie groups."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]])) if values.size else np.zeros(0, int)
    sizes = np.diff(np.append(starts, values.size))
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(starts + 1 + (sizes - 1) / 2, sizes)
    return ranks, sizes


def _exact_p(r_plus: float, count: int) -> float:
    pmf = _null_distribution(count)
    mean = count * (count + 1) / 4
    low, high = math.floor(r_plus), math.ceil(r_plus)
    upper = pmf[low:].sum() if low <= mean else 1 - pmf[:low].sum()  # P(R >= low)
    lower = pmf[: high + 1].sum() if high <= mean else 1 - pmf[high + 1:].sum()  # P(R <= high)
    return float(np.clip(2 * min(upper, lower), 0, 1))


def _null_distribution(count: int) -> np.ndarray:
    """P(sum of positive ranks = r), r = 0 .. count (count + 1) / 2, built rank
    by rank as scipy builds it (so the same sums)."""
    pmf = np.ones(1)
    for k in range(1, count + 1):
        previous = pmf
        pmf = np.zeros(k * (k + 1) // 2 + 1)
        pmf[: len(previous)] = previous * 0.5
        pmf[-len(previous):] += previous * 0.5
    return pmf


def _flipped_signs_p(r_plus: float, ranks: np.ndarray, size: int) -> float:
    """Every one of the 2**size sign flips (zeros flip too, and stay zeros),
    each equally likely under the null: the share at least as extreme, doubled."""
    flips = np.array(list(itertools.product((True, False), repeat=ranks.size)), dtype=bool).reshape(-1, ranks.size)
    sums = flips.astype(np.float64) @ ranks  # halves and small integers: exact
    weight = 2 ** (size - ranks.size)  # each zero doubles every outcome
    tolerance = abs(np.finfo(np.float64).eps * 100 * r_plus)
    below = np.count_nonzero(sums <= r_plus + tolerance) * weight
    above = np.count_nonzero(sums >= r_plus - tolerance) * weight
    return float(min(1.0, min(below, above) / 2 ** size * 2))


def _normal_p(r_plus: float, count: int, ties: np.ndarray) -> float:
    mean = count * (count + 1.0) * 0.25
    variance = count * (count + 1.0) * (2.0 * count + 1.0)
    se = math.sqrt((variance - float(np.sum(ties.astype(np.float64) ** 3 - ties)) / 2) / 24)
    if se == 0:
        return math.nan
    return math.erfc(abs((r_plus - mean) / se) / math.sqrt(2))  # 2 P(Z > |z|)


# --------------------------------------------------------------------------- estimate and interval

LEVEL = 0.95


def hodges_lehmann(differences: np.ndarray) -> float:
    """The Hodges-Lehmann estimate of the paired difference: the median of the
    Walsh averages, the shift the signed-rank test finds most central; as
    np.median of them all gives it (the mean of the middle two for an even
    count), selected without building them (nsbench.report.walsh)."""
    d = np.asarray(differences, dtype=np.float64).ravel()
    if d.size == 0 or np.isnan(d).any():
        return math.nan
    if np.isposinf(d).any() and np.isneginf(d).any():
        return math.nan  # inf - inf is a NaN Walsh average, and np.median's answer
    d, total = np.sort(d), d.size * (d.size + 1) // 2
    middle = walsh.order_statistic(d, total // 2 + 1)
    if total % 2:
        return middle
    with np.errstate(over="ignore", invalid="ignore"):
        return float((walsh.order_statistic(d, total // 2) + middle) / 2)


def hodges_lehmann_interval(differences: np.ndarray, level: float = LEVEL) -> tuple[float, float, str]:
    """The signed-rank test's confidence interval for the shift: every theta
    that ``wilcoxon_p(d - theta)`` does not reject at 1 - level, closed. Its ends
    are Walsh averages W_(k) and W_(M + 1 - k) (M of them, counted with
    multiplicity), k the fewest Walsh averages outside on each side.

    Which null distribution sets k (the one wilcoxon_p uses for d - theta,
    theta between Walsh averages, where d - theta has no zeros):
    * "exact": n <= 50 and no two differences equal: the exact distribution;
    * "normal approximation": otherwise (ties corrected as wilcoxon_p does);
      with n <= 13 and equal differences wilcoxon_p flips signs instead, so
      there the interval is the normal approximation's and may disagree.
    p < 1 - level iff the interval excludes 0, except where 0 is itself a
    Walsh average (a zero difference, or two of equal size and opposite sign):
    there wilcoxon_p drops zeros and ranks ties, which the interval's ends do not.
    Returns (low, high, method); -inf/inf when no theta is rejected (n <= 5).
    """
    d = np.asarray(differences, dtype=np.float64).ravel()
    if d.size == 0 or np.isnan(d).any():
        return math.nan, math.nan, ""
    total = d.size * (d.size + 1) // 2  # the Walsh averages, counted with multiplicity
    _, sizes = _average_ranks(d)  # groups of equal differences: ties for every theta
    exact = d.size <= EXACT_MAX and not np.any(sizes > 1)
    p_outside = (lambda k: _exact_p(total - k, d.size)) if exact else (lambda k: _normal_p(total - k, d.size, sizes))
    k = _fewest_outside(p_outside, total // 2, 1 - level)
    method = "exact" if exact else "normal approximation"
    if k == 0:
        return -math.inf, math.inf, method
    ordered = np.sort(d)
    return walsh.order_statistic(ordered, k), walsh.order_statistic(ordered, total - k + 1), method


def _fewest_outside(p_value, most: int, alpha: float) -> int:
    """Smallest k in 0..most with p_value(k) >= alpha (p rises with k: fewer
    Walsh averages above theta as theta climbs towards the centre)."""
    low, high = 0, most
    while low < high:
        mid = (low + high) // 2
        if p_value(mid) >= alpha or math.isnan(p_value(mid)):
            high = mid
        else:
            low = mid + 1
    return low
