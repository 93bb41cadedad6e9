"""Aggregation of clip records into per-cell and per-engine statistics.

Pure functions of an engine's records, held as columns (nsbench.report.record_table:
per-metric arrays grouped by cell); the report writers format what these return.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from nsbench.audio import checks

from nsbench.report.statistics import bootstrap_ci, bootstrap_median_ci, pooled_mean_ci, uncertainty  # noqa: F401 (bootstrap_ci: re-exported)
from nsbench.text import plural
from nsbench.plugins.records import ClipRecord
from nsbench.report.record_table import ClipValues, RecordTable, as_table, clip_means, smallest
from nsbench.plugins.specs import MetricSpec


def describe(values: Sequence[float]) -> dict[str, float | int]:
    """Mean, median and median absolute deviation (unscaled), and the count."""
    if not len(values):
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


def seeded(table: RecordTable, rows: np.ndarray) -> bool:
    """More than one seed among the rows (None counting as one)."""
    has = table.column("has_seed")[rows]
    return len(np.unique(table.column("seed")[rows][has])) + bool((~has).any()) > 1


def metric_stats(table: RecordTable, rows: np.ndarray, metrics: Sequence[MetricSpec]) -> dict[str, dict[str, Any]]:
    """Per metric: statistics over clips. A clip run with several seeds counts
    once, by its mean over seeds (the Biodenoising seed card's aggregation);
    then ``pooled`` adds the statistics over every clip x seed row, with a
    bootstrap 95% CI of the median (the variant earthspecies' results.py reports).
    A metric with a Pooling has its mean and std over items instead (item_pooled)."""
    scored = rows[~table.column("failed")[rows]]
    several = seeded(table, scored)
    stats, means, pooled_metrics = {}, {}, {}
    for metric in metrics:
        values = clip_means(table, scored, metric.name)
        means[metric.name] = values.means
        stats[metric.name] = describe(values.means)
        if several:
            every = table.score(metric.name)[0][values.grouped]  # every clip x seed row, grouped by clip
            stats[metric.name]["pooled"] = {**describe(every), "median_ci95": bootstrap_median_ci(every)}
        if metric.pooling is not None:
            pooled_metrics[metric.name] = (metric, values)
    for name, extra in uncertainty(means).items():
        stats[name].update(extra)
    for name, (metric, values) in pooled_metrics.items():
        stats[name] = item_pooled(stats[name], metric, table, values)
    return stats


def item_pooled(clip_stats: dict[str, Any], metric: MetricSpec, table: RecordTable, values: ClipValues) -> dict[str, Any]:
    """A pooled metric's figures (types.Pooling): ``mean`` and ``std`` over
    every item of every clip (and seed), each clip weighing by its item count,
    as FUSS's evaluate_lib.py pools scored pairs; ``clip_mean`` keeps the mean
    over clips, the other statistics (median, tails) stay over clips, and
    ``mean_ci95`` resamples clips, the unit that was sampled."""
    if not len(values):
        return {**clip_stats, "std": math.nan, metric.pooling.items: 0, "clip_mean": math.nan,
                "pooled_over": metric.pooling.items, "pooling": metric.pooling.description}
    rows = values.grouped  # every clip x seed, grouped by clip
    means = table.score(metric.name)[0][rows]
    counts, variances = (column[rows] for column in table.pooled_parts(metric.name))
    total = counts.sum()
    mean = float(np.dot(counts, means) / total)
    # Within-clip spread plus each clip's offset from the pooled mean: the
    # variance over all items, without the items themselves.
    variance = float(np.dot(counts, variances + (means - mean) ** 2) / total)
    triples = list(zip(means.tolist(), counts.tolist(), variances.tolist()))
    per_clip = [triples[start:end] for start, end in zip(values.bounds[:-1], values.bounds[1:])]
    return {
        "n": clip_stats["n"],
        "mean": mean,
        "std": math.sqrt(variance),
        metric.pooling.items: int(total),
        "clip_mean": clip_stats["mean"],
        "pooled_over": metric.pooling.items,  # names the count's key
        "pooling": metric.pooling.description,
        **{key: value for key, value in clip_stats.items() if key not in ("n", "mean")},
        "mean_ci95": pooled_mean_ci(per_clip),
        "ci95_resamples": "clips",
    }


def summarise(
    records: RecordTable | Iterable[ClipRecord],
    metrics: Sequence[MetricSpec],
    cell_keys: Sequence[str],
    headline: str = "",
    pooled_cells: Mapping[str, Sequence[str]] = {},
    voice_drop_db: float = checks.VOICE_DROP_DB,
    expected_flags: Mapping[str, str] = {},
) -> dict[str, Any]:
    """Overall and per-cell statistics for one engine's records (a RecordTable, or ClipRecords).
    ``headline``: the run's (its plan resolves the dataset's, nsbench.report.layout);
    "": the first of ``metrics`` whose spec says ``headline_by_default``.
    ``expected_flags``: the engine spec's (flags that define it, listed apart).

    ``pooled_cells`` maps a new value of the first cell key to the values it
    pools (FUSS: "2-4" -> "2", "3", "4"), one row per combination of the other
    keys' values; those rows are marked ``pooled`` and never named as the
    worst cell (their members already are rows).
    """
    table = as_table(records)
    headline = headline or next((metric.name for metric in metrics if metric.headline_by_default), "")
    numbers, cells = table.cells(cell_keys)
    order = sorted(range(len(cells)), key=lambda number: natural_key(cells[number]))
    cell_rows = [cell_row(dict(zip(cell_keys, cells[number])), table, np.flatnonzero(numbers == number), metrics)
                 for number in order]
    for name, members_of in pooled_cells.items():
        # Within each value of the other keys (a condition): never across them.
        by_rest: dict[tuple[str, ...], list[int]] = {}
        for number, cell in enumerate(cells):
            if cell[0] in members_of:
                by_rest.setdefault(cell[1:], []).append(number)
        first_row = {rest: int(np.flatnonzero(np.isin(numbers, members))[0]) for rest, members in by_rest.items()}
        for rest in sorted(sorted(by_rest, key=first_row.__getitem__), key=natural_key):
            row = cell_row(dict(zip(cell_keys, (name, *rest))), table, np.flatnonzero(np.isin(numbers, by_rest[rest])), metrics)
            cell_rows.append({**row, "pooled": True})
    every = np.arange(len(table))
    failed = np.flatnonzero(table.column("failed"))
    return {
        "clips": len(np.unique(table.column("clip"))),
        "runs": len(table),  # clips x seeds
        "failures": len(failed),
        "failed_clips": [{"clip_id": table.clip_id(row), "error": table.value(table.column("error")[row])} for row in failed],
        "metrics": metric_stats(table, every, metrics),
        "cells": cell_rows,
        "worst_cell": worst_cell([row for row in cell_rows if not row.get("pooled")], metrics, headline),
        **realtime_totals(table),
        "alignment": alignment_summary(table),
        **flag_summary(table, voice_drop_db, expected_flags),
        **listening_picks(table, headline_spec(metrics, headline)),
        "metric_notes": note_counts(table),
    }


def note_counts(records: RecordTable | Iterable[ClipRecord]) -> dict[str, dict[str, int]]:
    """What metrics said about their values, counted: {"wer_reference": {"asr_of_clean": 36}}."""
    counts: dict[str, Counter] = {}
    for notes, count in as_table(records).counted("metric_notes"):  # in order of first appearance, as record by record
        for name, note in notes:
            counts.setdefault(name, Counter())[note] += count
    return {name: dict(counter) for name, counter in counts.items()}


def cell_row(cell: dict[str, str], table: RecordTable, rows: np.ndarray, metrics: Sequence[MetricSpec]) -> dict[str, Any]:
    return {
        "cell": cell,
        "clips": len(np.unique(table.column("clip")[rows])),
        "failures": int(table.column("failed")[rows].sum()),
        "metrics": metric_stats(table, rows, metrics),
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


def in_order_sum(values: np.ndarray) -> float:
    """Python's sum(): left to right from 0 (np.sum adds pairwise, to other last digits)."""
    return float(np.cumsum(np.concatenate([[0.0], values]))[-1])


def realtime_totals(records: RecordTable | Iterable[ClipRecord]) -> dict[str, float]:
    """Picovoice's ``rtf``: total processing time over total audio duration
    (CPU time here; wall time beside it), over the clips that ran."""
    table = as_table(records)
    ran = ~table.column("failed")
    duration = in_order_sum(table.column("duration")[ran])
    if not duration:
        return {"rtf": math.nan, "rtf_wall": math.nan}
    return {
        "rtf": in_order_sum(table.column("cpu_seconds")[ran]) / duration,
        "rtf_wall": in_order_sum(table.column("wall_seconds")[ran]) / duration,
    }


def headline_spec(metrics: Sequence[MetricSpec], headline: str) -> MetricSpec | None:
    """The headline metric, or the first one if it was not computed."""
    by_name = {metric.name: metric for metric in metrics}
    return by_name.get(headline, next(iter(by_name.values()), None))


# --------------------------------------------------------------------------- checks

# A non-zero lag found on at least this share of the measured clips is the
# engine's constant lag, which --align-constant-lag removes.
CONSTANT_LAG_SHARE = 0.8


def alignment_summary(records: RecordTable | Iterable[ClipRecord]) -> dict[str, Any]:
    """Residual lags over the clips: "sample-aligned", or late/early by how
    much on which clips, and the constant lag if there is one."""
    table = as_table(records)
    measured = np.flatnonzero(table.column("lag_measured"))
    lag_of, rate_of = table.column("residual_lag"), table.column("sample_rate")
    lags: dict[int, list[str]] = {}
    for row in measured[lag_of[measured] != 0]:
        lags.setdefault(int(lag_of[row]), []).append(table.run_id(row))
    unmeasured = table.rows_where("lag_unmeasured", lambda why: bool(why) and why != checks.NO_REFERENCE_LAG)
    unmeasured = unmeasured[~table.column("lag_measured")[unmeasured]]
    not_checked = len(table.rows_where("lag_unmeasured", lambda why: why == checks.NO_REFERENCE_LAG))
    summary = {
        "sample_aligned": bool(len(measured)) and not lags,
        "measured_clips": len(measured),
        "sample_rates": sorted({int(rate) for rate in np.unique(rate_of[measured])}),
        "lags": {str(lag): clips for lag, clips in sorted(lags.items())},
        "unmeasured_clips": [table.run_id(row) for row in unmeasured],
        "constant_lag": constant_lag(lag_of[measured], rate_of[measured]),
        # Clips without a clean reference, on which the lag has no check.
        "not_checked_clips": not_checked,
    }
    return {"text": alignment_text(summary), **summary}


def constant_lag(lags: np.ndarray, rates: np.ndarray) -> dict[str, int] | None:
    """The most common non-zero (lag, rate) over the measured clips, if it holds
    on CONSTANT_LAG_SHARE of them (ties: the first seen, as Counter.most_common)."""
    late = lags != 0
    if not late.any():
        return None
    pairs = np.stack([lags[late], rates[late].astype(np.int64)], axis=1)
    distinct, first, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
    best = min(range(len(distinct)), key=lambda i: (-counts[i], first[i]))
    if counts[best] < CONSTANT_LAG_SHARE * len(lags):
        return None
    return {"samples": int(distinct[best][0]), "sample_rate": int(distinct[best][1]), "clips": int(counts[best])}


def alignment_text(summary: Mapping[str, Any]) -> str:
    """"sample-aligned", or "late by N samples on k clips" (and early, unmeasurable)."""
    parts = []
    if summary["sample_aligned"]:
        parts.append("sample-aligned")
    elif not summary["measured_clips"] and not summary.get("not_checked_clips"):
        parts.append("alignment not measured")
    for lag, clips in summary["lags"].items():
        side = "late" if int(lag) > 0 else "early"
        parts.append(f"{side} by {plural(abs(int(lag)), 'sample')} on {plural(len(clips), 'clip')}")
    if summary["unmeasured_clips"]:
        parts.append(f"not measurable on {plural(len(summary['unmeasured_clips']), 'clip')}")
    if summary.get("not_checked_clips"):
        parts.append(f"{checks.NO_REFERENCE_LAG} on {plural(summary['not_checked_clips'], 'clip')}")
    return ", ".join(parts)


def flag_summary(
    records: RecordTable | Iterable[ClipRecord], voice_drop_db: float = checks.VOICE_DROP_DB, expected: Mapping[str, str] = {}
) -> dict[str, dict[str, Any]]:
    """Per raised flag, its meaning and the clips. Flags that define the engine
    (``expected``: the passthrough passes its input through) go under ``expected_flags``."""
    table = as_table(records)
    flags, expected_flags = {}, {}
    for name, description in checks.flag_descriptions(voice_drop_db).items():
        clips = [table.run_id(row) for row in table.rows_where("flags", lambda raised: name in raised)]
        if not clips:
            continue
        if name in expected:
            expected_flags[name] = {"description": description, "clips": clips, "expected": expected[name]}
        else:
            flags[name] = {"description": description, "clips": clips}
    return {"flags": flags, "expected_flags": expected_flags}


# --------------------------------------------------------------------------- worst and typical clips

WORST_CLIPS = 5  # listed per engine, with their audio
TYPICAL_CLIPS = 2  # nearest the engine's median, to listen to beside the worst


def listening_picks(records: RecordTable | Iterable[ClipRecord], metric: MetricSpec | None) -> dict[str, list[dict[str, Any]]]:
    """The worst clips by the headline metric, and the typical ones (nearest its median)."""
    if metric is None:
        return {"worst_clips": [], "typical_clips": []}
    table = as_table(records)
    values, present = table.score(metric.name)
    scored = np.flatnonzero(present & ~table.column("failed"))
    sign = 1 if metric.higher_is_better else -1
    scores = values[scored]
    worst = scored[smallest(sign * scores, lambda i: table.run_id(scored[i]), WORST_CLIPS)]
    median = float(np.median(scores)) if len(scored) else math.nan
    rest = scored[~np.isin(scored, worst)]
    typical = rest[smallest(np.abs(values[rest] - median), lambda i: table.run_id(rest[i]), TYPICAL_CLIPS)]
    return {"worst_clips": [pick(table.record(row), metric.name) for row in worst],
            "typical_clips": [pick(table.record(row), metric.name) for row in typical]}


def pick(record: ClipRecord, metric: str) -> dict[str, Any]:
    return {
        "clip_id": record.clip_id,
        "run": record.run_id,
        "seed": record.seed,
        "labels": record.labels,
        "metric": metric,
        "value": record.scores[metric],
        "source_path": record.source_path,
    }


# --------------------------------------------------------------------------- paired comparisons
