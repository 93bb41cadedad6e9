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
from urllib.parse import quote

from nsbench.plugins.records import ClipRecord
from nsbench.plugins.specs import MetricSpec

# (metric name, column title, decimals): the per-cell table, in order.
TABLE_COLUMNS = (
    ("si_sdr_input", "SI-SDR in", 2),
    ("si_sdr", "SI-SDR out", 2),
    ("si_sdri", "SI-SDRi", 2),
    ("stoi", "STOI", 3),
    ("music_attenuation_db", "music att.", 2),
    ("voice_level_db", "voice level", 2),
    ("wer_input", "WER in", 3),
    ("wer", "WER out", 3),
    ("wer_delta", "WER delta", 3),
    ("rtf_cpu", "RTF", 3),
)
# The version of the <engine>.json layout and meaning; --compare refuses
# another. 1 (no key): every cell mean over clips. 2: a metric with a Pooling
# (FUSS SI-SNR, SI-SNRi) has its cell mean and std over items (scored pairs),
# the mean over clips beside it as clip_mean.
RESULTS_FORMAT_VERSION = 2
# Listed first in the tables (the run puts it first too: cli.select_engines).
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
            **({"pooling": metric.pooling.description} if metric.pooling else {}),
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
        "format_version": RESULTS_FORMAT_VERSION,
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
        "alignment": summary["alignment"],
        "flags": summary["flags"],
        "expected_flags": summary["expected_flags"],
        "worst_clips": summary["worst_clips"],
        "typical_clips": summary["typical_clips"],
        "metric_notes": summary.get("metric_notes", {}),
        "metric_definitions": metric_legend(metrics),
        **extra,
    }


def fmt(value: float, decimals: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{decimals}f}"


def fmt_timing(value: float | None) -> str:
    """A real-time factor: never 0.000 for an engine that ran (a passthrough
    takes microseconds), so below a thousandth it says so."""
    if value is None or math.isnan(value):
        return "–"
    return "<0.001" if value < 0.0005 else f"{value:.3f}"


def fmt_value(name: str, value: float, decimals: int) -> str:
    """A table cell: timings as fmt_timing, the rest to ``decimals``."""
    return fmt_timing(value) if name.startswith("rtf") else fmt(value, decimals)


def table_columns(results: Sequence[Mapping[str, Any]], extra: Sequence[str]) -> list[tuple[str, str, int]]:
    """The standard columns the results have, then the dataset's own."""
    shown = [*TABLE_COLUMNS, *((name, name, 2) for name in extra)]
    return [column for column in shown if any(column[0] in r["metrics"] for r in results)]


Table = tuple[list[str], list[list[str]]]  # header, rows: markdown and HTML render the same cells


def markdown_table(table: Table) -> str:
    header, rows = table
    return "\n".join([markdown_row(header), markdown_row(["---"] * len(header)), *(markdown_row(row) for row in rows)])


def cell_table(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str], extra: Sequence[str] = ()) -> str:
    """A markdown table with a row per cell and engine; cell means."""
    return markdown_table(cell_rows(results, cell_keys, extra))


def cell_rows(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str], extra: Sequence[str] = ()) -> Table:
    """Cell means, then the headline metric's bootstrap 95% CI of the mean ("–" for a single clip)."""
    columns = table_columns(results, extra)
    headline = headline_of(results)
    with_ci = any(headline in r["metrics"] for r in results)
    header = [*cell_keys, "engine", "n", *(title for _, title, _ in columns), *([f"{headline} 95% CI"] * with_ci)]
    lines = []
    by_cell: dict[tuple, list[tuple[str, Mapping[str, Any]]]] = {}
    for result in results:
        for row in result["cells"]:
            key = tuple(row["cell"].get(k, "") for k in cell_keys)
            by_cell.setdefault(key, []).append((result["engine"], row))
    for cell, rows in by_cell.items():
        for engine, row in rows:
            failed = f" ({row['failures']} failed)" if row["failures"] else ""
            values = [fmt_value(name, row["metrics"].get(name, {}).get("mean", math.nan), d) for name, _, d in columns]
            ci = [interval(row["metrics"].get(headline, {}).get("mean_ci95"), 2)] * with_ci
            lines.append([*cell, engine, f"{row['clips']}{failed}", *values, *ci])
    return header, lines


def pooled_rows(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str]) -> Table:
    """Metrics pooled over items (types.Pooling), per cell and engine: the
    pooled mean and std, the items counted, the mean over clips beside, and
    the 95% CI that resamples clips. No rows when no metric pools."""
    header = [*cell_keys, "engine", "metric", "mean", "std", "items", "clip mean", "95% CI (resamples clips)"]
    lines = []
    for result in results:
        for row in result["cells"]:
            for name, stats in row["metrics"].items():
                if "pooling" in stats and stats["n"]:
                    over = stats["pooled_over"]
                    lines.append([
                        *(row["cell"].get(k, "") for k in cell_keys), result["engine"], name, fmt(stats["mean"], 2),
                        fmt(stats["std"], 2), f"{stats[over]} {over}".removesuffix("s") if stats[over] == 1 else f"{stats[over]} {over}",
                        fmt(stats["clip_mean"], 2), interval(stats["mean_ci95"], 2),
                    ])
    return header, lines


def pooled_text(results: Sequence[Mapping[str, Any]]) -> str:
    """What the pooled figures are, naming each pooled metric's own rule."""
    rules = {name: d["pooling"] for r in results for name, d in r.get("metric_definitions", {}).items() if d.get("pooling")}
    named = "; ".join(f"{name}: {rule}" for name, rule in rules.items())
    return (
        f"{named}. Mean and std (population) over every item of the cell's clips, each clip weighing by its items; "
        "these means are the ones in the per-cell table. The clip mean counts each clip once. The 95% CI resamples "
        "clips, with their items: the clips are what was sampled. Comparisons with the baselines stay per clip."
    )


def summary_table(results: Sequence[Mapping[str, Any]]) -> str:
    """Per engine: the mean over all clips beside the worst cell."""
    return markdown_table(summary_rows(results))


def headline_of(results: Sequence[Mapping[str, Any]]) -> str:
    return next((r["worst_cell"]["metric"] for r in results if r.get("worst_cell")), "si_sdri")


def headline_higher_is_better(results: Sequence[Mapping[str, Any]], headline: str) -> bool:
    return next((r["metric_definitions"][headline]["higher_is_better"] for r in results if headline in r.get("metric_definitions", {})), True)


def summary_rows(results: Sequence[Mapping[str, Any]]) -> Table:
    headline = headline_of(results)
    higher = headline_higher_is_better(results, headline)
    header = [
        "engine", "clips", "failed", f"{headline} mean", "95% CI", f"{'p5' if higher else 'p95'} (bad tail)", "worst cell", f"{headline} there",
        "STOI", "RTF (CPU)", "RTF (wall)", "alignment", "flags",
    ]
    rows = []
    for result in results:
        worst = result.get("worst_cell") or {}
        worst_name = ", ".join(f"{k}={v}" for k, v in worst.get("cell", {}).items()) or "–"
        stats = result["metrics"].get(headline, {})
        rows.append([
            result["engine"],
            str(result["clips"]),
            str(result["failures"]),
            fmt(stats.get("mean", math.nan), 2),
            interval(stats.get("mean_ci95"), 2),
            bad_tail(stats, higher),
            worst_name,
            fmt(worst.get("mean", math.nan), 2),
            fmt(result["stoi"], 3),
            fmt_timing(result["rtf"]),
            fmt_timing(result["rtf_wall"]),
            result.get("alignment", {}).get("text", "–"),
            flag_cell(result),
        ])
    return without_uncomputed((header, rows), ("STOI",))


def without_uncomputed(table: Table, optional: Sequence[str]) -> Table:
    """The table without the ``optional`` columns no engine has a value in
    (STOI in a --metric wer run): a column of dashes says nothing."""
    header, rows = table
    empty = {i for i, title in enumerate(header) if title in optional and all(row[i] == "–" for row in rows)}
    keep = [i for i in range(len(header)) if i not in empty]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in rows]


def interval(bounds: Sequence[float] | None, decimals: int) -> str:
    if not bounds or any(math.isnan(bound) for bound in bounds):  # a single clip has none
        return "–"
    return f"[{fmt(bounds[0], decimals)}, {fmt(bounds[1], decimals)}]"


def bad_tail(stats: Mapping[str, Any], higher_is_better: bool) -> str:
    """The 5th percentile where higher is better, else the 95th: the bad end."""
    return fmt(stats.get("p5" if higher_is_better else "p95", math.nan), 2)


def flag_cell(result: Mapping[str, Any]) -> str:
    flags = [f"{name} ({len(flag['clips'])})" for name, flag in result.get("flags", {}).items()]
    flags += [f"{name} ({len(flag['clips'])}, expected)" for name, flag in result.get("expected_flags", {}).items()]
    return ", ".join(flags) or "none"


def legend(metrics: Sequence[MetricSpec], extra: Sequence[str] = ()) -> str:
    shown = {name for name, _, _ in TABLE_COLUMNS} | set(extra)
    lines = ["| metric | unit | better | what it ignores |", "| --- | --- | --- | --- |"]
    for metric in metrics:
        if metric.name in shown:
            better = "higher" if metric.higher_is_better else "lower"
            lines.append(markdown_row([f"{metric.name}: {metric.description}", metric.unit, better, metric.ignores]))
    return "\n".join(lines)


def metric_notes_lines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """What metrics said about their values, counted per engine (DNSMOS's looped
    clips, the wer reference); nothing when no metric said anything."""
    lines = []
    for result in results:
        for name, counts in result.get("metric_notes", {}).items():
            told = ", ".join(f"{note} on {clips_count(count)}" for note, count in sorted(counts.items()))
            lines.append(f"- {result['engine']}: {name}: {told}")
    return ["Notes the metrics made on the clips:\n\n" + "\n".join(lines)] if lines else []


def engine_line(result: Mapping[str, Any]) -> str:
    info = result["engine_info"]
    delays = "; ".join(f"{delay} on {count} clips" for delay, count in info["delays_removed"].items()) or "none"
    oracle = " ORACLE: uses the clean reference, an upper bound, not an engine." if info["oracle"] else ""
    notes = "".join(f" {note}." for note in info["notes"])
    return f"- {result['engine']} {info['version']} ({info['origin']}): delay removed {delays}.{notes}{oracle}"


# Clips named per flag in report.md; the JSON names them all.
CLIPS_NAMED = 10


def clips_count(count: int) -> str:
    return f"{count} clip{'s' if count != 1 else ''}"


def clip_list(clips: Sequence[str], named: int | None = CLIPS_NAMED) -> str:
    """"2 clips: a, b"; beyond ``named`` (None: no limit), "and N more"."""
    limit = len(clips) if named is None else named
    more = f" and {len(clips) - limit} more" if len(clips) > limit else ""
    return f"{clips_count(len(clips))}: {', '.join(clips[:limit])}{more}"


def compensation_text(alignment: Mapping[str, Any]) -> str:
    done = alignment.get("compensation")
    if not done:
        return ""
    return (
        f" Constant lag compensated (--align-constant-lag): a first pass found {done['first_pass']['text']} "
        f"(measured on {done['first_pass']['measured_clips']} clips); the harness then removed "
        f"{done['samples']} more samples at {done['sample_rate']} Hz and re-ran the engine: every number here is from that second run."
    )


def checks_lines(result: Mapping[str, Any]) -> list[str]:
    """Alignment and degenerate-output flags of one engine, naming the clips."""
    alignment = result.get("alignment", {})
    lines = [f"- **{result['engine']}**: {alignment.get('text', '–')}.{compensation_text(alignment)}"]
    for name, flag in result.get("flags", {}).items():
        lines.append(f"  - FLAG {name}: {flag['description']}; {clip_list(flag['clips'])}")
    for name, flag in result.get("expected_flags", {}).items():
        lines.append(f"  - {name}, expected ({flag['expected']}): {clips_count(len(flag['clips']))}")
    if not result.get("flags"):
        lines.append("  - no degenerate output")
    return lines


def baselines_text(results: Sequence[Mapping[str, Any]]) -> str:
    """How the comparisons are made, and which baseline did not run (so is not compared with)."""
    ran = {r["engine"] for r in results}
    # Each engine's info names the baselines it is compared with (the specs that say ``baseline``).
    named = dict.fromkeys(name for r in results for name in r.get("engine_info", {}).get("compared_with", ()))
    missing = [name for name in named if name not in ran]
    text = (
        "Paired per clip, Wilcoxon signed-rank at 5%; \"not distinguishable\" where the difference is not significant, "
        "rather than a ranking. A cell of fewer than 6 clips can never be significant. The verdict follows the "
        "Hodges-Lehmann estimate (the median of the Walsh averages of the differences), shown with the test's 95% "
        "interval: exact for up to 50 clips without equal differences, else the normal approximation; it excludes 0 "
        "exactly when p < 0.05, unless a zero difference or two of equal size and opposite sign sit at 0."
    )
    if missing:
        text += f" Not run, so not compared with: {', '.join(missing)} (add {' '.join(f'--engine {name}' for name in missing)})."
    return text


def baseline_rows(results: Sequence[Mapping[str, Any]]) -> Table:
    """Every engine against each baseline, over all clips, with the cells' verdicts counted."""
    header = ["engine", "against", "metric", "paired clips", "mean difference", "Hodges-Lehmann [95% CI]", "p (Wilcoxon)",
              "verdict", "per cell"]
    rows = []
    for result in results:
        for baseline, by_metric in result.get("comparisons", {}).items():
            for metric, comparison in by_metric.items():
                overall = comparison["all"]
                verdicts = [cell["verdict"] for cell in comparison["cells"]]
                counts = ", ".join(
                    f"{v} in {verdicts.count(v)} cell{'s' if verdicts.count(v) != 1 else ''}"
                    for v in ("better", "worse", "not distinguishable") if v in verdicts
                )
                rows.append([
                    result["engine"], baseline, metric, str(overall["n"]), fmt(overall["mean_difference"], 3),
                    hodges_lehmann_text(overall, 3), fmt(overall["p_value"], 3), overall["verdict"], counts or "–",
                ])
    return header, rows


def hodges_lehmann_text(comparison: Mapping[str, Any], decimals: int) -> str:
    """'-0.033 [-0.041, -0.025]': the estimate the verdict follows, with the
    signed-rank test's interval (unbounded below 6 clips), and how the
    interval was found (exact or normal approximation) where it is known."""
    estimate = comparison.get("hodges_lehmann", math.nan)
    bounds = comparison.get("hl_ci95") or [math.nan, math.nan]
    ends = ["–" if b is None or math.isnan(b) else "-inf" if b == -math.inf else "+inf" if b == math.inf else f"{b:.{decimals}f}"
            for b in bounds]
    method = {"exact": " exact", "normal approximation": " normal"}.get(comparison.get("ci_method", ""), "")
    return f"{fmt(estimate, decimals)} [{ends[0]}, {ends[1]}]{method}"


def worst_rows(results: Sequence[Mapping[str, Any]], link: bool = True) -> Table:
    header = ["engine", "rank", "clip", "cell", "metric", "value", "audio"]
    rows = []
    for result in results:
        for rank, pick in enumerate(result.get("worst_clips", []), 1):
            audio = pick.get("audio", "")
            rows.append([
                result["engine"], str(rank), pick["run"], ", ".join(f"{k}={v}" for k, v in pick["labels"].items()),
                pick["metric"], fmt(pick["value"], 2), (f"[listen]({quote(audio)})" if link else audio) if audio else "–",
            ])
    return header, rows


def markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "/") for cell in cells) + " |"


def pooled_section(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str]) -> list[str]:
    table = pooled_rows(results, cell_keys)
    if not table[1]:
        return []
    return ["## Pooled over items", pooled_text(results), markdown_table(table)]


def report_markdown(
    dataset: str,
    results: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    metrics: Sequence[MetricSpec],
    not_run: Mapping[str, str],
    extra_columns: Sequence[str] = (),
    jobs: int = 1,
    sections: Sequence[str] = (),
    top: Sequence[str] = (),
) -> str:
    """``sections``: more markdown (plots, a comparison with stored results) before the legend;
    ``top``: paragraphs after the introduction (each engine's worst input condition)."""
    ordered = sorted(results, key=lambda r: r["engine"] != BASELINE_ENGINE)
    parts = [
        f"# nsbench report: {dataset}",
        "Cell means. SI-SDR is computed without mean removal (torchmetrics zero_mean=False); "
        "si_sdr_zm in the JSON is the zero-mean convention. RTF is CPU time (process and "
        "children) over audio duration, resampling included, model loading excluded; "
        f"{jobs} worker process{'es' if jobs > 1 else ''} shared the machine's cores, which inflates wall-clock RTF.",
        *top,
        "## Per engine: mean and worst cell",
        summary_table(ordered),
        "## Checks: alignment and degenerate output",
        "\n".join(line for result in ordered for line in checks_lines(result)),
        "## Against the baselines",
        baselines_text(ordered),
        markdown_table(baseline_rows(ordered)) if any(r.get("comparisons") for r in ordered) else "No baseline ran.",
        "## Worst clips",
        markdown_table(worst_rows(ordered)),
        "## Per cell",
        cell_table(ordered, cell_keys, extra_columns),
        *pooled_section(ordered, cell_keys),
        *sections,
        "## Metrics",
        legend(metrics, extra_columns),
        *metric_notes_lines(ordered),
    ]
    parts += ["## Engines", *(engine_line(r) for r in ordered)]
    if not_run:
        parts += ["## Engines that did not run", *(f"- {name}: {why}" for name, why in not_run.items())]
    if dataset_attribution(results):
        parts += ["## Audio sources", dataset_attribution(results)]
    return "\n\n".join(parts) + "\n"


def dataset_attribution(results: Sequence[Mapping[str, Any]]) -> str:
    """The credits a dataset asks for (its description's ``attribution``), or ""."""
    descriptions = (r.get("dataset_description") or {} for r in results)
    return next((d["attribution"] for d in descriptions if d.get("attribution")), "")
