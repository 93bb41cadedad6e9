"""The bootstrap in blocks (nsbench.report.statistics) reports the intervals
the single (1000, N) draw reported, to the last digit: the one-call formulas
below are the code before blocks, kept here as the reference. Exact equality
is the claim (same seeds, same draws, same sums), so floats are compared
exactly; the sizes cover every branch (cached, drawn block by block, one
column and several, block sizes that split the resamples and columns unevenly)."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from nsbench.report import statistics

SIZES = [1, 2, 3, 5, 8, 9, 17, 30, 33, 100, 301]
TAIL = (1 - 0.95) / 2 * 100  # 2.4999999999999982, as the code before blocks computed it: not 2.5


def tails(estimates):
    return [float(np.percentile(estimates, TAIL)), float(np.percentile(estimates, 100 - TAIL))]


def one_call_uncertainty(columns):
    """statistics.uncertainty as it was: one (columns, 1000, clips) gather."""
    result = {}
    by_size = {}
    for name, values in columns.items():
        by_size.setdefault(len(values), []).append(name)
    for size, names in by_size.items():
        array = np.array([columns[name] for name in names], dtype=np.float64)
        samples = array[:, np.random.default_rng(size).integers(0, size, (1000, size))]
        low, high = np.percentile([samples.mean(axis=2), np.median(samples, axis=2)], [2.5, 97.5], axis=2)
        for i, name in enumerate(names):
            result[name] = ([float(low[0, i]), float(high[0, i])], [float(low[1, i]), float(high[1, i])])
    return result


@functools.lru_cache(maxsize=None)
def one_call_seeded_indices(size):
    return np.stack([np.random.RandomState(i).randint(0, size, size) for i in range(1000)])


def one_call_seeded_ci(values, statistic):
    array = np.asarray(values, dtype=np.float64)
    return tails(statistic(array[one_call_seeded_indices(array.size)], axis=1))


def one_call_pooled_ci(per_clip):
    sums = np.array([sum(mean * count for mean, count, _ in rows) for rows in per_clip])
    counts = np.array([sum(count for _, count, _ in rows) for rows in per_clip])
    indices = np.random.default_rng(len(per_clip)).integers(0, len(per_clip), (1000, len(per_clip)))
    return tails(sums[indices].sum(axis=1) / counts[indices].sum(axis=1))


def columns_of(size, count, seed):
    rng = np.random.default_rng(seed)
    # Some columns rounded: equal values, as metrics in dB to 2 decimals have.
    return {f"m{i}": list(np.round(rng.normal(size=size), 2 if i % 2 else 12)) for i in range(count)}


@pytest.fixture(params=["default", "one row a block", "uneven blocks, nothing cached", "uneven blocks, cached"])
def blocks(request, monkeypatch):
    """Block sizes that force every path; the defaults as the run uses them first."""
    block, cached = {"default": (statistics.BLOCK_BYTES, statistics.CACHED_MAX_BYTES), "one row a block": (1, 0),
                     "uneven blocks, nothing cached": (8 * 3 * 7 * 5, 0),
                     "uneven blocks, cached": (8 * 13 * 3, 10**9)}[request.param]
    monkeypatch.setattr(statistics, "BLOCK_BYTES", block)
    monkeypatch.setattr(statistics, "CACHED_MAX_BYTES", cached)
    statistics.INDEX_CACHE.clear()
    yield
    statistics.INDEX_CACHE.clear()


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_intervals_are_the_one_call_draws_to_the_last_digit(blocks, count):
    for size in SIZES:
        columns = columns_of(size, count, seed=size)
        got, expected = statistics.uncertainty(columns), one_call_uncertainty(columns)
        for name in columns:
            if size == 1:
                assert all(math.isnan(x) for x in got[name]["mean_ci95"] + got[name]["median_ci95"])
            else:
                assert (got[name]["mean_ci95"], got[name]["median_ci95"]) == expected[name], (size, count, name)


def test_the_seeded_and_pooled_intervals_are_the_one_call_draws(blocks):
    for size in (1, 2, 5, 9, 33, 301):  # 1000 generators seeded per size: the slow part
        values = columns_of(size, 1, seed=size)["m0"]
        assert statistics.bootstrap_median_ci(values) == one_call_seeded_ci(values, np.median), size
        assert statistics.bootstrap_ci(values, np.mean) == one_call_seeded_ci(values, np.mean), size
        if size > 1:
            rng = np.random.default_rng(size)
            per_clip = [[(float(m), float(c), 0.0) for m, c in zip(rng.normal(size=2), rng.integers(1, 5, 2))] for _ in range(size)]
            assert statistics.pooled_mean_ci(per_clip) == one_call_pooled_ci(per_clip), size


def test_above_the_cache_limit_the_blocks_draw_the_one_call_stream():
    """N = 2500 is past CACHED_MAX_BYTES: drawn block by block, as a 100,000-clip run is."""
    size = 2500
    assert not statistics.small_enough_to_keep(size)
    columns = columns_of(size, 2, seed=4)
    got, expected = statistics.uncertainty(columns), one_call_uncertainty(columns)
    assert all((got[n]["mean_ci95"], got[n]["median_ci95"]) == expected[n] for n in columns)
    whole = np.random.default_rng(size).integers(0, size, (1000, size))
    assert np.array_equal(np.concatenate([b for _, b in statistics.quick_resample_blocks(size, 7)]), whole)


def test_the_cache_holds_at_most_its_bytes_and_drops_the_least_recently_used():
    cache = statistics.IndexCache(limit=3 * 8000)
    for count in (1, 2, 3):
        cache.put(("quick", count), np.zeros((1000, 1), dtype=np.int64))
    cache.get(("quick", 1))
    cache.put(("quick", 4), np.zeros((1000, 1), dtype=np.int64))
    assert list(cache.entries) == [("quick", 3), ("quick", 1), ("quick", 4)] and cache.held == 3 * 8000
    cache.put(("quick", 5), np.zeros((1000, 10**4), dtype=np.int64))  # over CACHED_MAX_BYTES: never kept
    assert ("quick", 5) not in cache.entries


def test_a_nan_value_gives_the_intervals_np_median_gave():
    """A NaN in a column: np.median's NaN, not the partition's guess."""
    columns = columns_of(40, 3, seed=9)
    columns["m1"][7] = math.nan
    got, expected = statistics.uncertainty(columns), one_call_uncertainty(columns)
    assert repr([(got[n]["mean_ci95"], got[n]["median_ci95"]) for n in columns]) == repr([expected[n] for n in columns])
