"""The k-th Walsh average selected without building them (nsbench.report.walsh)
is the direct computation's, the same float: every rank of small samples,
with the selection forced to run (a tiny enumerate_max), on data hypothesis
chooses (random, tied, huge and tiny magnitudes, infinities) and on samples of
a few thousand at the default limit. The Hodges-Lehmann estimate and the
interval are held to the code before selection (np.median and indexing of
the sorted averages). Exact equality is the claim, so floats compare with ==
(NaN with NaN; -0.0 equals 0.0, which np.sort does not tell apart either)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsbench.report import signed_rank, walsh
from nsbench.report.walsh import walsh_averages

# Derandomized, as tests/metrics/test_properties.py: the same examples on every run.
FAST = settings(max_examples=60, deadline=None, derandomize=True)
ANY_FINITE = st.floats(allow_nan=False, allow_infinity=False)
TIED = st.sampled_from([-2.0, -0.5, 0.0, -0.0, 0.25, 0.5, 3.0])
WITH_INFINITIES = st.one_of(st.floats(-10, 10), st.sampled_from([math.inf, -math.inf]))


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def before_selection(d):
    """hodges_lehmann and hodges_lehmann_interval as they were: every Walsh average, sorted."""
    d = np.asarray(d, dtype=np.float64)
    averages = walsh_averages(d)
    total = averages.size
    _, sizes = signed_rank._average_ranks(d)
    exact = d.size <= signed_rank.EXACT_MAX and not np.any(sizes > 1)
    p_outside = (lambda k: signed_rank._exact_p(total - k, d.size)) if exact else (lambda k: signed_rank._normal_p(total - k, d.size, sizes))
    k = signed_rank._fewest_outside(p_outside, total // 2, 0.05)
    with np.errstate(invalid="ignore"):
        estimate = float(np.median(averages))
    ends = (-math.inf, math.inf) if k == 0 else (float(averages[k - 1]), float(averages[total - k]))
    return estimate, ends


def check_every_rank(values, enumerate_max):
    d = np.sort(np.asarray(values, dtype=np.float64))
    averages = walsh_averages(d)
    for rank in range(1, averages.size + 1):
        got = walsh.order_statistic(d, rank, enumerate_max)
        assert same(got, float(averages[rank - 1])), (list(d), rank, got, averages[rank - 1])


@FAST
@given(st.lists(ANY_FINITE, min_size=1, max_size=25), st.integers(1, 40))
def test_every_rank_of_any_finite_differences(values, enumerate_max):
    check_every_rank(values, enumerate_max)


@FAST
@given(st.lists(TIED, min_size=1, max_size=30), st.integers(1, 40))
def test_every_rank_of_tied_differences(values, enumerate_max):
    check_every_rank(values, enumerate_max)


@FAST
@given(st.lists(WITH_INFINITIES, min_size=1, max_size=25), st.integers(1, 40))
def test_every_rank_with_infinities_and_their_nan(values, enumerate_max):
    check_every_rank(values, enumerate_max)


@FAST
@given(st.lists(st.one_of(st.floats(-5, 5), TIED), min_size=1, max_size=120))
def test_estimate_and_interval_are_the_ones_before_selection(values):
    d = np.asarray(values, dtype=np.float64)
    estimate, ends = before_selection(d)
    low, high, _ = signed_rank.hodges_lehmann_interval(d)
    assert same(signed_rank.hodges_lehmann(d), estimate) and (low, high) == ends


@pytest.mark.parametrize("n, rounding", [(1500, None), (2001, 2), (3000, None), (3000, 1)])
def test_a_few_thousand_differences_select_the_direct_answer(n, rounding):
    """Past ENUMERATE_MAX (about 1,000 differences): the selection runs at its defaults."""
    d = np.random.default_rng(n).normal(0.1, 1.0, n)
    if rounding is not None:
        d = np.round(d, rounding)  # many equal values, as scores to a few decimals give
    assert n * (n + 1) // 2 > walsh.ENUMERATE_MAX
    estimate, ends = before_selection(d)
    low, high, _ = signed_rank.hodges_lehmann_interval(d)
    assert signed_rank.hodges_lehmann(d) == estimate and (low, high) == ends
    averages, ordered = walsh_averages(d), np.sort(d)
    for rank in (1, 2, 17, averages.size // 3, averages.size - 1, averages.size):
        assert walsh.order_statistic(ordered, rank) == averages[rank - 1]


def test_all_equal_differences_do_not_gather_every_average():
    """One value a hundred thousand times: 5e9 equal averages, answered from the tie, not enumerated."""
    d = np.full(100_000, 0.3)
    assert walsh.order_statistic(d, 2_500_000_000) == 0.3
    assert signed_rank.hodges_lehmann(d) == 0.3
