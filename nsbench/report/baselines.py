"""Every engine against the baselines, clip by clip: the paired Wilcoxon
signed-rank test and the Hodges-Lehmann estimate, over all clips and per cell.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.plugins.records import ClipRecord
from nsbench.report.record_table import ClipValues, RecordTable, as_tables, clip_means

from nsbench.plugins.specs import MetricSpec
from nsbench.report import signed_rank
from nsbench.report.layout import View
from nsbench.report.summary import headline_spec, natural_key

SIGNIFICANCE = 0.05


def compared_metrics(metrics: Sequence[MetricSpec], headline: str, view: View) -> list[MetricSpec]:
    """The headline metric and those shown beside it (stoi): the ones the tables rank by."""
    beside = view.beside_headline
    chosen = [headline_spec(metrics, headline)] + [m for m in metrics if m.name in beside]
    return list({m.name: m for m in chosen if m is not None}.values())


def compare_with_baselines(
    records_by_engine: Mapping[str, RecordTable | Sequence[ClipRecord]], metrics: Sequence[MetricSpec], cell_keys: Sequence[str],
    baselines: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """engine -> baseline -> metric -> paired comparison over all clips and per
    cell. ``baselines``: the engines whose spec says ``baseline``, in order."""
    tables = as_tables(records_by_engine)
    return {
        engine: {
            baseline: {
                metric.name: paired_by_cell(table, tables[baseline], metric, cell_keys)
                for metric in metrics
            }
            for baseline in baselines_of(engine, baselines)
            if baseline in tables
        }
        for engine, table in tables.items()
    }


def baselines_of(engine: str, baselines: Sequence[str]) -> Sequence[str]:
    """Every baseline for an engine; for a baseline, those before it (RNNoise
    against the passthrough, not the mirror of that)."""
    return baselines[: list(baselines).index(engine)] if engine in baselines else baselines


def paired_by_cell(table: RecordTable, baseline: RecordTable, metric: MetricSpec, cell_keys: Sequence[str]) -> dict[str, Any]:
    """Clip by clip, on arrays indexed by clip number (the tables share their pools)."""
    size = len(table.pools.clips)
    ours, has_ours = clip_values(table, metric.name).dense(size)
    theirs, has_theirs = clip_values(baseline, metric.name).dense(size)
    numbers, cells = table.cells(cell_keys)  # every record names its cell, paired or not
    clips = table.column("clip")
    both = np.flatnonzero(has_ours[clips] & has_theirs[clips])
    # Seeds repeat a clip: it pairs once per cell, at its first row there.
    _, first = np.unique(numbers[both] * size + clips[both], return_index=True)
    once = both[np.sort(first)]
    members = [clips[once[numbers[once] == number]] for number in range(len(cells))]
    paired = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
    return {
        "all": paired_difference(ours[paired], theirs[paired], metric.higher_is_better),
        "cells": [
            {"cell": dict(zip(cell_keys, cells[number])),
             **paired_difference(ours[members[number]], theirs[members[number]], metric.higher_is_better)}
            for number in sorted(range(len(cells)), key=lambda number: natural_key(cells[number]))
        ],
    }


def clip_values(table: RecordTable, name: str) -> ClipValues:
    """Per clip, its value (the mean over seeds, as metric_stats counts it), over the clips that ran."""
    return clip_means(table, np.flatnonzero(~table.column("failed")), name)


def paired_difference(ours: Sequence[float], theirs: Sequence[float], higher_is_better: bool) -> dict[str, Any]:
    """Wilcoxon signed-rank test of the per-clip differences (ours - theirs),
    with the Hodges-Lehmann estimate of the difference and its 95% interval
    from the same test (nsbench.report.signed_rank.hodges_lehmann_interval: exact
    for n <= 50 without equal differences, else the normal approximation).
    The verdict's direction is the estimate's, so it sits inside the interval.

    Chosen over a paired bootstrap because it stays honest on the two or three
    clips of a cell: with fewer than 6 pairs no difference can reach 5%, where a
    bootstrap of two same-signed differences would call it certain.
    """
    differences = np.asarray(ours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64)
    result = {"n": int(differences.size), "mean_difference": math.nan, "hodges_lehmann": math.nan,
              "hl_ci95": [math.nan, math.nan], "ci_method": "", "p_value": math.nan}
    if not differences.size:
        return {**result, "verdict": "no paired clips"}
    low, high, method = signed_rank.hodges_lehmann_interval(differences)
    result.update(mean_difference=float(differences.mean()), hodges_lehmann=signed_rank.hodges_lehmann(differences),
                  hl_ci95=[low, high], ci_method=method)
    result["p_value"] = wilcoxon_p(differences)
    if not result["p_value"] < SIGNIFICANCE:
        return {**result, "verdict": "not distinguishable"}
    # The estimate the test's interval is centred on; the mean only where ties put it at 0.
    direction = result["hodges_lehmann"] or result["mean_difference"]
    return {**result, "verdict": "better" if (direction > 0) == higher_is_better else "worse"}


def wilcoxon_p(differences: np.ndarray) -> float:
    """scipy.stats.wilcoxon's p-value (nsbench.report.signed_rank says why not scipy's own)."""
    if not np.any(differences):
        return 1.0  # identical on every clip
    return signed_rank.wilcoxon_p(differences)
