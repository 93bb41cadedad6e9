"""How far the no-reference panel can be trusted: its agreement with the
intrusive metrics, on a run that computed both.

A no-reference judge here is a metric with ``needs_reference=False`` that
judges the voice (``needs_voice``: DNSMOS, speech-gated levels; the RTFs,
which judge no audio, are left out); an intrusive metric is one with
``needs_reference=True``. For each pair the report gives

* ``engines``: Spearman's rank correlation over engines of their means
  (each engine's mean over the clips where both metrics have a value), with
  the number of engines; oracles left out (they read the clean voice, so
  they are not engines the panel would judge);
* ``clips``: Spearman's correlation over every (engine, clip) pair scored by
  both, oracles left out, with the number of pairs;
* ``disagree``: the engines whose change against the passthrough baseline
  (mean over the clips the three share) has one sign on one metric and the
  other sign on the other.

Correlations are oriented so that +1 means the same ranking, whatever each
metric's direction (a WER, lower is better, against DNSMOS, higher is
better, counts the reverse order as agreement). Fewer than MIN_ENGINES
engines give no rank correlation (n/a, with the count).

Spearman is nsbench.report.correlation's (average ranks, then Pearson's r
of the ranks), without scipy.stats; tests/report/test_agreement.py holds it
to ``scipy.stats.spearmanr``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.report.correlation import average_ranks, spearman  # noqa: F401 (re-exported: the tests hold them to scipy)
from nsbench.report.baselines import clip_values
from nsbench.plugins.records import ClipRecord
from nsbench.report.record_table import RecordTable, as_tables
from nsbench.plugins.specs import MetricSpec

MIN_ENGINES = 3  # two points always rank-correlate by +-1
MIN_CLIPS = 3


def judges_and_intrusive(metrics: Sequence[MetricSpec]) -> tuple[list[MetricSpec], list[MetricSpec]]:
    judges = [m for m in metrics if not m.needs_reference and m.needs_voice]
    intrusive = [m for m in metrics if m.needs_reference]
    return judges, intrusive


def panel_agreement(
    records: Mapping[str, RecordTable | Sequence[ClipRecord]], metrics: Sequence[MetricSpec], oracles: Sequence[str] = (),
    baseline: str | None = None,
) -> dict[str, Any]:
    """The agreement of every no-reference judge with every intrusive metric
    the run computed (the module docstring); {} when it computed no pair.
    ``baseline``: the run's first baseline (None: none ran)."""
    tables = as_tables(records)
    engines = {name: table for name, table in tables.items() if name not in oracles}
    judges, intrusive = judges_and_intrusive(metrics)
    wanted = {m.name for m in [*judges, *intrusive]}
    values = {name: PerClip(table, [m for m in metrics if m.name in wanted]) for name, table in engines.items()}
    pairs = []
    for judge in judges:
        for other in intrusive:
            row = pair_agreement(judge, other, values, baseline if baseline in engines else None)
            if row is not None:
                pairs.append(row)
    if not pairs:
        return {}
    return {"pairs": pairs, "oracles_left_out": [name for name in records if name in oracles],
            "baseline": baseline if baseline in engines else None,
            "definition": "Spearman rank correlation, oriented: +1 = the same ranking whatever each metric's direction"}


class PerClip:
    """An engine's value per clip and metric (the mean over seeds), as arrays
    indexed by clip number; ``common`` gives clips in their ids' sorted order."""

    def __init__(self, table: RecordTable, metrics: Sequence[MetricSpec]):
        self.pools, size = table.pools, len(table.pools.clips)
        self.dense = {m.name: clip_values(table, m.name).dense(size) for m in metrics}

    def values(self, metric: str) -> np.ndarray:
        return self.dense[metric][0]

    def common(self, *others: tuple["PerClip", str]) -> np.ndarray:
        """Clip numbers with a value for every (engine, metric), sorted as their ids."""
        present = np.logical_and.reduce([engine.dense[metric][1] for engine, metric in others])
        clips = np.flatnonzero(present)
        return clips[np.argsort(self.pools.clips.ranks()[clips], kind="stable")]


def pair_agreement(
    judge: MetricSpec, other: MetricSpec, values: Mapping[str, PerClip], baseline: str | None,
) -> dict[str, Any] | None:
    """One judge against one intrusive metric, or None where no clip has both."""
    orient = 1.0 if judge.higher_is_better == other.higher_is_better else -1.0
    means, clip_a, clip_b = {}, [], []
    for engine, by_metric in values.items():
        common = by_metric.common((by_metric, judge.name), (by_metric, other.name))
        if not len(common):
            continue
        a, b = by_metric.values(judge.name)[common], by_metric.values(other.name)[common]
        means[engine] = (float(np.mean(a)), float(np.mean(b)))
        clip_a.append(a)
        clip_b.append(b)
    if not means:
        return None
    clip_a, clip_b = np.concatenate(clip_a), np.concatenate(clip_b)
    by_engine = spearman(*zip(*means.values())) if len(means) >= MIN_ENGINES else math.nan
    by_clip = spearman(clip_a, clip_b) if len(clip_a) >= MIN_CLIPS else math.nan
    return {
        "no_reference": judge.name,
        "intrusive": other.name,
        "engines_rho": orient * by_engine,
        "engines": len(means),
        "clips_rho": orient * by_clip,
        "clip_pairs": len(clip_a),
        "disagree_in_sign": sign_disagreements(judge, other, values, baseline),
    }


def sign_disagreements(
    judge: MetricSpec, other: MetricSpec, values: Mapping[str, PerClip], baseline: str | None,
) -> list[dict[str, Any]]:
    """Engines whose change against the baseline, each oriented so that
    positive is better, is positive on one metric and negative on the other."""
    if baseline is None:
        return []
    found = []
    base = values[baseline]
    for engine, by_metric in values.items():
        if engine == baseline:
            continue
        common = by_metric.common((by_metric, judge.name), (by_metric, other.name), (base, judge.name), (base, other.name))
        if not len(common):
            continue
        changes = []
        for metric in (judge, other):
            change = float(np.mean(by_metric.values(metric.name)[common] - base.values(metric.name)[common]))
            changes.append(change if metric.higher_is_better else -change)
        if changes[0] * changes[1] < 0:
            found.append({"engine": engine, judge.name: changes[0], other.name: changes[1]})
    return found


# --------------------------------------------------------------------------- report


def rho_text(rho: float, count: int, what: str) -> str:
    return f"n/a ({count} {what})" if math.isnan(rho) else f"{rho:+.2f} ({count} {what})"


def disagree_text(row: Mapping[str, Any]) -> str:
    if not row["disagree_in_sign"]:
        return "none"
    return ", ".join(
        f"{item['engine']} ({row['no_reference']} {item[row['no_reference']]:+.3g}, {row['intrusive']} {item[row['intrusive']]:+.3g})"
        for item in row["disagree_in_sign"])


def agreement_rows(agreement: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["no-reference", "intrusive", "rank correlation over engines' means", "per-clip correlation",
              "engines that disagree in sign (change against the baseline)"]
    rows = [[row["no_reference"], row["intrusive"], rho_text(row["engines_rho"], row["engines"], "engines"),
             rho_text(row["clips_rho"], row["clip_pairs"], "clips"), disagree_text(row)]
            for row in agreement["pairs"]]
    return header, rows


def agreement_intro(agreement: Mapping[str, Any]) -> str:
    left_out = agreement["oracles_left_out"]
    baseline = agreement["baseline"] or "no baseline ran"
    return ("How far the no-reference metrics agree with the intrusive ones on this run: Spearman's rank "
            "correlation, oriented so that +1 is the same ranking (engine count beside each figure), over engines' "
            f"means and over every clip; the sign of each engine's change against {baseline}. "
            + (f"Oracles left out: {', '.join(left_out)}." if left_out else "No oracle ran."))


def agreement_markdown(agreement: Mapping[str, Any]) -> str:
    """The report's section, or "" when the run computed no pair."""
    if not agreement:
        return ""
    from nsbench.report.format import markdown_table, md

    return f"{TITLE}\n\n{md(agreement_intro(agreement))}\n\n{markdown_table(agreement_rows(agreement))}"


def agreement_html(agreement: Mapping[str, Any]) -> list[str]:
    """report.html's section, or [] when the run computed no pair."""
    if not agreement:
        return []
    from nsbench.report.html_report import esc, table

    return [f"<h2>{esc(TITLE[3:])}</h2>", f"<p>{esc(agreement_intro(agreement))}</p>", table(agreement_rows(agreement), "agreement")]


TITLE = "## How far the no-reference metrics agree"
