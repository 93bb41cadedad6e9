"""The k-th smallest Walsh average (d_i + d_j) / 2, i <= j, of n differences,
without building all n (n + 1) / 2 of them (at 10,000 clips they take 400 MB,
at 100,000 they do not fit): O(n) memory, O(n log n) time a step.

The differences are sorted once. Row i of the Walsh averages,
W(i, j) = (d_i + d_j) / 2 for j >= i, then rises with j, because floating
point rounding is monotone, so the averages at or below any value t make a
prefix of every row, found by a search per row (row_ends). Selection narrows
the candidates between two such boundaries, each round from pivots sampled
among them (Floyd and Rivest's choice: quantiles of a sample that bracket the
rank), until at most ``enumerate_max`` are left; those are computed and the
one of rank k taken. Below that size (n up to about 1,000 by default) every
Walsh average is a candidate from the start: the direct computation.

The answer is exact, the same float the sorted list of every average has at
rank k, whatever the pivots (they only decide how fast the candidates shrink):
each average is computed as (d_i + d_j) / 2, as the direct computation does,
and compared as that float. Floats are ordered as np.sort orders them (-0.0
equal to 0.0, NaN last; NaN only where the differences hold both infinities);
of a -0.0 and a 0.0 at one rank either may come back.
tests/report/test_walsh.py holds it to the direct computation.
"""
from __future__ import annotations

import numpy as np

ENUMERATE_MAX = 2**19  # candidates computed at once: 12 MB with their indices
SAMPLE = 4096  # pivot sample per round: it brackets the rank to ~5% of the candidates
SPREAD = 3 / np.sqrt(SAMPLE)  # the bracket's half-width in quantile: 6 standard errors wide
SLACK = 4  # the search per row starts this close to an estimated boundary
KEY_NAN = np.iinfo(np.int64).max
_NOT_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def walsh_averages(differences: np.ndarray) -> np.ndarray:
    """Every (d_i + d_j) / 2 with i <= j, sorted: the direct computation, n (n + 1) / 2
    held at once (3000 clips: 36 MB; memory grows as n^2). For checks and small n."""
    d = np.asarray(differences, dtype=np.float64).ravel()
    i, j = np.triu_indices(d.size)
    return np.sort(walsh(d, i, j))


def order_statistic(sorted_differences: np.ndarray, rank: int, enumerate_max: int = ENUMERATE_MAX) -> float:
    """The Walsh average of ``rank`` (1 = smallest) of ascending differences."""
    d = sorted_differences
    rows = np.arange(d.size)
    low_ends, high_ends = rows.copy(), np.full(d.size, d.size)  # candidates: row i, columns low..high-1
    below, low_key, high_key = 0, None, KEY_NAN  # candidates' keys lie in (low_key, high_key]
    generator = np.random.default_rng(0)  # the pivots only: the answer does not depend on them
    while int((high_ends - low_ends).sum()) > enumerate_max:
        for pivot in pivots(d, low_ends, high_ends, rank - below, generator):
            key = int(keys(np.array([pivot]))[0])
            if (low_key is not None and key <= low_key) or key > high_key:
                continue  # the other pivot already moved past this one
            at_most, less = row_ends(d, key), row_ends(d, key - 1)
            count_at_most, count_less = int((at_most - rows).sum()), int((less - rows).sum())
            if count_less < rank <= count_at_most:
                return float(pivot)
            if count_at_most < rank:
                low_ends, below, low_key = at_most, count_at_most, key
            else:
                high_ends, high_key = less, key - 1
    values = candidates(d, low_ends, high_ends)
    return float(np.partition(values, rank - below - 1)[rank - below - 1])


def walsh(d: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # as the direct computation: inf, and NaN for inf - inf
        return (d[i] + d[j]) / 2


def keys(values: np.ndarray) -> np.ndarray:
    """int64 keys in np.sort's order of float64 values: -0.0 as 0.0, NaN above +inf."""
    bits = (values + 0.0).view(np.int64)  # + 0.0: -0.0 becomes 0.0
    ordered = np.where(bits < 0, bits ^ _NOT_SIGN, bits)
    return np.where(np.isnan(values), KEY_NAN, ordered)


def value_of(key: int) -> float:
    """The float of a key (any float, or NaN, between two keys)."""
    bits = key if key >= 0 else key ^ int(_NOT_SIGN)
    return float(np.array(bits, dtype=np.int64).view(np.float64))


def row_ends(d: np.ndarray, key: int) -> np.ndarray:
    """Per row i: the first j >= i whose Walsh average's key exceeds ``key``
    (n if none), so row i has ends[i] - i averages at or below it. A search
    per row, started from the real-number boundary d_j <= 2 t - d_i and
    checked there, as rounding can move it a little (or far, at overflow)."""
    n, rows = d.size, np.arange(d.size)
    with np.errstate(over="ignore", invalid="ignore"):
        guess = np.searchsorted(d, 2 * value_of(key) - d, side="right")
    low, high = np.clip(guess - SLACK, rows, n), np.clip(guess + SLACK, rows, n)
    moved = np.flatnonzero(low > rows)  # the boundary must lie at or after low: W(i, low - 1) <= key
    wrong = moved[keys(walsh(d, moved, low[moved] - 1)) > key]
    low[wrong] = wrong  # from the row's start
    moved = np.flatnonzero(high < n)  # and at or before high: W(i, high) > key
    high[moved[keys(walsh(d, moved, high[moved])) <= key]] = n
    active = np.flatnonzero(low < high)
    while active.size:
        middle = (low[active] + high[active]) // 2
        at_most = keys(walsh(d, active, middle)) <= key
        low[active[at_most]] = middle[at_most] + 1
        high[active[~at_most]] = middle[~at_most]
        active = active[low[active] < high[active]]
    return low


def candidates(d: np.ndarray, low_ends: np.ndarray, high_ends: np.ndarray) -> np.ndarray:
    """The Walsh averages of row i, columns low_ends[i] .. high_ends[i] - 1, every row."""
    lengths = high_ends - low_ends
    rows = np.repeat(np.arange(d.size), lengths)
    starts = np.cumsum(lengths) - lengths
    columns = np.arange(int(lengths.sum())) - np.repeat(starts - low_ends, lengths)
    return walsh(d, rows, columns)


def pivots(d: np.ndarray, low_ends: np.ndarray, high_ends: np.ndarray, rank: int, generator) -> list[float]:
    """Two candidates that likely bracket the one of ``rank`` among the
    candidates: quantiles of a uniform sample of them, just below and above."""
    lengths = high_ends - low_ends
    ends = np.cumsum(lengths)
    positions = generator.integers(0, int(ends[-1]), SAMPLE)
    rows = np.searchsorted(ends, positions, side="right")
    sample = np.sort(walsh(d, rows, low_ends[rows] + positions - (ends[rows] - lengths[rows])))
    share = (rank - 0.5) / int(ends[-1])
    at = np.clip([int((share - SPREAD) * SAMPLE), int(np.ceil((share + SPREAD) * SAMPLE))], 0, SAMPLE - 1)
    return [float(sample[at[0]]), float(sample[at[1]])]
