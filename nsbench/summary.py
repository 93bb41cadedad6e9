"""Aggregation of clip records into per-cell and per-engine statistics.

Pure functions of records; the report writers format what these return.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from nsbench.types import ClipRecord, MetricSpec


def describe(values: Sequence[float]) -> dict[str, float | int]:
    """Mean, median and median absolute deviation (unscaled), and the count."""
    if not values:
        return {"n": 0, "mean": math.nan, "median": math.nan, "mad": math.nan}
    array = np.asarray(values, dtype=np.float64)
    median = float(np.median(array))
    return {
        "n": len(values),
        "mean": float(array.mean()),
        "median": median,
        "mad": float(np.median(np.abs(array - median))),
    }


def cell_of(labels: Mapping[str, str], cell_keys: Sequence[str]) -> tuple[str, ...]:
    return tuple(str(labels.get(key, "")) for key in cell_keys)


def natural_key(cell: tuple[str, ...]) -> tuple:
    """Sort numbers as numbers ("-5" < "0" < "10") and words after them."""
    key = []
    for part in cell:
        try:
            key.append((0, float(part), ""))
        except ValueError:
            key.append((1, 0.0, part))
    return tuple(key)


def metric_stats(records: Iterable[ClipRecord], metrics: Sequence[MetricSpec]) -> dict[str, dict[str, Any]]:
    """Per metric: statistics over clips. A clip run with several seeds counts
    once, by its mean over seeds (the Biodenoising seed card's aggregation);
    then ``pooled`` adds the statistics over every clip x seed row, with a
    bootstrap 95% CI of the median (the variant earthspecies' results.py reports)."""
    scored = [record for record in records if not record.failed]
    seeded = len({record.seed for record in scored}) > 1
    stats = {}
    for metric in metrics:
        by_clip: dict[str, list[float]] = {}
        for record in scored:
            if metric.name in record.scores:
                by_clip.setdefault(record.clip_id, []).append(record.scores[metric.name])
        stats[metric.name] = describe([float(np.mean(values)) for values in by_clip.values()])
        if seeded:
            rows = [value for values in by_clip.values() for value in values]
            stats[metric.name]["pooled"] = {**describe(rows), "median_ci95": bootstrap_median_ci(rows)}
    return stats


BOOTSTRAP_RESAMPLES = 1000


@functools.lru_cache(maxsize=4)
def resample_indices(count: int) -> np.ndarray:
    """(resamples, count) indices; the same for every call with this count."""
    return np.stack([np.random.RandomState(i).randint(0, count, count) for i in range(BOOTSTRAP_RESAMPLES)])


def bootstrap_median_ci(values: Sequence[float], level: float = 0.95) -> list[float]:
    """Percentile bootstrap confidence interval of the median.

    Resample i draws its indices from ``np.random.RandomState(i)``, as the
    ``confidence_intervals`` package behind earthspecies' results.py does, so
    the pooled interval reproduces theirs on the same rows.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        return [math.nan, math.nan]
    medians = np.median(array[resample_indices(len(array))], axis=1)
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(medians, tail)), float(np.percentile(medians, 100 - tail))]


def summarise(
    records: Sequence[ClipRecord],
    metrics: Sequence[MetricSpec],
    cell_keys: Sequence[str],
    headline: str = "si_sdri",
    pooled_cells: Mapping[str, Sequence[str]] = {},
) -> dict[str, Any]:
    """Overall and per-cell statistics for one engine's records.

    ``pooled_cells`` maps a new value of the first cell key to the values it
    pools (FUSS: "2-4" -> "2", "3", "4"); those rows are marked ``pooled`` and
    never named as the worst cell (their members already are rows).
    """
    cells: dict[tuple[str, ...], list[ClipRecord]] = {}
    for record in records:
        cells.setdefault(cell_of(record.labels, cell_keys), []).append(record)
    cell_rows = [cell_row(dict(zip(cell_keys, cell)), members, metrics) for cell, members in sorted(cells.items(), key=lambda item: natural_key(item[0]))]
    for name, members_of in pooled_cells.items():
        members = [r for r in records if str(r.labels.get(cell_keys[0], "")) in members_of]
        if members:
            cell_rows.append({**cell_row({cell_keys[0]: name}, members, metrics), "pooled": True})
    return {
        "clips": len({record.clip_id for record in records}),
        "runs": len(records),  # clips x seeds
        "failures": sum(record.failed for record in records),
        "failed_clips": [{"clip_id": r.clip_id, "error": r.error} for r in records if r.failed],
        "metrics": metric_stats(records, metrics),
        "cells": cell_rows,
        "worst_cell": worst_cell([row for row in cell_rows if not row.get("pooled")], metrics, headline),
        **realtime_totals(records),
    }


def cell_row(cell: dict[str, str], members: Sequence[ClipRecord], metrics: Sequence[MetricSpec]) -> dict[str, Any]:
    return {
        "cell": cell,
        "clips": len({record.clip_id for record in members}),
        "failures": sum(record.failed for record in members),
        "metrics": metric_stats(members, metrics),
    }


def worst_cell(cell_rows: list[dict[str, Any]], metrics: Sequence[MetricSpec], headline: str) -> dict[str, Any] | None:
    """The cell with the worst mean of the headline metric (or the first metric if it was not scored)."""
    by_name = {metric.name: metric for metric in metrics}
    name = headline if headline in by_name else next(iter(by_name), None)
    if name is None:
        return None
    candidates = [row for row in cell_rows if row["metrics"][name]["n"]]
    if not candidates:
        return None
    sign = 1 if by_name[name].higher_is_better else -1
    row = min(candidates, key=lambda row: sign * row["metrics"][name]["mean"])
    return {"metric": name, "cell": row["cell"], "mean": row["metrics"][name]["mean"]}


def realtime_totals(records: Sequence[ClipRecord]) -> dict[str, float]:
    """Picovoice's ``rtf``: total processing time over total audio duration
    (CPU time here; wall time beside it), over the clips that ran."""
    ran = [r for r in records if not r.failed]
    duration = sum(r.duration for r in ran)
    if not duration:
        return {"rtf": math.nan, "rtf_wall": math.nan}
    return {
        "rtf": sum(r.cpu_seconds for r in ran) / duration,
        "rtf_wall": sum(r.wall_seconds for r in ran) / duration,
    }
