"""How well a metric predicts what listeners rated, as ITU-T P.1401 (01/2020)
evaluates objective quality models.

For one metric and one rated dimension (items: files, or conditions):

* ``pearson``, ``spearman``, ``kendall`` (tau-b) of the metric with the
  ratings, raw (nsbench.report.correlation);
* the P.1401 mapping: a third-order polynomial from the metric to the rating,
  fitted by least squares under the constraint that it is monotonic over the
  observed range of the metric (its slope keeps one sign there, the sign of
  the raw Pearson correlation); a plain ``np.polyfit`` can turn back inside
  the range, which would let a metric's ranking be reordered by the fit;
* ``pearson_mapped``: Pearson's r of the ratings with the mapped metric;
* ``rmse``: sqrt(sum(error^2) / (N - d)) of the mapped metric, d = 4 (the
  mapping's parameters, P.1401 section 7.3);
* ``rmse_star``: P.1401's epsilon-insensitive RMSE, where each item's error
  counts only beyond its rating's 95 % interval,
  Perror = max(0, |rating - mapped| - ci95), over N - d;
* ``outlier_ratio``: the share of items whose mapped error exceeds twice the
  rating's standard error, std / sqrt(votes) (P.1401 section 7.2);
* 95 % intervals on the three correlations: percentile bootstrap over the
  items (BOOTSTRAP resamples, a fixed seed, so a rerun prints the same).

Each figure is NaN where it cannot be said (fewer items than the mapping has
parameters plus one, no interval or vote count given).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from nsbench.report import correlation

DEGREE = 3  # P.1401's third-order mapping
PARAMETERS = DEGREE + 1  # d in N - d
GRID = 257  # points of the observed range where the slope is held to its sign
BOOTSTRAP = 1000
SEED = 1401
CHUNK = 250  # bootstrap rows at a time: kendall_rows holds rows x items^2 / 2 signs


def fit_monotonic(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """The P.1401 mapping of ``x`` onto ``y``: ``coefficients`` (lowest power
    first, on ``x`` itself), ``direction`` (+1 increasing, -1 decreasing),
    ``x_range`` and whether the unconstrained least-squares cubic had to be
    constrained (``constrained``: it turned back inside the range)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    low, high = float(x.min()), float(x.max())
    span = high - low if high > low else 1.0
    u = (x - low) / span  # on [0, 1]: the normal equations stay well conditioned
    direction = 1.0 if not correlation.pearson(x, y) < 0 else -1.0
    design = np.vander(u, PARAMETERS, increasing=True)
    free = np.linalg.lstsq(design, y, rcond=None)[0]
    grid = np.linspace(0.0, 1.0, GRID)
    slopes = np.vander(grid, DEGREE, increasing=True) * np.arange(1, PARAMETERS)  # d/du of each power
    constrained = bool(np.any(direction * (slopes @ free[1:]) < 0))
    coefficients = constrained_fit(design, y, direction * slopes) if constrained else free
    on_x = np.polynomial.Polynomial(coefficients)(np.polynomial.Polynomial([-low / span, 1.0 / span]))
    return {"coefficients": [float(c) for c in np.pad(on_x.coef, (0, PARAMETERS - len(on_x.coef)))],
            "direction": int(direction), "x_range": [low, high], "constrained": constrained}


def constrained_fit(design: np.ndarray, y: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """Least squares of ``design @ c`` on ``y`` with ``slopes @ c[1:] >= 0`` at
    every grid point: SLSQP from the best straight line (itself feasible)."""
    from scipy.optimize import minimize  # only when a fit turns back

    start = np.zeros(PARAMETERS)
    line = np.linalg.lstsq(design[:, :2], y, rcond=None)[0]
    start[:2] = line if np.all(slopes[:, 0] * line[1] >= 0) else [float(np.mean(y)), 0.0]
    scale = max(float(np.dot(y - y.mean(), y - y.mean())), 1e-12)
    result = minimize(
        lambda c: float(np.sum((design @ c - y) ** 2)) / scale, start,
        jac=lambda c: 2.0 * design.T @ (design @ c - y) / scale,
        constraints=[{"type": "ineq", "fun": lambda c: slopes @ c[1:], "jac": lambda c: np.c_[np.zeros(len(slopes)), slopes]}],
        method="SLSQP", options={"maxiter": 500, "ftol": 1e-12},
    )
    return result.x


def mapped(mapping: dict[str, Any], x: Sequence[float]) -> np.ndarray:
    return np.polynomial.polynomial.polyval(np.asarray(x, dtype=np.float64), mapping["coefficients"])


def rmse(errors: np.ndarray) -> float:
    """sqrt(sum(e^2) / (N - d)): P.1401's RMSE after a mapping of d parameters."""
    freedom = len(errors) - PARAMETERS
    return math.sqrt(float(np.sum(errors**2)) / freedom) if freedom > 0 else math.nan


def rmse_star(errors: np.ndarray, ci95: np.ndarray) -> float:
    """P.1401's epsilon-insensitive RMSE: errors within each rating's 95 % interval count as none."""
    if np.isnan(ci95).any():
        return math.nan
    return rmse(np.maximum(0.0, np.abs(errors) - ci95))


def outlier_ratio(errors: np.ndarray, std: np.ndarray, votes: np.ndarray) -> float:
    """The share of items whose error exceeds 2 std / sqrt(votes)."""
    if np.isnan(std).any() or np.isnan(votes).any() or np.any(votes <= 0):
        return math.nan
    return float(np.mean(np.abs(errors) > 2.0 * std / np.sqrt(votes)))


def bootstrap_intervals(x: np.ndarray, y: np.ndarray, resamples: int = BOOTSTRAP, seed: int = SEED) -> dict[str, list[float]]:
    """Percentile 95 % intervals of each correlation over resamples of the items (with replacement)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(x), size=(resamples, len(x)))
    found: dict[str, list[np.ndarray]] = {"pearson": [], "spearman": [], "kendall": []}
    for start in range(0, resamples, CHUNK):
        rows = picks[start : start + CHUNK]
        xs, ys = x[rows], y[rows]
        found["pearson"].append(correlation.pearson_rows(xs, ys))
        found["spearman"].append(correlation.spearman_rows(xs, ys))
        found["kendall"].append(correlation.kendall_rows(xs, ys))
    intervals = {}
    for name, parts in found.items():
        values = np.concatenate(parts)
        values = values[np.isfinite(values)]  # a resample of one repeated item has no correlation
        intervals[name] = [float(v) for v in np.percentile(values, [2.5, 97.5])] if len(values) else [math.nan, math.nan]
    return intervals


def evaluate(metric: Sequence[float], rating: Sequence[float], ci95: Sequence[float] | None = None,
             std: Sequence[float] | None = None, votes: Sequence[float] | None = None, intervals: bool = True) -> dict[str, Any]:
    """Every P.1401 figure of one metric against one rated dimension (the
    module docstring); ``intervals`` False: no bootstrap (NaN intervals)."""
    x, y = np.asarray(metric, dtype=np.float64), np.asarray(rating, dtype=np.float64)
    unknown = np.full(len(x), np.nan)
    as_array = lambda values: unknown if values is None else np.asarray(values, dtype=np.float64)
    row: dict[str, Any] = {"n": len(x), "pearson": correlation.pearson(x, y), "spearman": correlation.spearman(x, y),
                           "kendall": correlation.kendall_tau_b(x, y)}
    nan_row = {"pearson_mapped": math.nan, "rmse": math.nan, "rmse_star": math.nan, "outlier_ratio": math.nan, "mapping": None}
    no_intervals = {name: [math.nan, math.nan] for name in ("pearson", "spearman", "kendall")}
    if len(x) <= PARAMETERS or math.isnan(row["pearson"]):
        return {**row, **nan_row, "intervals": no_intervals}
    mapping = fit_monotonic(x, y)
    prediction = mapped(mapping, x)
    errors = y - prediction
    return {**row, "pearson_mapped": correlation.pearson(prediction, y), "rmse": rmse(errors),
            "rmse_star": rmse_star(errors, as_array(ci95)), "outlier_ratio": outlier_ratio(errors, as_array(std), as_array(votes)),
            "mapping": mapping, "intervals": bootstrap_intervals(x, y) if intervals else no_intervals}
