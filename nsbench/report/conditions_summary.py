"""The reports' part on input conditions (--condition): a cell per condition,
the largest loss each condition costs, and report.md's table."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from nsbench.plugins.records import ClipRecord
from nsbench.report.format import md
from nsbench.report.record_table import RecordTable, as_table, first_appearances
from nsbench.plugins.specs import MetricSpec
from nsbench.record_terms import LABEL, NONE
from nsbench.report.layout import View


def condition_cells(records: RecordTable | Iterable[ClipRecord], metrics: Sequence[MetricSpec], names: Sequence[str]) -> list[dict[str, Any]]:
    """One row per condition (in the order asked), over every clip under it:
    the engine's gain under each condition; for the passthrough, the input's
    own score under it."""
    from nsbench.report.summary import cell_row

    table = as_table(records)
    labels = table.column("labels")
    by_condition: dict[str, list[int]] = {name: [] for name in names}  # condition -> its labels' numbers
    for number in first_appearances(labels):
        by_condition.setdefault(dict(table.value(number)).get(LABEL, NONE), []).append(number)
    return [cell_row({LABEL: name}, table, np.flatnonzero(np.isin(labels, members)), metrics)
            for name, members in by_condition.items() if members]


def largest_loss(result: Mapping[str, Any], metric: str, higher_is_better: bool) -> dict[str, Any] | None:
    """The condition under which the engine's ``metric`` falls furthest below
    its value under ``none``; None without conditions or values."""
    means = {row["cell"][LABEL]: row["metrics"].get(metric, {}).get("mean", np.nan) for row in result.get("conditions", [])}
    baseline = means.pop(NONE, np.nan)
    candidates = {name: value for name, value in means.items() if np.isfinite(value)}
    if not np.isfinite(baseline) or not candidates:
        return None
    sign = 1 if higher_is_better else -1
    worst = min(candidates, key=lambda name: sign * candidates[name])
    return {"condition": worst, "metric": metric, "value": candidates[worst], "none": baseline,
            "loss": sign * (baseline - candidates[worst])}


def loss_lines(results: Sequence[Mapping[str, Any]], metric: str, higher_is_better: bool, skip: str) -> list[str]:
    """For the report's top section: per engine (not ``skip``, the passthrough,
    whose gain is 0 everywhere), the condition where it loses most (markdown: report.html reads it through plain)."""
    lines = []
    for result in results:
        loss = largest_loss(result, metric, higher_is_better)
        if result["engine"] == skip or loss is None:
            continue
        verb = "loses most" if loss["loss"] > 0 else "loses nothing against none; least gain"
        lines.append(
            f"- **{md(result['engine'])}** {verb} under **{md(loss['condition'])}**: {md(metric)} {loss['value']:.2f} there "
            f"against {loss['none']:.2f} under none ({-loss['loss']:+.2f})"
        )
    return lines


def report_parts(results: Sequence[Mapping[str, Any]], view: View) -> tuple[list[str], list[str]]:
    """report.md's paragraph for its top section (each engine's worst
    condition against none) and its per-condition section."""
    from nsbench.report.format import markdown_table
    from nsbench.report.tables import headline_higher_is_better, headline_of

    ordered = view.reference_first(results)
    headline = headline_of(ordered, view)
    lines = loss_lines(ordered, headline, headline_higher_is_better(ordered, headline), view.reference_engine())
    top = ["**Input conditions**: where each engine loses most against its gain under none "
           "(per-condition means below).\n\n" + "\n".join(lines)] if lines else []
    section = f"## Per condition\n\n{CONDITIONS_TEXT}\n\n" + markdown_table(condition_rows(ordered, view))
    return top, [section]


CONDITIONS_TEXT = ("Means over every clip under each input condition (--condition). The passthrough's row is the input's own "
                   "score under that condition; an engine's gain (SI-SDRi) is over that conditioned input.")


def condition_rows(results: Sequence[Mapping[str, Any]], view: View) -> tuple[list[str], list[list[str]]]:
    """The per-condition table (report.md's and report.html's): cell rows over each engine's condition cells."""
    from nsbench.report.tables import cell_rows

    return cell_rows([{**result, "cells": result.get("conditions", [])} for result in results], (LABEL,), view)
