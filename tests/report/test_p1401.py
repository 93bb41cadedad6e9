"""ITU-T P.1401 statistics (nsbench.report.p1401) against hand-computed cases
and scipy, and the monotonic mapping where a plain np.polyfit turns back."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from nsbench.report import correlation, p1401


def test_correlations_equal_scipy_with_ties():
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=40), 1)
    y = np.round(x + rng.normal(size=40), 0)
    assert correlation.pearson(x, y) == pytest.approx(scipy_stats.pearsonr(x, y)[0], abs=1e-12)
    assert correlation.spearman(x, y) == pytest.approx(scipy_stats.spearmanr(x, y)[0], abs=1e-12)
    assert correlation.kendall_tau_b(x, y) == pytest.approx(scipy_stats.kendalltau(x, y)[0], abs=1e-12)
    rows = np.stack([x, x[::-1]]), np.stack([y, y])
    np.testing.assert_allclose(correlation.kendall_rows(*rows), [scipy_stats.kendalltau(x, y)[0], scipy_stats.kendalltau(x[::-1], y)[0]],
                               atol=1e-12)
    np.testing.assert_allclose(correlation.spearman_rows(*rows)[0], scipy_stats.spearmanr(x, y)[0], atol=1e-12)


def test_fit_is_monotonic_where_polyfit_turns_back():
    x = np.linspace(0.0, 1.0, 20)
    y = np.where(x < 0.7, 4 * x, 2.8 - 2 * (x - 0.7))  # rises, then falls: the free cubic falls too
    grid = np.linspace(0.0, 1.0, 2001)
    assert np.polyval(np.polyder(np.polyfit(x, y, 3)), grid).min() < -1.0
    mapping = p1401.fit_monotonic(x, y)
    assert mapping["constrained"] and mapping["direction"] == 1
    slope = np.polynomial.polynomial.polyval(grid, np.polynomial.polynomial.polyder(mapping["coefficients"]))
    assert slope.min() >= -1e-9
    # Constrained, it fits worse than the free cubic but better than the best line (which is monotonic too).
    free = np.sum((np.polyval(np.polyfit(x, y, 3), x) - y) ** 2)
    line = np.sum((np.polyval(np.polyfit(x, y, 1), x) - y) ** 2)
    ours = np.sum((p1401.mapped(mapping, x) - y) ** 2)
    assert free < ours < line


def test_fit_equals_least_squares_cubic_when_already_monotonic():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = 0.5 + 0.3 * x + 0.01 * x**3
    mapping = p1401.fit_monotonic(x, y)
    assert not mapping["constrained"]
    np.testing.assert_allclose(mapping["coefficients"], [0.5, 0.3, 0.0, 0.01], atol=1e-9)


def test_rmse_star_and_outliers_by_hand():
    errors = np.array([0.5, -0.2, 1.0, 0.0, -0.9, 0.3])
    ci95 = np.array([0.3, 0.3, 0.3, 0.3, 0.3, 0.3])
    # Perror = 0.2, 0, 0.7, 0, 0.6, 0: squares 0.04 + 0.49 + 0.36 = 0.89 over N - d = 2.
    assert p1401.rmse_star(errors, ci95) == pytest.approx(math.sqrt(0.89 / 2))
    assert p1401.rmse(errors) == pytest.approx(math.sqrt(np.sum(errors**2) / 2))
    std, votes = np.full(6, 1.0), np.full(6, 16.0)  # 2 std / sqrt(votes) = 0.5: 1.0 and 0.9 beyond it
    assert p1401.outlier_ratio(errors, std, votes) == pytest.approx(2 / 6)
    assert math.isnan(p1401.rmse_star(errors, np.full(6, np.nan)))


def test_evaluate_gives_every_figure_and_its_interval():
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    y = 3 + x + 0.5 * rng.normal(size=60)
    row = p1401.evaluate(x, y, np.full(60, 0.2), np.full(60, 0.8), np.full(60, 10))
    assert row["n"] == 60 and row["pearson"] == pytest.approx(scipy_stats.pearsonr(x, y)[0])
    assert row["pearson_mapped"] >= row["pearson"] - 1e-9  # the least-squares cubic contains the line
    for name in ("pearson", "spearman", "kendall"):
        low, high = row["intervals"][name]
        assert low < row[name] < high
    assert p1401.evaluate(x, y)["intervals"] == row["intervals"]  # seeded: the same resamples
    assert math.isnan(p1401.evaluate(x[:4], y[:4])["rmse"])  # N - d = 0: no mapping
