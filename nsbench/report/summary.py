"""Aggregation of clip records into per-cell and per-engine statistics.

Pure functions of records; the report writers format what these return.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from nsbench.run import checks

from nsbench.report import layout
from nsbench.report.statistics import bootstrap_ci, bootstrap_median_ci, pooled_mean_ci, uncertainty  # noqa: F401 (bootstrap_ci: re-exported)
from nsbench.text import plural
from nsbench.plugins.records import ClipRecord
from nsbench.plugins.specs import MetricSpec


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
    bootstrap 95% CI of the median (the variant earthspecies' results.py reports).
    A metric with a Pooling has its mean and std over items instead (item_pooled)."""
    scored = [record for record in records if not record.failed]
    seeded = len({record.seed for record in scored}) > 1
    stats, clip_means, pooled_metrics = {}, {}, {}
    for metric in metrics:
        by_clip: dict[str, list[ClipRecord]] = {}
        for record in scored:
            if metric.name in record.scores:
                by_clip.setdefault(record.clip_id, []).append(record)
        values = {clip: [r.scores[metric.name] for r in rows] for clip, rows in by_clip.items()}
        clip_means[metric.name] = [float(np.mean(v)) for v in values.values()]
        stats[metric.name] = describe(clip_means[metric.name])
        if seeded:
            rows = [value for v in values.values() for value in v]
            stats[metric.name]["pooled"] = {**describe(rows), "median_ci95": bootstrap_median_ci(rows)}
        if metric.pooling is not None:
            pooled_metrics[metric.name] = (metric, by_clip)
    for name, extra in uncertainty(clip_means).items():
        stats[name].update(extra)
    for name, (metric, by_clip) in pooled_metrics.items():
        stats[name] = item_pooled(stats[name], metric, by_clip)
    return stats


def item_pooled(clip_stats: dict[str, Any], metric: MetricSpec, by_clip: Mapping[str, Sequence[ClipRecord]]) -> dict[str, Any]:
    """A pooled metric's figures (types.Pooling): ``mean`` and ``std`` over
    every item of every clip (and seed), each clip weighing by its item count,
    as FUSS's evaluate_lib.py pools scored pairs; ``clip_mean`` keeps the mean
    over clips, the other statistics (median, tails) stay over clips, and
    ``mean_ci95`` resamples clips, the unit that was sampled."""
    per_clip = [[(r.scores[metric.name], *item_parts(r, metric.name)) for r in records] for records in by_clip.values()]
    rows = [row for clip_rows in per_clip for row in clip_rows]  # every clip x seed
    if not rows:
        return {**clip_stats, "std": math.nan, metric.pooling.items: 0, "clip_mean": math.nan,
                "pooled_over": metric.pooling.items, "pooling": metric.pooling.description}
    means, counts, variances = (np.array(column, dtype=np.float64) for column in zip(*rows))
    total = counts.sum()
    mean = float(np.dot(counts, means) / total)
    # Within-clip spread plus each clip's offset from the pooled mean: the
    # variance over all items, without the items themselves.
    variance = float(np.dot(counts, variances + (means - mean) ** 2) / total)
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


def item_parts(record: ClipRecord, metric: str) -> tuple[float, float]:
    """(item count, item variance) of a clip's pooled value; one item where
    none was recorded (a plain number)."""
    parts = record.pooled.get(metric, {})
    return float(parts.get("count", 1)), float(parts.get("variance", 0.0))


def summarise(
    records: Sequence[ClipRecord],
    metrics: Sequence[MetricSpec],
    cell_keys: Sequence[str],
    headline: str = "",
    pooled_cells: Mapping[str, Sequence[str]] = {},
    voice_drop_db: float = checks.VOICE_DROP_DB,
    expected_flags: Mapping[str, str] = {},
) -> dict[str, Any]:
    """Overall and per-cell statistics for one engine's records.
    ``headline``: the dataset's ("": the default one, nsbench.report.layout).
    ``expected_flags``: the engine spec's (flags that define it, listed apart).

    ``pooled_cells`` maps a new value of the first cell key to the values it
    pools (FUSS: "2-4" -> "2", "3", "4"), one row per combination of the other
    keys' values; those rows are marked ``pooled`` and never named as the
    worst cell (their members already are rows).
    """
    headline = layout.headline(headline)
    cells: dict[tuple[str, ...], list[ClipRecord]] = {}
    for record in records:
        cells.setdefault(cell_of(record.labels, cell_keys), []).append(record)
    cell_rows = [cell_row(dict(zip(cell_keys, cell)), members, metrics) for cell, members in sorted(cells.items(), key=lambda item: natural_key(item[0]))]
    for name, members_of in pooled_cells.items():
        # Within each value of the other keys (a condition): never across them.
        by_rest: dict[tuple[str, ...], list[ClipRecord]] = {}
        for record in records:
            cell = cell_of(record.labels, cell_keys)
            if cell[0] in members_of:
                by_rest.setdefault(cell[1:], []).append(record)
        for rest, members in sorted(by_rest.items(), key=lambda item: natural_key(item[0])):
            row = cell_row(dict(zip(cell_keys, (name, *rest))), members, metrics)
            cell_rows.append({**row, "pooled": True})
    return {
        "clips": len({record.clip_id for record in records}),
        "runs": len(records),  # clips x seeds
        "failures": sum(record.failed for record in records),
        "failed_clips": [{"clip_id": r.clip_id, "error": r.error} for r in records if r.failed],
        "metrics": metric_stats(records, metrics),
        "cells": cell_rows,
        "worst_cell": worst_cell([row for row in cell_rows if not row.get("pooled")], metrics, headline),
        **realtime_totals(records),
        "alignment": alignment_summary(records),
        **flag_summary(records, voice_drop_db, expected_flags),
        **listening_picks(records, headline_spec(metrics, headline)),
        "metric_notes": note_counts(records),
    }


def note_counts(records: Sequence[ClipRecord]) -> dict[str, dict[str, int]]:
    """What metrics said about their values, counted: {"wer_reference": {"asr_of_clean": 36}}."""
    counts: dict[str, Counter] = {}
    for record in records:
        for name, note in record.metric_notes.items():
            counts.setdefault(name, Counter())[note] += 1
    return {name: dict(counter) for name, counter in counts.items()}


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


def headline_spec(metrics: Sequence[MetricSpec], headline: str) -> MetricSpec | None:
    """The headline metric, or the first one if it was not computed."""
    by_name = {metric.name: metric for metric in metrics}
    return by_name.get(headline, next(iter(by_name.values()), None))


# --------------------------------------------------------------------------- checks

# A non-zero lag found on at least this share of the measured clips is the
# engine's constant lag, which --align-constant-lag removes.
CONSTANT_LAG_SHARE = 0.8


def alignment_summary(records: Sequence[ClipRecord]) -> dict[str, Any]:
    """Residual lags over the clips: "sample-aligned", or late/early by how
    much on which clips, and the constant lag if there is one."""
    measured = [r for r in records if r.residual_lag is not None]
    lags: dict[int, list[str]] = {}
    for record in measured:
        if record.residual_lag:
            lags.setdefault(record.residual_lag, []).append(record.run_id)
    unmeasured = [r.run_id for r in records if r.residual_lag is None and r.lag_unmeasured
                  and r.lag_unmeasured != checks.NO_REFERENCE_LAG]
    rates = sorted({r.sample_rate for r in measured})
    summary = {
        "sample_aligned": bool(measured) and not lags,
        "measured_clips": len(measured),
        "sample_rates": rates,
        "lags": {str(lag): clips for lag, clips in sorted(lags.items())},
        "unmeasured_clips": unmeasured,
        "constant_lag": constant_lag(measured),
        # Clips without a clean reference, on which the lag has no check.
        "not_checked_clips": sum(r.lag_unmeasured == checks.NO_REFERENCE_LAG for r in records),
    }
    return {"text": alignment_text(summary), **summary}


def constant_lag(measured: Sequence[ClipRecord]) -> dict[str, int] | None:
    """The most common non-zero (lag, rate), if it holds on CONSTANT_LAG_SHARE of the clips."""
    counts = Counter((r.residual_lag, r.sample_rate) for r in measured if r.residual_lag)
    if not counts:
        return None
    (lag, rate), count = counts.most_common(1)[0]
    if count < CONSTANT_LAG_SHARE * len(measured):
        return None
    return {"samples": lag, "sample_rate": rate, "clips": count}


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
    records: Sequence[ClipRecord], voice_drop_db: float = checks.VOICE_DROP_DB, expected: Mapping[str, str] = {}
) -> dict[str, dict[str, Any]]:
    """Per raised flag, its meaning and the clips. Flags that define the engine
    (``expected``: the passthrough passes its input through) go under ``expected_flags``."""
    flags, expected_flags = {}, {}
    for name, description in checks.flag_descriptions(voice_drop_db).items():
        clips = [r.run_id for r in records if name in r.flags]
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


def listening_picks(records: Sequence[ClipRecord], metric: MetricSpec | None) -> dict[str, list[dict[str, Any]]]:
    """The worst clips by the headline metric, and the typical ones (nearest its median)."""
    if metric is None:
        return {"worst_clips": [], "typical_clips": []}
    scored = [r for r in records if not r.failed and metric.name in r.scores]
    sign = 1 if metric.higher_is_better else -1
    ranked = sorted(scored, key=lambda r: (sign * r.scores[metric.name], r.run_id))
    worst = ranked[:WORST_CLIPS]
    median = float(np.median([r.scores[metric.name] for r in scored])) if scored else math.nan
    rest = [r for r in ranked if r not in worst]
    typical = sorted(rest, key=lambda r: (abs(r.scores[metric.name] - median), r.run_id))[:TYPICAL_CLIPS]
    return {"worst_clips": [pick(r, metric.name) for r in worst], "typical_clips": [pick(r, metric.name) for r in typical]}


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
