"""``report.html``: the report to read, sort and listen to.

One page: what to look at first (engines better than the baseline with
significance, flags, each engine's worst cell), a heatmap of the headline
metric per engine and cell, the listening grid (nsbench.report.listening_grid: every
engine on the same clips, with spectrograms), then the tables (the same rows as
report.md, from the same functions), sortable by a click on a header and
filterable with a box, the plots and the legend.

Self-contained: the script and style are written into the page, the plots
embedded as data URIs, the audio and spectrograms are files in ``audio/``
beside it. Nothing is fetched from the network, so a copied folder works.
"""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from nsbench.report import highlights
from nsbench.report.layout import View
from nsbench.report.format import Table, clip_list, clips_count, fmt, plain
from nsbench.report.html_assets import SCRIPT, STYLE
from nsbench.report import reference_use
from nsbench.report.listening_grid import Grid, GridOutput, LISTEN_SECONDS
from nsbench.report.markdown import baselines_text, compensation_text, dataset_attribution, pooled_text
from nsbench.report.tables import baseline_rows, cell_rows, headline_of, hodges_lehmann_text, pooled_rows, summary_rows


def html_page(
    folder: Path,
    dataset: str,
    results: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    extra_columns: Sequence[str] = (),
    plots: Sequence[str] = (),
    comparison: Table | None = None,
    comparison_text: str = "",
    grid: Grid | None = None,
    sections: Sequence[str] = (),
    notices: Sequence[str] = (),
    lead: str = "",
    *,
    view: View,
) -> str:
    """report.html's text (the writer writes it). ``sections``: HTML the run adds after the per-cell table (the streaming
    and per-condition tables: streaming_html, conditions_html; the panel's
    agreement). ``lead``: what the page opens with (the ranking). ``notices``: HTML sections after the highlights (failed clips,
    earlier runs' results, files left out). ``view``: where the specs place engines and metrics
    (nsbench.report.layout)."""
    ordered = highlights.ordered(results, view)
    body = [
        f"<h1>nsbench report: {esc(dataset)}</h1>",
        lead,  # the ranking and its forest plot (nsbench.report.rank_report)
        "<p>Means over clips; "
        # Only about the metrics that ran: a run without references computes no SI-SDR.
        + ("SI-SDR without mean removal (torchmetrics zero_mean=False); " if reference_use.intrusive_scored(ordered) else "")
        + "confidence intervals are percentile bootstraps (1000 resamples, seeded). "
        "Click a table's header to sort it; type in a box to filter its rows (words, or <code>column=value</code>).</p>",
        *([f"<p>{esc(reference_use.results_text(ordered))}</p>"] if reference_use.results_text(ordered) else []),
        highlights_html(ordered, view),
        *notices,
        "<h2>Headline per engine and cell</h2>",
        heatmap_html(ordered, view),
        "<h2>Listen: the same clips through every engine</h2>",
        grid_html(grid, ordered) if grid is not None else "<p>No audio kept.</p>",
        "<h2>Per engine: mean and worst cell</h2>",
        filter_box("summary"),
        table(summary_rows(ordered, view), "summary"),
        "<h2>Checks: alignment and degenerate output</h2>",
        *(checks_html(r) for r in ordered),
        "<h2>Against the baselines</h2>",
        f"<p>{esc(baselines_text(ordered))}</p>",
        table(baseline_rows(ordered), "baselines"),
    ]
    if comparison is not None:
        body += ["<h2>Compared with stored results</h2>", f"<p>{esc(comparison_text)}</p>", table(comparison, "comparison")]
    body += ["<h2>Per cell</h2>", filter_box("cells"), table(cell_rows(ordered, cell_keys, view, extra_columns), "cells"), *sections]
    pooled = pooled_rows(ordered, cell_keys)
    if pooled[1]:
        body += ["<h2>Pooled over items</h2>", f"<p>{esc(pooled_text(ordered))}</p>", table(pooled, "pooled")]
    if plots:
        body += ["<h2>Plots</h2>", *(image(folder / name, index) for index, name in enumerate(plots, 1))]
    body += ["<h2>Metrics</h2>", legend_html(ordered)]
    if dataset_attribution(ordered):
        body += ["<h2>Audio sources</h2>", f"<p>{esc(dataset_attribution(ordered))}</p>"]
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>nsbench: {esc(dataset)}</title><link rel=\"icon\" href=\"data:,\"><style>{STYLE}</style></head>"
        "<body>\n" + "\n".join(body) + f"\n<script>{SCRIPT}</script>\n</body></html>\n"
    )
    return page


def streaming_html(results: Sequence[Mapping[str, Any]], blocks: Any, jobs: int, view: View) -> str:
    """report.md's streaming section (--block-size), the same rows."""
    from nsbench.report import streaming_summary

    ordered = highlights.ordered(results, view)
    return ("<h2>Streaming: block by block</h2>" f"<p>{esc(streaming_summary.report_text(ordered, blocks, jobs))}</p>"
            + table(streaming_summary.report_rows(ordered), "streaming"))


def conditions_html(results: Sequence[Mapping[str, Any]], view: View) -> str:
    """report.md's per-condition section (--condition): where each engine loses most, then the same table."""
    from nsbench.report import conditions_summary as conditions
    from nsbench.report.tables import headline_higher_is_better

    ordered = highlights.ordered(results, view)
    headline = headline_of(ordered, view)
    losses = conditions.loss_lines(ordered, headline, headline_higher_is_better(ordered, headline), view.reference_engine())
    items = "".join(f"<li>{esc(plain(line.removeprefix('- ')))}</li>" for line in losses)
    return ("<h2>Per condition</h2>" + (f"<p>Where each engine loses most against its gain under none:</p><ul>{items}</ul>" if items else "")
            + f"<p>{esc(conditions.CONDITIONS_TEXT)}</p>" + filter_box("conditions") + table(conditions.condition_rows(ordered, view), "conditions"))


def esc(text: Any) -> str:
    return html.escape(str(text))


def table(rows: Table, table_id: str, sortable: bool = True) -> str:
    header, body = rows
    head = "".join(f"<th>{esc(cell)}</th>" for cell in header)
    lines = ["<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in body]
    css = ' class="sortable"' if sortable else ""
    return f'<table id="{table_id}"{css}><thead><tr>{head}</tr></thead><tbody>' + "".join(lines) + "</tbody></table>"


def filter_box(table_id: str) -> str:
    return (f'<input type="search" class="filter" data-table="{table_id}" placeholder="filter rows, e.g. babble or engine=rnnoise" '
            f'aria-label="filter the {table_id} table"> <span id="{table_id}-count"></span>')


def engine_name(result: Mapping[str, Any]) -> str:
    """The engine's name, marked when it is an oracle."""
    oracle = ' <span class="oracle">(oracle: uses the clean reference)</span>' if highlights.is_oracle(result) else ""
    return f"<b>{esc(result['engine'])}</b>{oracle}"


# --------------------------------------------------------------------------- what to look at


def highlights_html(results: Sequence[Mapping[str, Any]], view: View) -> str:
    """Before any long table: significance against the baseline, flags, worst cells."""
    by_name = {r["engine"]: r for r in results}
    headline = headline_of(results, view)
    unit = highlights.headline_unit(results, headline)
    verdicts = highlights.by_effect(highlights.headline_verdicts(results, view))
    items = []
    if verdicts:
        for verdict, words in (("better", "Better than"), ("worse", "Worse than"), ("not distinguishable", "Not distinguishable from")):
            chosen = [v for v in verdicts if v.verdict == verdict]
            if chosen:
                listed = ", ".join(
                    f"{engine_name(by_name[v.engine])} (mean {v.mean_difference:+.2f} {esc(unit)}, Hodges-Lehmann "
                    f"{esc(hodges_lehmann_text({'hodges_lehmann': v.hodges_lehmann, 'hl_ci95': list(v.hl_ci95)}, 2))}, "
                    f"{p_text(v.p_value)}, {v.n} clips)"
                    for v in chosen
                )
                items.append(f"<li>{words} {esc(verdicts[0].baseline)} on {esc(headline)} "
                             f"(paired Wilcoxon, 5%): {listed}</li>")
    else:
        items.append(f"<li>{esc(view.reference_engine())} did not run: no engine is compared with the baseline.</li>")
    flagged = [r for r in results if r.get("flags")]
    for result in flagged:
        reasons = "; ".join(f'<span class="flag">{esc(name)}</span> on {clips_count(count)} ({esc(description)})'
                            for name, count, description in highlights.flag_counts(result))
        items.append(f"<li>Flagged: {engine_name(result)}: {reasons}</li>")
    if not flagged:
        items.append('<li class="ok">No engine flagged for degenerate output.</li>')
    worst = "".join(
        f"<tr><td>{engine_name(r)}</td><td>{esc(highlights.worst_cell_text(r))}</td></tr>" for r in results
    )
    return (
        f'<section id="highlights"><h2>What to look at</h2><ul>{"".join(items)}</ul>'
        f"<p>Worst cell of each engine (lowest mean {esc(headline)}):</p>"
        f'<table id="worst-cells"><thead><tr><th>engine</th><th>worst cell (mean {esc(headline)})</th></tr></thead>'
        f"<tbody>{worst}</tbody></table></section>"
    )


def p_text(p_value: float) -> str:
    return "p < 0.0001" if p_value < 1e-4 else f"p = {fmt(p_value, 4)}"


# --------------------------------------------------------------------------- heatmap


def heatmap_html(results: Sequence[Mapping[str, Any]], view: View) -> str:
    """Engines by cells, the headline metric's cell mean, coloured by its
    difference from the passthrough's in that cell (blue better, red worse):
    zero for an improvement metric (SI-SDRi), the input's own score for a
    1-5 score (DNSMOS OVRL on a set without references); without a
    passthrough, around zero."""
    headline = headline_of(results, view)
    higher = highlights.headline_direction(results, view) == "higher is better"
    columns: dict[str, None] = {}
    values: dict[tuple[str, str], float] = {}
    for result in results:
        for row in result["cells"]:
            name = highlights.cell_name(row["cell"]) + (" (pooled)" if row.get("pooled") else "")
            columns.setdefault(name)
            values[(result["engine"], name)] = row["metrics"].get(headline, {}).get("mean", math.nan)
    reference = view.reference_engine()
    centre = {name: values.get((reference, name), math.nan) for name in columns}
    centre = {name: value if math.isfinite(value) else 0.0 for name, value in centre.items()}
    shifted = {(engine, name): value - centre[name] for (engine, name), value in values.items()}
    scale = heat_scale(results, shifted)
    head = "".join(f"<th>{esc(name)}</th>" for name in columns)
    rows = []
    for result in results:
        cells = "".join(heat_cell(values.get((result["engine"], name), math.nan), scale, higher, centre[name]) for name in columns)
        css = ' class="oracle-row"' if highlights.is_oracle(result) else ""
        rows.append(f'<tr{css} data-engine="{esc(result["engine"])}"><th>{engine_name(result)}</th>{cells}</tr>')
    where = f"{esc(reference)}'s value in the same cell" if any(r["engine"] == reference for r in results) else "zero"
    return (
        f"<p>Mean {esc(headline)} per cell; colour: {'blue' if higher else 'red'} above {where}, "
        f"{'red' if higher else 'blue'} below, white equal, full colour at a difference of &plusmn;{scale:.2f}"
        + (", set by the engines: oracle rows (upper bounds, dashed apart) go beyond it at full colour"
           if any(highlights.is_oracle(r) for r in results) else "") + ".</p>"
        f'<table id="heatmap"><thead><tr><th>engine</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def heat_scale(results: Sequence[Mapping[str, Any]], values: Mapping[tuple[str, str], float]) -> float:
    """The largest |value| of the engines that are not oracles: an oracle's
    upper bound would set a scale on which every real engine looks pale.
    Oracles alone (nothing else differs from zero): theirs."""
    oracles = {r["engine"] for r in results if highlights.is_oracle(r)}
    def largest(keep) -> float:
        return max((abs(v) for (engine, _), v in values.items() if keep(engine) and v is not None and math.isfinite(v)), default=0.0)
    return largest(lambda engine: engine not in oracles) or largest(lambda engine: True) or 1.0


def heat_cell(value: float, scale: float, higher_is_better: bool, centre: float = 0.0) -> str:
    """The value shown, coloured by its difference from ``centre`` (the passthrough's in the cell)."""
    if value is None or not math.isfinite(value):
        return '<td class="value" style="background:#eee">–</td>'
    strength = min(abs(value - centre) / scale, 1.0)
    good = (value > centre) == higher_is_better
    target = (33, 102, 172) if good else (178, 24, 43)  # ColorBrewer RdBu ends
    rgb = tuple(round(255 + (channel - 255) * strength) for channel in target)
    ink = "#fff" if strength > 0.6 else "#222"
    return f'<td class="value" style="background:rgb{rgb};color:{ink}">{value:.2f}</td>'


# --------------------------------------------------------------------------- listening grid


def grid_html(grid: Grid, results: Sequence[Mapping[str, Any]]) -> str:
    if not grid.rows:
        return "<p>No clip was scored: nothing to listen to.</p>"
    by_name = {r["engine"]: r for r in results}
    unit = highlights.headline_unit(results, grid.metric)
    engines = [output.engine for output in grid.rows[0].outputs]
    head = "<th>clip</th><th>noisy input</th><th>clean reference</th>" + "".join(
        f"<th>{engine_name(by_name[name]) if name in by_name else esc(name)}</th>" for name in engines)
    rows = []
    for row in grid.rows:
        labels = ", ".join(f"{k}={v}" for k, v in row.labels.items())
        about = (f"<td><b>{esc(row.clip_id)}</b><br>{esc(labels)}<ul>"
                 + "".join(f"<li>{esc(why)}</li>" for why in row.reasons) + "</ul></td>")
        references = "".join(
            f"<td>{media(audio, image, role) if audio or not row.input_audio or role != 'clean reference' else 'no clean reference'}</td>"
            for audio, image, role in ((row.input_audio, row.input_image, "noisy input"), (row.clean_audio, row.clean_image, "clean reference"))
        )
        outputs = "".join(output_cell(output, f"{grid.metric} ({unit})" if unit else grid.metric) for output in row.outputs)
        rows.append(f'<tr data-clip="{esc(row.clip_id)}">{about}{references}{outputs}</tr>')
    return (
        f"<p>Each row is one clip through every engine, chosen for being worth hearing (why: under its name). "
        f"Spectrograms share one colour scale per row (dB below the row's loudest bin), so a darker picture is a quieter sound. "
        f"16-bit WAV, at most the first {LISTEN_SECONDS:g} s of a clip.</p>"
        f'<div style="overflow-x:auto"><table id="grid"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


def output_cell(output: GridOutput, metric: str) -> str:
    """Player, spectrogram, then the headline score and the flags raised on this clip."""
    if output.error:
        return f'<td data-engine="{esc(output.engine)}"><span class="flag">failed</span>: {esc(output.error)}</td>'
    score = f"{esc(metric)} {fmt(output.score, 2)}" if output.score is not None else f"{esc(metric)} –"
    flags = "".join(f' <span class="flag">{esc(flag)}</span>' for flag in output.flags)
    return (f'<td data-engine="{esc(output.engine)}">{media(output.audio, output.image, output.engine)}'
            f"<div>{score}{flags}</div></td>")


def media(audio: str, image: str, what: str) -> str:
    if not audio:
        return "no audio kept"
    picture = (f'<img src="{esc(quote(image))}" width="240" height="120" alt="spectrogram: {esc(what)}">' if image else "")
    return f'<audio controls preload="none" src="{esc(quote(audio))}"></audio>{picture}'


# --------------------------------------------------------------------------- checks, plots, legend


def checks_html(result: Mapping[str, Any]) -> str:
    alignment = result.get("alignment", {})
    items = []
    for name, flag in result.get("flags", {}).items():
        items.append(f'<li><span class="flag">{esc(name)}</span>: {esc(flag["description"])}; '
                     f'{esc(clip_list(flag["clips"], named=None))}</li>')
    for name, flag in result.get("expected_flags", {}).items():
        items.append(f"<li>{esc(name)}, expected ({esc(flag['expected'])}): {clips_count(len(flag['clips']))}</li>")
    if not result.get("flags"):
        items.append('<li class="ok">no degenerate output</li>')
    aligned = "ok" if alignment.get("sample_aligned") else "flag"
    return (
        f'<h3>{esc(result["engine"])}</h3><p>alignment: <span class="{aligned}">{esc(alignment.get("text", "–"))}</span>'
        f"{esc(compensation_text(alignment))}</p><ul>{''.join(items)}</ul>"
    )


def image(path: Path, number: int) -> str:
    """A plot in its own framed figure, its caption inside the frame above it:
    no caption sits between two plots, where it would read as the next one's."""
    from nsbench.report.plots import plot_caption

    data = base64.b64encode(path.read_bytes()).decode("ascii")
    caption = plot_caption(path.name)
    return (f'<figure class="plot"><figcaption>Figure {number}: {esc(caption)} <code>{esc(path.name)}</code></figcaption>'
            f'<img alt="{esc(caption)}" src="data:image/png;base64,{data}"></figure>')


def legend_html(results: Sequence[Mapping[str, Any]]) -> str:
    definitions = results[0]["metric_definitions"] if results else {}
    rows = [
        [name, d["unit"], "higher" if d["higher_is_better"] else "lower", d["description"], d["ignores"]]
        for name, d in definitions.items()
    ]
    return table((["metric", "unit", "better", "definition", "what it ignores"], rows), "legend", sortable=False)
