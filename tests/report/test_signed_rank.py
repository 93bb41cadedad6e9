"""nsbench.report.signed_rank against scipy.stats.wilcoxon, branch by branch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from nsbench.report.signed_rank import EXACT_MAX, FLIPS_MAX, wilcoxon_p

from tests.helpers.lazy import LazyModule

stats = LazyModule("scipy.stats", skip_if_missing=True)


def scipy_p(differences: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.wilcoxon(differences).pvalue)


def samples():
    """Every branch of scipy's "auto" and its edges: distinct values (exact),
    ties and zeros at 13 or fewer (sign flips) and above (normal), over 50."""
    rng = np.random.default_rng(13)
    for size in (1, 2, 5, 9, FLIPS_MAX + 1, 20, EXACT_MAX, EXACT_MAX + 1, 80, 200):
        for shift in (0.0, 0.3, 1.5):
            distinct = rng.standard_normal(size) + shift
            yield distinct
            tied = np.round(distinct * 2) / 2  # ties, and zeros where it rounds to 0
            yield tied
            with_zero = distinct.copy()
            with_zero[0] = 0.0
            yield with_zero
            yield -distinct
    # The largest sample scipy flips (2 s of its time): ties and a zero.
    yield np.round(rng.standard_normal(FLIPS_MAX) * 2) / 2
    yield np.array([0.0, 0.0, 1.0])
    yield np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    yield np.array([-2.0, 2.0, -2.0, 2.0, 3.0])
    yield np.arange(1.0, 61.0)  # all positive, normal branch


def test_p_values_match_scipy():
    checked = 0
    for sample in samples():
        if not np.any(sample):
            continue
        expected, ours = scipy_p(sample), wilcoxon_p(sample)
        if math.isnan(expected):
            assert math.isnan(ours), sample
        else:
            assert ours == pytest.approx(expected, rel=1e-12, abs=1e-15), sample
        checked += 1
    assert checked > 100


def test_the_exact_branch_gives_scipys_bits():
    """Same null distribution, same sums: not merely close."""
    rng = np.random.default_rng(2)
    for size in (4, 9, 25, EXACT_MAX):
        sample = rng.standard_normal(size) + 0.4
        assert wilcoxon_p(sample) == scipy_p(sample)


def test_known_values_by_hand():
    # Five positive distinct differences: the only more extreme outcome is
    # itself, P = 1/32 each side.
    assert wilcoxon_p(np.array([1.0, 2.0, 3.0, 4.0, 5.0])) == 2 / 32
    # Symmetric about zero: no evidence either way.
    assert wilcoxon_p(np.array([-1.0, 1.0, -2.0, 2.0])) == 1.0


def test_nan_and_empty_give_nan():
    assert math.isnan(wilcoxon_p(np.array([])))
    assert math.isnan(wilcoxon_p(np.array([1.0, np.nan, 2.0])))


@pytest.mark.parametrize("size", range(1, 21))
def test_all_zero_differences_give_one(size):
    """Not distinguishable, in the function itself (it raised ValueError for
    n = 1-13 and gave NaN above, behind its caller's guard)."""
    assert wilcoxon_p(np.zeros(size)) == 1.0
    assert wilcoxon_p(-np.zeros(size)) == 1.0
