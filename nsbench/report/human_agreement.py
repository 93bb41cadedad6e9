"""Do the metrics agree with listeners? Each metric against each rated
dimension of a rated set (nsbench.ratings), as ITU-T P.1401 evaluates an
objective model (nsbench.report.p1401), at two levels:

* ``file``: one item per rated file (the metric's value on it, its rating);
* ``condition``: one item per condition (the metric's mean over the
  condition's files, the condition's rating: as the source publishes it, else
  pooled from its files' votes).

On a benchmark run the rated files are the passthrough engine's outputs (its
output is its input, the file as rated); other engines ran on them too, but
nobody rated their outputs, so they are listed as not rated and left out.
``nsbench listen --collect`` calls ``cell_rows`` with its own stimuli and
their metric values: one path, one table, whatever the ratings' source.

Each row also gives the figures without the unprocessed sources (files
that are their own reference, such as the P.835 set's c0): a source rated near
5 that every metric scores high stretches the range and lifts every
correlation. And where the references were aligned to the rated files
(datasets/rated.py), the lags found, summarised per cell.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.ratings import UNALIGNED_NOTE, RatedItem, RatedSet, Rating, alignment_of
from nsbench.report import p1401
from nsbench.report.baselines import clip_values
from nsbench.report.record_table import RecordTable
from nsbench.plugins.specs import MetricSpec

FILE, CONDITION = "file", "condition"
LEVELS = (FILE, CONDITION)
FILE_NAME = "human-agreement.json"


def cell_name(rated: RatedSet) -> str:
    return f"set={rated.cell}"


def is_source(rated: RatedSet, item: RatedItem) -> bool:
    """The file is its own reference (the same path, or the same bytes): unprocessed, rated as the top anchor."""
    if not item.reference:
        return False
    if item.reference == item.file:
        return True
    file, reference = rated.folder / item.file, rated.folder / item.reference
    try:
        return file.stat().st_size == reference.stat().st_size and file.read_bytes() == reference.read_bytes()
    except OSError:
        return False


def source_ids(rated: RatedSet) -> set[str]:
    """The clip ids of the set's unprocessed sources (``is_source``: it reads the files, so once per set)."""
    return {item.clip_id for item in rated.items if is_source(rated, item)}


def file_items(rated: RatedSet, values: Mapping[str, float], dim: str, skip: set[str]) -> list[tuple[float, Rating]]:
    return [(values[item.clip_id], item.ratings[dim]) for item in rated.items
            if item.clip_id in values and item.clip_id not in skip and math.isfinite(values[item.clip_id])]


def condition_items(rated: RatedSet, values: Mapping[str, float], dim: str, skip: set[str]) -> list[tuple[float, Rating]]:
    """(the metric's mean over the condition's scored files, the condition's rating) per condition."""
    by_condition: dict[str, list[float]] = {}
    for item in rated.items:
        value = values.get(item.clip_id, math.nan)
        if item.condition and item.clip_id not in skip and math.isfinite(value):
            by_condition.setdefault(item.condition, []).append(value)
    ratings = rated.conditions()
    return [(float(np.mean(found)), ratings[name][dim]) for name, found in by_condition.items() if name in ratings]


def evaluated(pairs: Sequence[tuple[float, Rating]], intervals: bool = True) -> dict[str, Any]:
    x = [value for value, _ in pairs]
    field = lambda name: [getattr(rating, name) for _, rating in pairs]
    return p1401.evaluate(x, field("mean"), field("ci95"), field("std"), field("votes"), intervals=intervals)


def cell_rows(rated: RatedSet, values: Mapping[str, Mapping[str, float]], sources: set[str] | None = None) -> list[dict[str, Any]]:
    """Every (metric, dimension, level) row of one rated set. ``values``:
    metric -> the rated item's clip_id -> the metric's value on it; ``sources``:
    ``source_ids(rated)`` where the caller has it."""
    sources = source_ids(rated) if sources is None else sources
    rows = []
    for metric, by_item in values.items():
        for dim in rated.dimensions:
            for level, items in ((FILE, file_items), (CONDITION, condition_items)):
                pairs = items(rated, by_item, dim, set())
                if len(pairs) < 2:
                    continue
                row = {"cell": cell_name(rated), "metric": metric, "dimension": dim, "level": level, **evaluated(pairs),
                       "points": {"metric": [value for value, _ in pairs], "rating": [rating.mean for _, rating in pairs]}}
                if sources:
                    rest = items(rated, by_item, dim, sources)
                    row["without_sources"] = {k: v for k, v in evaluated(rest, intervals=False).items()
                                              if k not in ("mapping", "intervals")} if len(rest) >= 2 else None
                rows.append(row)
    return rows


# ----------------------------------------------------------------- on a benchmark run


def judged(metrics: Sequence[MetricSpec]) -> list[MetricSpec]:
    """The metrics that judge audio (the timings judge none)."""
    return [metric for metric in metrics if metric.needs_reference or metric.needs_voice]


def run_values(table: RecordTable, rated: RatedSet, metrics: Sequence[MetricSpec]) -> dict[str, dict[str, float]]:
    """metric -> rated item -> the rated engine's value on it (clip ids ``<cell>/<item>``, datasets/rated.py)."""
    size, found = len(table.pools.clips), {}
    numbers = {item.clip_id: table.pools.clips.find(f"{rated.cell}/{item.clip_id}") for item in rated.items}
    for metric in judged(metrics):
        dense, present = clip_values(table, metric.name).dense(size)
        by_item = {name: float(dense[number]) for name, number in numbers.items() if number is not None and present[number]}
        if by_item:
            found[metric.name] = by_item
    return found


def lags(table: RecordTable, rated: RatedSet) -> dict[str, Any]:
    """How far the references were moved to meet the rated files: lag (samples at a rate) -> files; unaligned files."""
    counts: Counter[tuple[int, int]] = Counter()
    unaligned = 0
    prefix = f"{rated.cell}/"
    for row in table.rows_where("notes", bool):
        if not table.clip_id(row).startswith(prefix):
            continue
        for note in table.value(table.column("notes")[row]):
            found = alignment_of(note)
            if found:
                counts[found] += 1
            unaligned += note == UNALIGNED_NOTE
    return {"lags": [{"samples": lag, "rate": rate, "ms": 1000 * lag / rate, "files": files}
                     for (lag, rate), files in sorted(counts.items())], "unaligned": unaligned}


def run_agreement(sets: Sequence[RatedSet], records: Mapping[str, RecordTable], metrics: Sequence[MetricSpec],
                  rated_engine: str | None) -> dict[str, Any]:
    """human-agreement.json's payload; {} when the rated engine did not run."""
    if not sets or rated_engine not in records:
        return {}
    table = records[rated_engine]
    sources = {rated.cell: source_ids(rated) for rated in sets}
    rows = [row for rated in sets for row in cell_rows(rated, run_values(table, rated, metrics), sources[rated.cell])]
    directions = {metric.name: metric.higher_is_better for metric in metrics}
    return {
        "human": rows,
        "rated_engine": rated_engine,
        "not_rated": [engine for engine in records if engine != rated_engine],
        "alignment": {cell_name(rated): lags(table, rated) for rated in sets},
        "higher_is_better": {row["metric"]: directions.get(row["metric"]) for row in rows},
        "items": {cell_name(rated): {"files": len(rated.items), "conditions": len(rated.conditions()),
                                     "sources": len(sources[rated.cell])} for rated in sets},
        "definitions": DEFINITIONS,
    }


DEFINITIONS = {
    "pearson": "Pearson's r of the metric with the ratings, raw",
    "pearson_mapped": "Pearson's r after the P.1401 monotonic third-order mapping (least squares, monotonic over the metric's observed range)",
    "spearman": "Spearman's rank correlation", "kendall": "Kendall's tau-b",
    "rmse": "RMSE of the mapped metric, sum of squares over N - 4 (P.1401)",
    "rmse_star": "P.1401 epsilon-insensitive RMSE: each error less the rating's 95% interval (not below 0), over N - 4",
    "outlier_ratio": "share of items whose mapped error exceeds 2 std / sqrt(votes) (P.1401)",
    "intervals": f"percentile bootstrap 95% intervals over the items ({p1401.BOOTSTRAP} resamples, seed {p1401.SEED})",
    "points": "the items' metric values and ratings, as the scatters in report.html draw them",
    "without_sources": "the same figures without the files that are their own reference (the unprocessed sources)",
}


def median_lag_text(alignment: Mapping[str, Any]) -> str:
    """'275 samples at 16000 Hz (17.2 ms) on 72 files; 0 on 6' for a cell's alignment."""
    parts = [f"{lag['samples']} samples at {lag['rate']} Hz ({lag['ms']:.1f} ms) on {lag['files']} files"
             for lag in sorted(alignment["lags"], key=lambda lag: -lag["files"])]
    if alignment["unaligned"]:
        parts.append(f"{alignment['unaligned']} files with no clear lag, not aligned")
    return "; ".join(parts) if parts else "no reference aligned"

