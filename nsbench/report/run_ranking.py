"""A run's ranking: the engines and the passthrough (the original test data)
ranked by URGENT's rule (nsbench.ranking.rank_table, the function a
user's table goes through) on the metrics that ran and declare a category,
each rank with its paired-bootstrap interval and p_best
(nsbench.report.rank_bootstrap). Oracles are shown apart, never ranked.

What ranks: each metric value whose spec has a ``category`` (MetricSpec);
``--rank-category NAME=M1,M2`` replaces those categories with the user's. A
run where no such metric ran ranks by its headline alone. The result is
``ranking.json`` in the results folder, in the form ``rank --json`` writes,
each system with ``overall_interval`` and ``p_best``; ``--compare`` reads the
stored run's ranking.json and says which engine's rank changed.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.plugins.errors import UserError
from nsbench.plugins.specs import MetricSpec, reported_values
from nsbench.report import highlights
from nsbench.report.layout import View
from nsbench.report.baselines import clip_values
from nsbench.report.rank_bootstrap import CONFIDENCE, RESAMPLES, SEED, bootstrap_ranks
from nsbench.ranking import TIES, rank_table
from nsbench.report.record_table import RecordTable

RANKING_FILE = "ranking.json"
HEADLINE_CATEGORY = "headline"  # where no ranked metric ran


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ranking (URGENT's rule: rank per metric, mean rank per category, mean over categories)")
    group.add_argument("--rank-category", action="append", default=[], metavar="NAME=METRIC[,METRIC...]",
                       help="rank on these metrics as category NAME (repeatable); replaces the metrics' own categories")
    group.add_argument("--rank-ties", choices=TIES, default="dense", help='dense ("1223", URGENT\'s; default) or min ("1224")')
    group.add_argument("--rank-decimals", type=int, metavar="N", help="round each mean to N decimals before ranking (URGENT's leaderboard: 2)")


def parse_categories(given: Sequence[str]) -> dict[str, str]:
    """--rank-category's values as metric -> category; a UserError for a malformed one."""
    categories: dict[str, str] = {}
    for text in given:
        name, _, members = text.partition("=")
        metrics = [m.strip() for m in members.split(",") if m.strip()]
        if not name.strip() or not metrics:
            raise UserError(f"--rank-category {text!r}: write NAME=METRIC[,METRIC...], e.g. intrusive=pesq_wb,estoi")
        for metric in metrics:
            if metric in categories:
                raise UserError(f"--rank-category: {metric} is in two categories ({categories[metric]}, {name.strip()})")
            categories[metric] = name.strip()
    return categories


def check_categories(categories: Mapping[str, str], metrics: Sequence[MetricSpec]) -> None:
    """Before the first clip: every metric --rank-category names is one the run computes."""
    known = {spec.name for spec in reported_values(metrics)}
    unknown = [m for m in categories if m not in known]
    if unknown:
        raise UserError(f"--rank-category names {', '.join(unknown)}, not among this run's metrics ({', '.join(sorted(known))})")


def ranked_categories(metrics: Sequence[MetricSpec], chosen: Mapping[str, str], headline: str) -> tuple[dict[str, str], dict[str, bool]]:
    """(metric -> category, metric -> higher is better) of the values that rank."""
    specs = {spec.name: spec for spec in reported_values(metrics)}
    categories = dict(chosen) or {name: spec.category for name, spec in specs.items() if spec.category}
    return categories, {name: specs[name].higher_is_better for name in categories if name in specs} | (
        {headline: specs[headline].higher_is_better} if headline in specs else {})


def run_ranking(results: Sequence[Mapping[str, Any]], records: Mapping[str, RecordTable], metrics: Sequence[MetricSpec],
                headline: str, chosen: Mapping[str, str] | None = None, ties: str = "dense", decimals: int | None = None,
                resamples: int = RESAMPLES, seed: int = SEED, *, view: View) -> dict[str, Any] | None:
    """The ranking.json payload, or None where nothing can rank (fewer than two
    systems, or none scored a ranked metric or the headline)."""
    ordered = [r for r in highlights.ordered(results, view) if r["engine"] in records]
    systems = [r["engine"] for r in ordered if not highlights.is_oracle(r)]
    oracles = [r["engine"] for r in ordered if highlights.is_oracle(r)]
    categories, higher = ranked_categories(metrics, chosen or {}, headline)
    scores, names = score_matrix([records[s] for s in systems], list(categories))
    categories = {m: categories[m] for m in names}
    if not categories:  # fall back to the headline alone
        categories = {headline: HEADLINE_CATEGORY} if headline in higher else {}
        scores, names = score_matrix([records[s] for s in systems], list(categories))
    if len(systems) < 2 or not names:  # one system has nothing to rank against
        return None
    means = {system: {m: mean_of(scores[:, i, k]) for k, m in enumerate(names)} for i, system in enumerate(systems)}
    ranking = rank_table(means, {m: higher[m] for m in names}, categories, ties, decimals)
    kept = [m for members in ranking["settings"]["categories"].values() for m in members]
    category_names = list(ranking["settings"]["categories"])
    columns = [names.index(m) for m in kept]
    found = bootstrap_ranks(scores[:, :, columns], np.array([higher[m] for m in kept]),
                            np.array([category_names.index(categories[m]) for m in kept]), len(category_names),
                            ties, decimals, resamples, seed)
    add_intervals(ranking, systems, found, category_names)
    reference = view.reference_engine()
    for row in ranking["systems"]:
        row["means"] = {m: means[row["system"]][m] for m in kept}
        row["input"] = row["system"] == reference  # the original test data, ranked alongside
    ranking["oracles"] = [{"system": name, "means": oracle_means(records[name], kept)} for name in oracles]
    ranking["settings"].update(resamples=resamples, seed=seed, confidence=CONFIDENCE, clips=int(scores.shape[0]),
                               interval="paired bootstrap over clips, percentile, widened to hold the full-data value")
    return ranking


def score_matrix(tables: Sequence[RecordTable], metrics: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """(clips, systems, metrics) per-clip values (the mean over a clip's
    seeds), NaN where a system has none; the metrics some system has, in order."""
    if not tables:
        return np.zeros((0, 0, 0)), []
    size = len(tables[0].pools.clips)
    kept, columns = [], []
    for metric in metrics:
        column = np.stack([clip_values(table, metric).dense(size)[0] for table in tables], axis=-1)
        if not np.isnan(column).all():
            kept.append(metric)
            columns.append(column)
    if not kept:
        return np.zeros((size, len(tables), 0)), []
    scores = np.stack(columns, axis=-1)
    return scores[~np.isnan(scores).all(axis=(1, 2))], kept  # clips no system scored hold no information


def mean_of(values: np.ndarray) -> float:
    present = values[~np.isnan(values)]
    return float(present.mean()) if present.size else math.nan


def oracle_means(table: RecordTable, metrics: Sequence[str]) -> dict[str, float]:
    size = len(table.pools.clips)
    return {m: mean_of(clip_values(table, m).dense(size)[0]) for m in metrics}


def add_intervals(ranking: dict[str, Any], systems: Sequence[str], found: Any, category_names: Sequence[str]) -> None:
    for row in ranking["systems"]:
        i = systems.index(row["system"])
        row["overall_interval"] = [int(v) for v in found.overall[i]]
        row["category_intervals"] = {name: [float(v) for v in found.categories[i, c]] for c, name in enumerate(category_names)}
        row["p_best"] = float(found.p_best[i])


# ------------------------------------------------------------------ --compare


def stored_ranking(compared: str | None) -> dict[str, Any] | None:
    """The stored run's ranking.json (a folder, or the folder of an <engine>.json), read as
    data; None where there is none or it is not one."""
    if not compared:
        return None
    folder = Path(compared)
    path = (folder if folder.is_dir() else folder.parent) / RANKING_FILE
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    systems = stored.get("systems") if isinstance(stored, dict) else None
    if not isinstance(systems, list):
        return None
    return {"systems": [row for row in systems if isinstance(row, dict) and isinstance(row.get("system"), str)
                        and isinstance(row.get("overall_rank"), int)],
            "settings": stored["settings"] if isinstance(stored.get("settings"), dict) else {}}


def rank_changes(ranking: Mapping[str, Any], stored: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Engines whose overall rank differs from the stored run's (same rule only)."""
    if not stored:
        return []
    same_rule = all(stored["settings"].get(key) == ranking["settings"].get(key) for key in ("ties", "decimals", "categories"))
    before = {row["system"]: row for row in stored["systems"]}
    changes = []
    for row in ranking["systems"]:
        earlier = before.get(row["system"])
        if earlier and earlier["overall_rank"] != row["overall_rank"]:
            changes.append({"system": row["system"], "before": earlier["overall_rank"], "now": row["overall_rank"],
                            "interval": row["overall_interval"], "same_rule": same_rule})
    return changes


def change_lines(changes: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for change in changes:
        low, high = change["interval"]
        within = " (within its interval: not a clear change)" if low <= change["before"] <= high else ""
        rule = "" if change["same_rule"] else " (the stored ranking used other metrics or settings)"
        lines.append(f"rank: {change['system']} {change['before']} -> {change['now']}{within}{rule}")
    return lines
