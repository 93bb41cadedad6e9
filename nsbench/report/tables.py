"""report.md's tables, as cells: markdown and HTML render the same ones.

Each table is a ``Table`` (header, rows) built from the results' payloads
(nsbench.report.model); its columns and headline come from the specs
(nsbench.report.layout). Cells are plain text: markdown_table escapes them
for report.md, report.html for itself (a link nsbench makes is ``Markdown``).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from nsbench.report.layout import View
from nsbench.report.format import Markdown, Table, fmt, fmt_timing, fmt_value, interval, markdown_table  # noqa: F401 (fmt_timing: re-exported)


def table_columns(results: Sequence[Mapping[str, Any]], extra: Sequence[str], view: View) -> list[tuple[str, str, int]]:
    """The standard columns the results have, then the dataset's own."""
    shown = [*view.table_columns(), *((name, name, 2) for name in extra)]
    return [column for column in shown if any(column[0] in r["metrics"] for r in results)]


def cell_table(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str], view: View, extra: Sequence[str] = ()) -> str:
    """A markdown table with a row per cell and engine; cell means."""
    return markdown_table(cell_rows(results, cell_keys, view, extra))


def cell_rows(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str], view: View, extra: Sequence[str] = ()) -> Table:
    """Cell means, then the headline metric's bootstrap 95% CI of the mean ("–" for a single clip)."""
    columns = table_columns(results, extra, view)
    headline = headline_of(results, view)
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
                    over = stats.get("pooled_over", "items")
                    items = stats.get(over, "?")  # the count's key is named by pooled_over
                    lines.append([
                        *(row["cell"].get(k, "") for k in cell_keys), result["engine"], name, fmt(stats["mean"], 2),
                        fmt(stats.get("std", math.nan), 2), f"{items} {over}".removesuffix("s") if items == 1 else f"{items} {over}",
                        fmt(stats.get("clip_mean", math.nan), 2), interval(stats.get("mean_ci95"), 2),
                    ])
    return header, lines


def summary_table(results: Sequence[Mapping[str, Any]], view: View) -> str:
    """Per engine: the mean over all clips beside the worst cell."""
    return markdown_table(summary_rows(results, view))


def headline_of(results: Sequence[Mapping[str, Any]], view: View) -> str:
    return next((r["worst_cell"]["metric"] for r in results if r.get("worst_cell")), view.headline(""))


def headline_higher_is_better(results: Sequence[Mapping[str, Any]], headline: str) -> bool:
    return next((r["metric_definitions"][headline]["higher_is_better"] for r in results if headline in r.get("metric_definitions", {})), True)


def summary_rows(results: Sequence[Mapping[str, Any]], view: View) -> Table:
    headline = headline_of(results, view)
    higher = headline_higher_is_better(results, headline)
    beside = beside_headline_columns(view)
    titles = tuple(title for title, _ in beside.values())
    header = [
        "engine", "clips", "failed", f"{headline} mean", "95% CI", f"{'p5' if higher else 'p95'} (bad tail)", "worst cell", f"{headline} there",
        *titles, "RTF (CPU)", "RTF (wall)", "alignment", "flags",
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
            *(fmt(result.get(name, math.nan), decimals) for name, (_, decimals) in beside.items()),
            fmt_timing(result["rtf"]),
            fmt_timing(result["rtf_wall"]),
            result.get("alignment", {}).get("text", "–"),
            flag_cell(result),
        ])
    return without_uncomputed((header, rows), titles)



def beside_headline_columns(view: View) -> dict[str, tuple[str, int]]:
    """The values shown beside the headline (nsbench.report.layout): name -> (title, decimals)."""
    columns = {name: (title, decimals) for name, title, decimals in view.table_columns()}
    return {name: columns.get(name, (name, 2)) for name in view.beside_headline}


def without_uncomputed(table: Table, optional: Sequence[str]) -> Table:
    """The table without the ``optional`` columns no engine has a value in
    (STOI in a --metric wer run): a column of dashes says nothing."""
    header, rows = table
    empty = {i for i, title in enumerate(header) if title in optional and all(row[i] == "–" for row in rows)}
    keep = [i for i in range(len(header)) if i not in empty]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in rows]


def bad_tail(stats: Mapping[str, Any], higher_is_better: bool) -> str:
    """The 5th percentile where higher is better, else the 95th: the bad end."""
    return fmt(stats.get("p5" if higher_is_better else "p95", math.nan), 2)


def flag_cell(result: Mapping[str, Any]) -> str:
    flags = [f"{name} ({len(flag['clips'])})" for name, flag in result.get("flags", {}).items()]
    flags += [f"{name} ({len(flag['clips'])}, expected)" for name, flag in result.get("expected_flags", {}).items()]
    return ", ".join(flags) or "none"


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
    signed-rank test's interval (none below 6 clips, said in words), and how the
    interval was found (exact or normal approximation) where it is known."""
    estimate = comparison.get("hodges_lehmann", math.nan)
    bounds = comparison.get("hl_ci95") or [math.nan, math.nan]
    if all(b is not None and math.isinf(b) for b in bounds):  # the signed-rank test rejects nothing below 6 clips
        return f"{fmt(estimate, decimals)} [too few clips for an interval]"
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
                pick["metric"], fmt(pick["value"], 2), (Markdown(f"[listen]({quote(audio)})") if link else audio) if audio else "–",
            ])
    return header, rows
