"""Result files and tables: ``<engine>.json``, ``<engine>.clips.jsonl``, ``report.md``.

JSON is written to a temporary name and renamed, so a file is never half-written.
The markdown table and the console table are the same text, built from the
same summaries the JSON holds, so the numbers cannot disagree.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.types import ClipRecord, MetricSpec

# (metric name, column title, decimals): the per-cell table, in order.
TABLE_COLUMNS = (
    ("si_sdr_input", "SI-SDR in", 2),
    ("si_sdr", "SI-SDR out", 2),
    ("si_sdri", "SI-SDRi", 2),
    ("stoi", "STOI", 3),
    ("music_attenuation_db", "music att.", 2),
    ("voice_level_db", "voice level", 2),
    ("rtf_cpu", "RTF", 3),
)
BASELINE_ENGINE = "passthrough"


def file_stem(engine: str) -> str:
    """A file name for an engine name such as ``command:tool --in {input}``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", engine).strip("_") or "engine"


def write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(payload, indent=2, allow_nan=True) + "\n")
    os.replace(temporary, path)


class ClipLog:
    """``<engine>.clips.jsonl``, one line per clip, flushed as each arrives so
    an interrupted run keeps every clip already scored."""

    def __init__(self, path: Path):
        self.path = path
        self._file = None  # opened with the first record: an engine that never starts leaves no file

    def add(self, record: ClipRecord) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w")
        self._file.write(json.dumps(record.to_json()) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def metric_legend(metrics: Sequence[MetricSpec]) -> dict[str, dict[str, Any]]:
    return {
        metric.name: {
            "unit": metric.unit,
            "higher_is_better": metric.higher_is_better,
            "description": metric.description,
            "ignores": metric.ignores,
        }
        for metric in metrics
    }


def engine_result(
    engine: str, dataset: str, summary: Mapping[str, Any], metrics: Sequence[MetricSpec], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``<engine>.json`` payload: Picovoice's keys (``stoi``, ``rtf``) first."""
    stoi = summary["metrics"].get("stoi", {}).get("mean", math.nan)
    return {
        "engine": engine,
        "dataset": dataset,
        "stoi": stoi,
        "rtf": summary["rtf"],
        "rtf_wall": summary["rtf_wall"],
        "clips": summary["clips"],
        "runs": summary["runs"],
        "failures": summary["failures"],
        "failed_clips": summary["failed_clips"],
        "metrics": summary["metrics"],
        "cells": summary["cells"],
        "worst_cell": summary["worst_cell"],
        "metric_definitions": metric_legend(metrics),
        **extra,
    }


def fmt(value: float, decimals: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{decimals}f}"


def table_columns(results: Sequence[Mapping[str, Any]], extra: Sequence[str]) -> list[tuple[str, str, int]]:
    """The standard columns the results have, then the dataset's own."""
    shown = [*TABLE_COLUMNS, *((name, name, 2) for name in extra)]
    return [column for column in shown if any(column[0] in r["metrics"] for r in results)]


def cell_table(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str], extra: Sequence[str] = ()) -> str:
    """A markdown table with a row per cell and engine; cell means."""
    columns = table_columns(results, extra)
    header = [*cell_keys, "engine", "n", *(title for _, title, _ in columns)]
    lines = [markdown_row(header), markdown_row(["---"] * len(header))]
    by_cell: dict[tuple, list[tuple[str, Mapping[str, Any]]]] = {}
    for result in results:
        for row in result["cells"]:
            key = tuple(row["cell"].get(k, "") for k in cell_keys)
            by_cell.setdefault(key, []).append((result["engine"], row))
    for cell, rows in by_cell.items():
        for engine, row in rows:
            failed = f" ({row['failures']} failed)" if row["failures"] else ""
            values = [fmt(row["metrics"].get(name, {}).get("mean", math.nan), d) for name, _, d in columns]
            lines.append(markdown_row([*cell, engine, f"{row['clips']}{failed}", *values]))
    return "\n".join(lines)


def summary_table(results: Sequence[Mapping[str, Any]]) -> str:
    """Per engine: the mean over all clips beside the worst cell."""
    headline = next((r["worst_cell"]["metric"] for r in results if r.get("worst_cell")), "si_sdri")
    header = ["engine", "clips", "failed", f"{headline} mean", "worst cell", f"{headline} there", "STOI", "RTF (CPU)", "RTF (wall)"]
    lines = [markdown_row(header), markdown_row(["---"] * len(header))]
    for result in results:
        worst = result.get("worst_cell") or {}
        worst_name = ", ".join(f"{k}={v}" for k, v in worst.get("cell", {}).items()) or "–"
        lines.append(
            markdown_row(
                [
                    result["engine"],
                    str(result["clips"]),
                    str(result["failures"]),
                    fmt(result["metrics"].get(headline, {}).get("mean", math.nan), 2),
                    worst_name,
                    fmt(worst.get("mean", math.nan), 2),
                    fmt(result["stoi"], 3),
                    fmt(result["rtf"], 3),
                    fmt(result["rtf_wall"], 3),
                ]
            )
        )
    return "\n".join(lines)


def legend(metrics: Sequence[MetricSpec], extra: Sequence[str] = ()) -> str:
    shown = {name for name, _, _ in TABLE_COLUMNS} | set(extra)
    lines = ["| metric | unit | better | what it ignores |", "| --- | --- | --- | --- |"]
    for metric in metrics:
        if metric.name in shown:
            better = "higher" if metric.higher_is_better else "lower"
            lines.append(markdown_row([f"{metric.name}: {metric.description}", metric.unit, better, metric.ignores]))
    return "\n".join(lines)


def engine_line(result: Mapping[str, Any]) -> str:
    info = result["engine_info"]
    delays = "; ".join(f"{delay} on {count} clips" for delay, count in info["delays_removed"].items()) or "none"
    oracle = " ORACLE: uses the clean reference, an upper bound, not an engine." if info["oracle"] else ""
    notes = "".join(f" {note}." for note in info["notes"])
    return f"- {result['engine']} {info['version']} ({info['origin']}): delay removed {delays}.{notes}{oracle}"


def markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "/") for cell in cells) + " |"


def report_markdown(
    dataset: str,
    results: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    metrics: Sequence[MetricSpec],
    not_run: Mapping[str, str],
    extra_columns: Sequence[str] = (),
    jobs: int = 1,
) -> str:
    ordered = sorted(results, key=lambda r: r["engine"] != BASELINE_ENGINE)
    parts = [
        f"# nsbench report: {dataset}",
        "Cell means. SI-SDR is computed without mean removal (torchmetrics zero_mean=False); "
        "si_sdr_zm in the JSON is the zero-mean convention. RTF is CPU time (process and "
        "children) over audio duration, resampling included, model loading excluded; "
        f"{jobs} worker process{'es' if jobs > 1 else ''} shared the machine's cores, which inflates wall-clock RTF.",
        "## Per engine: mean and worst cell",
        summary_table(ordered),
        "## Per cell",
        cell_table(ordered, cell_keys, extra_columns),
        "## Metrics",
        legend(metrics, extra_columns),
    ]
    parts += ["## Engines", *(engine_line(r) for r in ordered)]
    if not_run:
        parts += ["## Engines that did not run", *(f"- {name}: {why}" for name, why in not_run.items())]
    return "\n\n".join(parts) + "\n"
