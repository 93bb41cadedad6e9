"""The Hodges-Lehmann estimate and the signed-rank test's interval beside the
p-value: checked against scipy.stats.wilcoxon at the interval's ends, against
a direct computation of the Walsh averages, and against the verdict."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nsbench.report import signed_rank
from nsbench.report.baselines import paired_difference
from nsbench.report.walsh import walsh_averages

from tests.helpers.lazy import LazyModule

scipy = LazyModule("scipy")


def brute_hodges_lehmann(d):
    return float(np.median([(a + b) / 2 for (i, a), (j, b) in itertools.product(enumerate(d), repeat=2) if i <= j]))


def inside_outside(d, end, inward):
    """Shifts just inside and just outside one end: halfway to the neighbouring distinct Walsh averages."""
    walsh = np.unique(walsh_averages(d))
    at = int(np.searchsorted(walsh, end))
    neighbour_in, neighbour_out = walsh[at + inward], walsh[at - inward] if 0 <= at - inward < walsh.size else None
    outside = None if neighbour_out is None else (end + neighbour_out) / 2
    return (end + neighbour_in) / 2, outside


@pytest.mark.parametrize("n", [6, 7, 10, 13, 20, 50, 51, 80, 102])
def test_the_interval_ends_where_scipys_test_starts_to_reject(n):
    rng = np.random.default_rng(n)
    d = rng.normal(0.2, 1.0, n)
    low, high, method = signed_rank.hodges_lehmann_interval(d)
    assert method == ("exact" if n <= 50 else "normal approximation")
    assert signed_rank.hodges_lehmann(d) == pytest.approx(brute_hodges_lehmann(d), rel=1e-12)
    assert low <= signed_rank.hodges_lehmann(d) <= high
    for end, inward in ((low, 1), (high, -1)):
        inside, outside = inside_outside(d, end, inward)
        assert scipy.stats.wilcoxon(d - inside).pvalue >= 0.05
        if outside is not None:  # below the smallest Walsh average nothing is left to reject
            assert scipy.stats.wilcoxon(d - outside).pvalue < 0.05


def test_five_clips_give_an_unbounded_interval_as_no_p_can_reach_5_percent():
    low, high, method = signed_rank.hodges_lehmann_interval(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert (low, high, method) == (-math.inf, math.inf, "exact")


def test_equal_differences_use_the_normal_approximation_with_ties():
    d = np.round(np.random.default_rng(3).normal(0.5, 1.0, 30), 1)  # many equal values
    low, high, method = signed_rank.hodges_lehmann_interval(d)
    assert method == "normal approximation"
    for end, inward in ((low, 1), (high, -1)):
        inside, outside = inside_outside(d, end, inward)
        assert scipy.stats.wilcoxon(d - inside).pvalue >= 0.05
        assert scipy.stats.wilcoxon(d - outside).pvalue < 0.05


def zero_is_a_walsh_average(d):
    return bool(np.any(walsh_averages(d) == 0))


@pytest.mark.parametrize("rounding", [None, 2])
def test_verdict_p_value_and_interval_agree(rounding):
    """p < 0.05 iff the interval excludes 0, and the verdict's side is the
    estimate's and the interval's. The one exception, stated: 0 is itself a
    Walsh average (a zero difference, or two of equal size and opposite sign),
    where the p-value drops the zeros and ranks the tie while the interval's
    end sits at 0 (and, n <= 13 with equal differences, wilcoxon_p flips signs
    while the interval uses the normal approximation)."""
    rng = np.random.default_rng(22)
    checked = exceptions = 0
    for trial in range(400):
        n = int(rng.integers(6, 80))
        d = rng.normal(rng.uniform(-0.6, 0.6), 1.0, n)
        if rounding is not None:
            d = np.round(d, rounding)
        result = paired_difference(d, np.zeros(n), higher_is_better=True)
        low, high = result["hl_ci95"]
        excludes = not (low <= 0 <= high)
        tied_small = n <= 13 and np.unique(d).size < n
        if zero_is_a_walsh_average(d) or tied_small:
            exceptions += 1
            continue
        checked += 1
        assert (result["p_value"] < 0.05) == excludes, (n, list(d))
        if result["verdict"] != "not distinguishable":
            side = "better" if low > 0 else "worse"
            assert result["verdict"] == side and (result["hodges_lehmann"] > 0) == (side == "better")
    assert checked > 50  # the exception is not the rule
    if rounding is None:
        assert exceptions == 0


def test_a_tie_at_zero_can_split_p_value_and_interval():
    """The stated exception happens: zeros at 0 make p and the interval disagree."""
    rng = np.random.default_rng(5)
    disagree = 0
    for _ in range(300):
        n = int(rng.integers(14, 40))
        d = np.round(rng.normal(0.4, 1.0, n), 0)  # whole numbers: many zeros
        result = paired_difference(d, np.zeros(n), True)
        low, high = result["hl_ci95"]
        disagree += (result["p_value"] < 0.05) != (not (low <= 0 <= high))
    assert disagree > 0


def test_the_verdict_follows_the_estimate_not_the_median():
    """Median and Hodges-Lehmann estimate of opposite sign: the verdict takes the estimate's."""
    d = np.array([-0.01] * 16 + list(np.linspace(0.5, 1.9, 15)))
    d = d + np.arange(d.size) * 1e-6  # no equal differences
    assert np.median(d) < 0 < signed_rank.hodges_lehmann(d)
    result = paired_difference(d, np.zeros(d.size), higher_is_better=True)
    assert result["p_value"] < 0.05
    assert result["verdict"] == "better" and result["hl_ci95"][0] > 0
