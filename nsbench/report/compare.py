"""The regression gate: ``--compare PATH`` against stored results.

Per engine present in both, per metric, over all clips and per cell: the
difference of the means, judged against a tolerance in the metric's own
direction. A value worse by more than its tolerance (or no longer there) is a
regression, and the run exits with EXIT_REGRESSION, so a developer's CI can
run nsbench on every commit.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.report.format import Table, fmt, markdown_table
from nsbench.report.schema import FORMAT_VERSION as RESULTS_FORMAT_VERSION
from nsbench.text import plural
from nsbench.plugins.errors import UserError

EXIT_REGRESSION = 3
# Default tolerances by unit: a few hundredths of a dB, half a hundredth of
# STOI, a point of a rate; the rest (MOS scales, counts) 0.01.
TOLERANCE_BY_UNIT = {"dB": 0.05, "0-1": 0.005, "rate": 0.01}
DEFAULT_TOLERANCE = 0.01
# Timing depends on the machine and its load: never a regression.
NOT_COMPARED_UNITS = ("x realtime",)
ALL_CLIPS = "all clips"


def parse_tolerances(texts: Sequence[str]) -> dict[str | None, float]:
    """``0.1`` sets every metric's tolerance, ``stoi=0.01`` one metric's."""
    tolerances: dict[str | None, float] = {}
    for text in texts:
        name, _, value = text.rpartition("=")
        try:
            tolerances[name or None] = float(value)
        except ValueError:
            raise UserError(f"--compare-tolerance: expected 0.1 or METRIC=0.1, got {text!r}") from None
    return tolerances


def load_stored(path: str, dataset: str) -> dict[str, dict[str, Any]]:
    """Engine -> stored result, from an ``<engine>.json``, a folder of them,
    or a results folder holding ``<dataset>/``."""
    where = Path(path)
    if where.is_dir() and (where / dataset).is_dir():
        where = where / dataset
    if where.is_file():
        files = [where]
    elif where.is_dir():
        files = sorted(where.glob("*.json"))
    else:
        raise UserError(f"--compare {path}: no such file or folder")
    stored = {}
    for file in files:
        try:
            result = json.loads(file.read_text())
        except (OSError, ValueError) as error:
            raise UserError(f"--compare {file}: not a results file ({error})") from None
        if isinstance(result, dict) and "engine" in result and "cells" in result:
            check_format(result, file)
            stored[result["engine"]] = result
    if not stored:
        raise UserError(f"--compare {path}: no engine results (<engine>.json) there")
    return stored


def check_format(result: Mapping[str, Any], file: Path) -> None:
    """Results of another format version hold figures that mean other things
    (FUSS means pooled over clips, then over pairs): refused, not compared."""
    version = result.get("format_version", 1)
    if version != RESULTS_FORMAT_VERSION:
        raise UserError(
            f"--compare {file}: results format version {version}, this nsbench writes version "
            f"{RESULTS_FORMAT_VERSION}; their figures are not comparable: run the stored version's "
            "command again with this nsbench to get a baseline"
        )


def tolerance(metric: str, unit: str, tolerances: Mapping[str | None, float]) -> float | None:
    """None: not compared."""
    if unit in NOT_COMPARED_UNITS:
        return None
    return tolerances.get(metric, tolerances.get(None, TOLERANCE_BY_UNIT.get(unit, DEFAULT_TOLERANCE)))


def compare_results(
    results: Sequence[Mapping[str, Any]], stored: Mapping[str, Mapping[str, Any]], tolerances: Mapping[str | None, float]
) -> dict[str, Any]:
    rows = []
    for result in results:
        old = stored.get(result["engine"])
        if old is not None:
            rows += engine_rows(result, old, tolerances)
    return {
        "rows": rows,
        "regressions": sum(row["status"] in ("worse", "missing now") for row in rows),
        "engines_compared": [r["engine"] for r in results if r["engine"] in stored],
        "engines_not_run_now": sorted(set(stored) - {r["engine"] for r in results}),
    }


def engine_rows(result: Mapping[str, Any], old: Mapping[str, Any], tolerances: Mapping[str | None, float]) -> list[dict[str, Any]]:
    engine = result["engine"]
    rows = [failure_row(engine, result, old)]
    scopes = [(ALL_CLIPS, result["metrics"], old["metrics"])]
    new_cells = {cell_name(row): row for row in result["cells"]}
    for row in old["cells"]:
        now = new_cells.get(cell_name(row), {"metrics": {}})
        scopes.append((cell_name(row), now["metrics"], row["metrics"]))
    for cell, now, before in scopes:
        for metric, definition in result["metric_definitions"].items():
            limit = tolerance(metric, definition["unit"], tolerances)
            if limit is not None and metric in before:
                rows.append(value_row(engine, cell, metric, before[metric]["mean"], now.get(metric), limit, definition["higher_is_better"]))
    return rows


def cell_name(row: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in row["cell"].items())


def failure_row(engine: str, result: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    difference = result["failures"] - old["failures"]
    status = "worse" if difference > 0 else "better" if difference < 0 else "same"
    return {"engine": engine, "cell": ALL_CLIPS, "metric": "failures", "stored": old["failures"], "now": result["failures"],
            "difference": difference, "tolerance": 0, "status": status}


def value_row(
    engine: str, cell: str, metric: str, stored: float, now_stats: Mapping[str, Any] | None, limit: float, higher_is_better: bool
) -> dict[str, Any]:
    now = now_stats["mean"] if now_stats else math.nan
    row = {"engine": engine, "cell": cell, "metric": metric, "stored": stored, "now": now, "tolerance": limit}
    if math.isnan(stored) and math.isnan(now):
        return {**row, "difference": 0.0, "status": "same"}
    if math.isnan(now):
        return {**row, "difference": math.nan, "status": "missing now"}
    difference = now - stored if not math.isnan(stored) else math.nan
    gain = difference if higher_is_better else -difference
    status = "better" if gain > limit else "worse" if gain < -limit else "same"
    if math.isnan(stored):
        status = "new"
    return {**row, "difference": difference, "status": status}


def comparison_rows(comparison: Mapping[str, Any]) -> Table:
    """The values beyond tolerance (same ones are counted, not listed)."""
    header = ["engine", "cell", "metric", "stored", "now", "difference", "tolerance", "status"]
    rows = [
        [row["engine"], row["cell"], row["metric"], fmt(row["stored"], 4), fmt(row["now"], 4), fmt(row["difference"], 4),
         str(row["tolerance"]), row["status"].upper() if row["status"] in ("worse", "missing now") else row["status"]]
        for row in comparison["rows"]
        if row["status"] != "same"
    ]
    return header, rows


def comparison_summary(comparison: Mapping[str, Any]) -> str:
    """The verdict and what was compared, in one paragraph (report.md and report.html)."""
    same = sum(row["status"] == "same" for row in comparison["rows"])
    verdict = (
        f"**REGRESSION**: {plural(comparison['regressions'], 'value')} worse than stored beyond tolerance (exit code {EXIT_REGRESSION})."
        if comparison["regressions"]
        else "No regression beyond tolerance."
    )
    return (
        f"{verdict} {plural(len(comparison['rows']), 'value')} compared for {', '.join(comparison['engines_compared']) or 'no engine'}; "
        f"{same} within tolerance. Default tolerances: dB metrics {TOLERANCE_BY_UNIT['dB']}, 0-1 scores {TOLERANCE_BY_UNIT['0-1']}, "
        f"rates {TOLERANCE_BY_UNIT['rate']}, others {DEFAULT_TOLERANCE} (--compare-tolerance); timing is not compared."
    )


def comparison_markdown(comparison: Mapping[str, Any], path: str) -> str:
    lines = [f"## Compared with {path}", comparison_summary(comparison)]
    if comparison["engines_not_run_now"]:
        lines.append(f"Stored but not run now: {', '.join(comparison['engines_not_run_now'])}.")
    header, rows = comparison_rows(comparison)
    if rows:
        lines.append(markdown_table((header, rows)))
    return "\n\n".join(lines)
