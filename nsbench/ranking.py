"""Ranking systems on several metrics, by the rule of the URGENT challenges
(2024-2026; URGENT 2025's rules, item 6):

1. the mean of each metric per system;
2. per metric, each system's rank in the metric's direction, ties "dense"
   ("1223": a tie shares a rank and the next value takes the next rank) or
   "min" ("1224", as some published tables rank);
3. per category of metrics, the mean of a system's ranks there;
4. overall, the mean of its category scores: the overall score, lower is
   better, and the overall rank is that score's rank (the same tie rule).

URGENT's leaderboard rounds the means to 2 decimals before ranking
(``decimals``); None ranks the means as they are. A system without a value
for a metric ranks below every system that has one (tied with the others
without), so a missing figure can never win a rank. A metric no system has is
left out.

``rank_table`` ranks any table of per-system means (a published leaderboard, a
spreadsheet: ``python benchmark.py rank``); a run's ranking calls it too, and
the bootstrap (nsbench.report.rank_bootstrap) applies the same ``rank_arrays``
to every resample, so the three cannot disagree on the rule.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.plugins.errors import UserError

TIES = ("dense", "min")
# Equal means may differ in their last bits (a resample's means are a matrix
# product, whose summation order differs between columns; category scores are
# means of ranks), so values are compared at this many decimals where the
# rule rounds at none: float noise never breaks a tie.
SCORE_DECIMALS = 9


def ranks(values: np.ndarray, ties: str = "dense") -> np.ndarray:
    """The rank (1 best) of each entry along the last axis, higher values
    first; equal values share a rank; -inf (a missing value) ranks last."""
    greater = values[..., None, :] > values[..., :, None]  # [..., i, j]: j beats i
    if ties == "min":
        return 1 + greater.sum(axis=-1)
    size = values.shape[-1]
    equal = values[..., None, :] == values[..., :, None]
    earlier = np.tril(np.ones((size, size), dtype=bool), -1)  # [j, k]: k comes before j
    first = ~np.any(equal & earlier, axis=-1)  # the first entry of each distinct value
    return 1 + (greater & first[..., None, :]).sum(axis=-1)


def rank_arrays(means: np.ndarray, higher: np.ndarray, category_of: np.ndarray, categories: int,
                ties: str = "dense", decimals: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rule on arrays: ``means`` (..., systems, metrics), NaN where a
    system has no value; ``higher`` per metric; ``category_of`` each metric's
    category number. Returns the metric ranks (..., systems, metrics), the
    category scores (..., systems, categories), the overall score and the
    overall rank (..., systems)."""
    values = np.round(means, SCORE_DECIMALS if decimals is None else decimals)
    values = np.where(higher, values, -values)
    values = np.where(np.isnan(values), -np.inf, values)
    metric_ranks = np.moveaxis(ranks(np.moveaxis(values, -1, -2), ties), -2, -1)
    member = category_of[:, None] == np.arange(categories)[None, :]  # (metrics, categories)
    category_scores = (metric_ranks @ member.astype(np.float64)) / member.sum(axis=0)
    overall = category_scores.mean(axis=-1)
    overall_ranks = ranks(-np.round(overall, SCORE_DECIMALS), ties)
    return metric_ranks, category_scores, overall, overall_ranks


def rank_table(means: Mapping[str, Mapping[str, float]], directions: Mapping[str, str | bool],
               categories: Mapping[str, str], ties: str = "dense", decimals: int | None = None) -> dict[str, Any]:
    """Ranks systems by the URGENT rule (see the module).

    ``means``: system -> metric -> its mean (a missing or NaN value: none);
    ``directions``: metric -> "higher" or "lower" (or higher_is_better as a bool);
    ``categories``: metric -> its category; only these metrics rank.
    Returns ``{"systems": [{"system", "overall_score", "overall_rank",
    "category_ranks", "metric_ranks"}, ...], "settings": {...}}``, best
    first (equal ranks in the order given), the form ``rank --json`` and
    ranking.json write."""
    check_rule(ties, decimals)
    systems = list(means)
    metrics = [m for m in categories if any(finite(means[s].get(m)) for s in systems)]
    if not systems or not metrics:
        raise UserError("nothing to rank: " + ("no system" if not systems else "no ranked metric has a value"))
    unknown = [m for m in metrics if m not in directions]
    if unknown:
        raise UserError(f"no direction for {', '.join(unknown)}: say higher or lower")
    names = list(dict.fromkeys(categories[m] for m in metrics))
    table = np.array([[number(means[s].get(m)) for m in metrics] for s in systems], dtype=np.float64)
    higher = np.array([is_higher(directions[m], m) for m in metrics])
    category_of = np.array([names.index(categories[m]) for m in metrics])
    metric_ranks, scores, overall, overall_ranks = rank_arrays(table, higher, category_of, len(names), ties, decimals)
    rows = [
        {"system": system, "overall_score": float(overall[i]), "overall_rank": int(overall_ranks[i]),
         "category_ranks": {name: float(scores[i, c]) for c, name in enumerate(names)},
         "metric_ranks": {metric: int(metric_ranks[i, k]) for k, metric in enumerate(metrics)},
         **({"missing": missing} if (missing := [m for m in metrics if not finite(means[system].get(m))]) else {})}
        for i, system in enumerate(systems)
    ]
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["overall_rank"], i))
    return {"systems": [rows[i] for i in order], "settings": settings(ties, decimals, metrics, directions, categories)}


def settings(ties: str, decimals: int | None, metrics: Sequence[str], directions: Mapping[str, str | bool],
             categories: Mapping[str, str]) -> dict[str, Any]:
    """The rule's settings, as ranking.json and ``rank --json`` record them."""
    return {
        "rule": "urgent: per-metric mean, rank per metric, mean rank per category, mean over categories",
        "ties": ties, "decimals": decimals,
        "categories": {name: [m for m in metrics if categories[m] == name] for name in dict.fromkeys(categories[m] for m in metrics)},
        "directions": {m: "higher" if is_higher(directions[m], m) else "lower" for m in metrics},
    }


def check_rule(ties: str, decimals: int | None) -> None:
    if ties not in TIES:
        raise UserError(f"ties {ties!r}: say {' or '.join(TIES)}")
    if decimals is not None and (not isinstance(decimals, int) or decimals < 0):
        raise UserError(f"decimals {decimals!r}: a whole number of 0 or more")


def is_higher(direction: str | bool, metric: str) -> bool:
    if isinstance(direction, bool):
        return direction
    text = str(direction).strip().lower()
    if text not in ("higher", "lower"):
        raise UserError(f"direction of {metric} is {direction!r}: say higher or lower")
    return text == "higher"


def number(value: Any) -> float:
    return float(value) if finite(value) else math.nan


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
