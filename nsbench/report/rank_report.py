"""The ranking as the reports open with it: one table (rank [interval],
engine, p_best, the category scores, the headline with its CI, RTF, flags),
the same rows in the terminal, report.md and report.html, then a forest plot
of the headline per engine with its interval (``forest.png``).

Rows in rank order; oracles after them, never ranked; engines from an
earlier run that this run's ranking could not resample, after those.
"""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from nsbench.report import highlights
from nsbench.report.format import Table, fmt, fmt_timing, interval, markdown_table, md
from nsbench.report.run_ranking import change_lines
from nsbench.report.layout import View
from nsbench.report.tables import headline_of
from nsbench.text import plural

FOREST_FILE = "forest.png"
ORACLE_RANK = "oracle"  # what the rank column says of an upper bound
def ordered(results: Sequence[Mapping[str, Any]], view: View, ranking: Mapping[str, Any] | None) -> list[tuple[Mapping[str, Any], dict | None]]:
    """(result, its ranking row or None): ranked systems by rank, then oracles, then the rest, each in run order."""
    by_name = {r["engine"]: r for r in highlights.ordered(results, view)}
    rows = [(by_name[row["system"]], row) for row in (ranking or {}).get("systems", []) if row["system"] in by_name]
    placed = {result["engine"] for result, _ in rows}
    rest = [r for r in by_name.values() if r["engine"] not in placed]
    return rows + [(r, None) for r in rest if highlights.is_oracle(r)] + [(r, None) for r in rest if not highlights.is_oracle(r)]


def rank_text(row: Mapping[str, Any] | None, result: Mapping[str, Any]) -> str:
    if row is None:
        return ORACLE_RANK if highlights.is_oracle(result) else "not ranked"
    low, high = row["overall_interval"]
    return f"{row['overall_rank']} [{low}, {high}]"


def category_names(ranking: Mapping[str, Any] | None) -> list[str]:
    return list((ranking or {}).get("settings", {}).get("categories", {}))


def rows_of(results: Sequence[Mapping[str, Any]], view: View, ranking: Mapping[str, Any] | None) -> Table:
    """The table's header and rows, as text cells (the three renderings share them)."""
    headline = headline_of(results, view)
    names = category_names(ranking)
    header = ["rank [95%]", "engine", "p(best)", *names, f"{headline} [95% CI]", "RTF", "flagged"]
    rows = []
    for result, row in ordered(results, view, ranking):
        stats = result["metrics"].get(headline, {})
        flagged = highlights.flagged_clips(result)
        rows.append([
            rank_text(row, result), result["engine"] + (" (input)" if row and row.get("input") else ""),
            f"{row['p_best']:.2f}" if row else "–",
            *(f"{row['category_ranks'][n]:.2f} {interval(row['category_intervals'][n], 2)}" if row else "–" for n in names),
            f"{fmt(stats.get('mean', math.nan), 2)} {interval(stats.get('mean_ci95'), 2)}",
            fmt_timing(result.get("rtf", math.nan)), plural(flagged, "clip") if flagged else "–",
        ])
    return header, rows


def rule_text(ranking: Mapping[str, Any] | None) -> str:
    """One sentence: what ranks, by which rule, how sure."""
    if not ranking:
        return "No ranking: no engine scored a ranked metric or the headline."
    settings = ranking["settings"]
    groups = "; ".join(f"{name}: {', '.join(members)}" for name, members in settings["categories"].items())
    rounding = f", means rounded to {settings['decimals']} decimals" if settings.get("decimals") is not None else ""
    return (f"Ranked by URGENT's rule: each metric's mean ranked in its direction ({settings['ties']} ties{rounding}), "
            f"the mean rank in each category ({groups}), the mean over categories; the passthrough (the input) ranks "
            f"alongside, oracles never. In brackets: a 95% interval of each rank over {settings['resamples']:,} paired "
            f"bootstrap resamples of the {settings['clips']:,} clips; p(best): how often the engine ranks first (ties shared).")


# ------------------------------------------------------------------ terminal


def headline_sentence(dataset: str, results: Sequence[Mapping[str, Any]], view: View, ranking: Mapping[str, Any] | None) -> str:
    clips = max((r["clips"] for r in results), default=0)
    headline = headline_of(results, view)
    measure = (f"{headline} ({highlights.headline_unit(results, headline)}, {highlights.headline_direction(results, view)})")
    if not ranking:
        return f"nsbench {dataset}: {clips} clips; {measure} ranks the engines: mean [95% CI] over clips"
    groups = "; ".join(f"{name} ({', '.join(members)})" for name, members in ranking["settings"]["categories"].items())
    return (f"nsbench {dataset}: {clips} clips; ranked by URGENT's rule on {groups}: rank [95% interval over "
            f"{ranking['settings']['resamples']:,} paired resamples]; {measure}: mean [95% CI] over clips")


# ------------------------------------------------------------------ report.md and report.html


def markdown_section(results: Sequence[Mapping[str, Any]], view: View, ranking: Mapping[str, Any] | None, forest: str = "") -> str:
    parts = ["## Ranking", md(rule_text(ranking)), markdown_table(rows_of(results, view, ranking)), *change_texts(ranking)]
    if forest:
        parts.append(f"![{md(headline_of(results, view))} per engine: mean and 95% CI]({quote(forest)})")
    return "\n\n".join(parts)


def html_section(results: Sequence[Mapping[str, Any]], view: View, ranking: Mapping[str, Any] | None, forest: Path | None = None) -> str:
    header, rows = rows_of(results, view, ranking)
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    parts = [f'<section id="ranking"><h2>Ranking</h2><p>{html.escape(rule_text(ranking))}</p>',
             f'<table id="ranked" class="sortable"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>',
             *(f"<p>{html.escape(text)}</p>" for text in change_texts(ranking))]
    if forest is not None and forest.is_file():
        data = base64.b64encode(forest.read_bytes()).decode("ascii")
        caption = f"{headline_of(results, view)} per engine, in rank order: mean and 95% CI over clips"
        parts.append(f'<figure class="plot" id="forest"><figcaption>{html.escape(caption)}</figcaption>'
                     f'<img alt="{html.escape(caption)}" src="data:image/png;base64,{data}"></figure>')
    return "".join(parts) + "</section>"


def change_texts(ranking: Mapping[str, Any] | None) -> list[str]:
    lines = change_lines((ranking or {}).get("changes", []))
    return [f"Against the stored run: {'; '.join(lines)}."] if lines else []


# ------------------------------------------------------------------ the forest plot


def write_forest(folder: Path, results: Sequence[Mapping[str, Any]], view: View, ranking: Mapping[str, Any] | None) -> str:
    """forest.png: the headline's mean and 95% CI per engine, in rank order; its file name, or "" if nothing to draw."""
    from nsbench.report.plots import colour_of, figure, save

    headline = headline_of(results, view)
    drawn = [(result, row) for result, row in ordered(results, view, ranking)
             if not math.isnan(result["metrics"].get(headline, {}).get("mean", math.nan))]
    if not drawn:
        return ""
    fig = figure(width=7.0, height=1.2 + 0.32 * len(drawn))
    axes = fig.add_subplot()
    for position, (result, row) in enumerate(drawn):
        stats = result["metrics"][headline]
        low, high = stats.get("mean_ci95") or [math.nan, math.nan]
        if math.isnan(low) or math.isnan(high):
            low = high = stats["mean"]
        axes.errorbar([stats["mean"]], [position], xerr=[[stats["mean"] - low], [high - stats["mean"]]], fmt="o",
                      capsize=3, color=colour_of(position), markersize=5)
    axes.set_yticks(range(len(drawn)), [f"{rank_text(row, result)}  {result['engine']}" for result, row in drawn])
    axes.invert_yaxis()
    reference = next((result["metrics"][headline]["mean"] for result, row in drawn if row and row.get("input")), None)
    if reference is not None:
        axes.axvline(reference, color="grey", linewidth=0.8, linestyle="--")
    axes.set(xlabel=f"{headline}: mean and 95% CI over clips" + (" (dashed: the input)" if reference is not None else ""),
             title=f"{headline} per engine, in rank order")
    axes.grid(alpha=0.3, axis="x")
    return save(folder / FOREST_FILE, fig)
