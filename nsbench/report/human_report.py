"""The listeners' agreement (nsbench.report.human_agreement) in the terminal
summary, report.md and report.html, with a scatter per metric and dimension
and the P.1401 mapping drawn through it."""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import quote

import numpy as np

from nsbench.report.format import number
from nsbench.report.human_agreement import CONDITION, FILE, median_lag_text
from nsbench.text import fit_rows

TITLE = "Agreement with the listeners (ITU-T P.1401)"
FIGURE = "human-agreement-{cell}-{level}.png"


def with_interval(row: Mapping[str, Any], name: str) -> str:
    low, high = row["intervals"][name]
    return number(row[name]) + ("" if math.isnan(low) else f" [{number(low)}, {number(high)}]")


def without_sources(row: Mapping[str, Any]) -> str:
    rest = row.get("without_sources")
    return "–" if not rest else f"{number(rest['spearman'])} (n={rest['n']})"


def ordered(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Per cell, dimension and level, the metrics by |Spearman|, best first."""
    rank = lambda row: -abs(row["spearman"]) if math.isfinite(row["spearman"]) else 2.0
    return sorted(rows, key=lambda row: (row["cell"], row["dimension"], row["level"] != FILE, rank(row), row["metric"]))


def table(payload: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["cell", "metric", "dimension", "level", "n", "r", "r mapped", "rho [95% CI]", "tau [95% CI]",
            "RMSE", "RMSE*", "outliers", "rho without sources"]
    rows = [[row["cell"], row["metric"], row["dimension"], row["level"], str(row["n"]), with_interval(row, "pearson"),
             number(row["pearson_mapped"]), with_interval(row, "spearman"), with_interval(row, "kendall"), number(row["rmse"]),
             number(row["rmse_star"]), number(row["outlier_ratio"]), without_sources(row)] for row in ordered(payload["human"])]
    return head, rows


def intro(payload: Mapping[str, Any]) -> list[str]:
    """What the table is, how many items, the alignment and what was not rated: one paragraph each."""
    items = "; ".join(f"{cell}: {found['files']} files, {found['conditions']} conditions"
                      + (f", {found['sources']} of them unprocessed sources" if found["sources"] else "")
                      for cell, found in payload["items"].items())
    lines = [f"Each metric on the rated files (the {payload['rated_engine']} engine's outputs: its input, as rated) against "
             f"each rated dimension ({items}), at file level and at condition level (the metric's mean over a "
             "condition's files against the condition's rating). r: Pearson, raw; r mapped: after P.1401's monotonic "
             "third-order mapping; rho: Spearman; tau: Kendall tau-b, each with its bootstrap 95% interval; RMSE and "
             "RMSE* (epsilon-insensitive, the ratings' 95% intervals) of the mapped metric over N - 4; outliers: share "
             "beyond 2 std / sqrt(votes); rho without sources: Spearman without the unprocessed files, which every "
             "metric and every listener put at the top."]
    for cell, alignment in payload["alignment"].items():
        if alignment["lags"] or alignment["unaligned"]:
            lines.append(f"{cell}: the references were aligned to the rated files before the intrusive metrics "
                         f"(the files lag them): {median_lag_text(alignment)}.")
    if payload["not_rated"]:
        lines.append(f"Not rated: {', '.join(payload['not_rated'])} ran on the rated files, but nobody rated their "
                     "outputs; their scores are in the tables above, outside this agreement.")
    return lines


def terminal_lines(payload: Mapping[str, Any]) -> list[str]:
    """The summary's agreement table: file level, each metric's Spearman at condition level beside it."""
    if not payload:
        return []
    by_condition = {(r["cell"], r["metric"], r["dimension"]): r for r in payload["human"] if r["level"] == CONDITION}
    head = ["cell", "metric", "dim", "n", "r", "r map", "rho [95% CI]", "tau", "RMSE*", "outl.", "| cond. n", "rho", "r map"]
    rows = [head]
    file_rows = [r for r in payload["human"] if r["level"] == FILE]
    for row in ordered([r for r in file_rows if math.isfinite(r["spearman"])]):
        cond = by_condition.get((row["cell"], row["metric"], row["dimension"]))
        rows.append([row["cell"], row["metric"], row["dimension"], str(row["n"]), number(row["pearson"]), number(row["pearson_mapped"]),
                     with_interval(row, "spearman"), number(row["kendall"]), number(row["rmse_star"]), number(row["outlier_ratio"]),
                     f"| {cond['n']}" if cond else "|", number(cond["spearman"]) if cond else "", number(cond["pearson_mapped"]) if cond else ""])
    lines = ["agreement with the listeners (ITU-T P.1401; r Pearson, rho Spearman, tau Kendall tau-b; "
             f"{Path(payload.get('file', 'human-agreement.json')).name} has every figure):"]
    lines += fit_rows(rows, None)[0].splitlines()
    constant = sorted({r["metric"] for r in file_rows if not math.isfinite(r["spearman"])})
    if constant:
        lines.append(f"no correlation (the same value on every rated file): {', '.join(constant)}")
    lines += [f"{cell}: references aligned: {median_lag_text(a)}" for cell, a in payload["alignment"].items()
              if a["lags"] or a["unaligned"]]
    if payload["not_rated"]:
        lines.append(f"not rated (outputs nobody rated, left out of the agreement): {', '.join(payload['not_rated'])}")
    return lines


def markdown(payload: Mapping[str, Any], figures: Sequence[str] = ()) -> str:
    if not payload:
        return ""
    from nsbench.report.format import markdown_table, md

    parts = [f"## {TITLE}", *(md(line) for line in intro(payload)), markdown_table(table(payload))]
    parts += [f"![{name}]({quote(name)})" for name in figures]
    return "\n\n".join(parts)


def html_section(payload: Mapping[str, Any], figures: Sequence[str] = ()) -> list[str]:
    if not payload:
        return []
    from nsbench.report.html_report import table as html_table

    images = [f'<figure><img src="{quote(name)}" alt="{html.escape(name)}"><figcaption>{html.escape(caption(name))}'
              "</figcaption></figure>" for name in figures]
    return [f'<h2 id="human-agreement">{html.escape(TITLE)}</h2>', *(f"<p>{html.escape(line)}</p>" for line in intro(payload)),
            html_table(table(payload), "human-agreement"), *images]


def caption(name: str) -> str:
    return (f"{name.removesuffix('.png')}: each metric (rows) against each rated dimension (columns), one point per item, "
            "the P.1401 monotonic mapping drawn as a line")


# ----------------------------------------------------------------- the scatters


def write_figures(folder: Path, payload: Mapping[str, Any]) -> list[str]:
    """One PNG per cell and level: a grid of scatters, metrics down, dimensions across."""
    from nsbench.report.plots import save

    names = []
    for cell in dict.fromkeys(row["cell"] for row in payload["human"]):
        for level in (FILE, CONDITION):
            rows = [row for row in payload["human"] if row["cell"] == cell and row["level"] == level]
            if rows:
                name = FIGURE.format(cell=cell.replace("=", "-"), level=level)
                names.append(save(folder / name, grid_figure(rows)))
    return names


def grid_figure(rows: Sequence[Mapping[str, Any]]):
    from nsbench.report.plots import figure

    metrics = list(dict.fromkeys(row["metric"] for row in rows))
    dims = list(dict.fromkeys(row["dimension"] for row in rows))
    fig = figure(width=3.0 * len(dims), height=2.4 * len(metrics))
    for row in rows:
        axes = fig.add_subplot(len(metrics), len(dims), metrics.index(row["metric"]) * len(dims) + dims.index(row["dimension"]) + 1)
        axes.scatter(row["points"]["metric"], row["points"]["rating"], s=10, alpha=0.7)
        if row["mapping"]:
            low, high = row["mapping"]["x_range"]
            grid = np.linspace(low, high, 100)
            axes.plot(grid, np.polynomial.polynomial.polyval(grid, row["mapping"]["coefficients"]), color="C1")
        axes.set_title(f"{row['metric']} / {row['dimension']}: rho {number(row['spearman'])}", fontsize="small")
        axes.tick_params(labelsize="x-small")
    fig.tight_layout()
    return fig
