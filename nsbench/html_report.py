"""``report.html``: the report to read and listen to.

One file holding the tables (the same rows as report.md, from the same
functions), the plots (embedded as data URIs), the flags, and audio players
for each engine's worst and typical clips beside the noisy input and the clean
reference. The audio sits beside it in ``audio/``; nothing else is fetched.
"""
from __future__ import annotations

import base64
import html
from urllib.parse import quote
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.report import (
    BASELINE_ENGINE,
    Table,
    baseline_rows,
    baselines_text,
    cell_rows,
    clip_list,
    clips_count,
    compensation_text,
    fmt,
    pooled_rows,
    pooled_text,
    summary_rows,
)

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.flag { color: #a00; font-weight: bold; }
.ok { color: #070; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
audio { width: 14em; }
"""


def write_html(
    folder: Path,
    dataset: str,
    results: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    extra_columns: Sequence[str] = (),
    plots: Sequence[str] = (),
    comparison: Table | None = None,
    comparison_text: str = "",
) -> Path:
    ordered = sorted(results, key=lambda r: r["engine"] != BASELINE_ENGINE)
    body = [
        f"<h1>nsbench report: {esc(dataset)}</h1>",
        "<p>Means over clips; SI-SDR without mean removal (torchmetrics zero_mean=False); "
        "confidence intervals are percentile bootstraps (1000 resamples, seeded). "
        "Listening copies are 16-bit WAV of the outputs.</p>",
        "<h2>Per engine: mean and worst cell</h2>",
        table(summary_rows(ordered), "summary"),
        "<h2>Checks: alignment and degenerate output</h2>",
        *(checks_html(r) for r in ordered),
        "<h2>Against the baselines</h2>",
        f"<p>{esc(baselines_text(ordered))}</p>",
        table(baseline_rows(ordered), "baselines"),
    ]
    if comparison is not None:
        body += ["<h2>Compared with stored results</h2>", f"<p>{esc(comparison_text)}</p>", table(comparison, "comparison")]
    body += ["<h2>Listen: worst and typical clips</h2>", *(listening_html(r) for r in ordered)]
    body += ["<h2>Per cell</h2>", table(cell_rows(ordered, cell_keys, extra_columns), "cells")]
    pooled = pooled_rows(ordered, cell_keys)
    if pooled[1]:
        body += ["<h2>Pooled over items</h2>", f"<p>{esc(pooled_text(ordered))}</p>", table(pooled, "pooled")]
    if plots:
        body += ["<h2>Plots</h2>", *(image(folder / name) for name in plots)]
    body += ["<h2>Metrics</h2>", legend_html(ordered)]
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>nsbench: {esc(dataset)}</title><link rel=\"icon\" href=\"data:,\"><style>{STYLE}</style></head>"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    path = folder / "report.html"
    path.write_text(page)
    return path


def esc(text: Any) -> str:
    return html.escape(str(text))


def table(rows: Table, table_id: str) -> str:
    header, body = rows
    head = "".join(f"<th>{esc(cell)}</th>" for cell in header)
    lines = ["<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in body]
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>' + "".join(lines) + "</tbody></table>"


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


def listening_html(result: Mapping[str, Any]) -> str:
    picks = [(f"worst #{rank}", pick) for rank, pick in enumerate(result.get("worst_clips", []), 1)]
    picks += [("typical", pick) for pick in result.get("typical_clips", [])]
    picks = [(why, pick) for why, pick in picks if pick.get("audio")]
    if not picks:
        return f"<h3>{esc(result['engine'])}</h3><p>No audio kept for this engine.</p>"
    rows = [
        f"<tr><td>{esc(why)}</td><td>{esc(pick['run'])}</td><td>{esc(', '.join(f'{k}={v}' for k, v in pick['labels'].items()))}</td>"
        f"<td>{esc(pick['metric'])} {esc(fmt(pick['value'], 2))}</td>"
        f"<td>{player(pick.get('input_audio'))}</td><td>{player(pick.get('clean_audio'))}</td><td>{player(pick['audio'])}</td></tr>"
        for why, pick in picks
    ]
    head = "<tr><th>why</th><th>clip</th><th>cell</th><th>score</th><th>noisy input</th><th>clean reference</th><th>output</th></tr>"
    return f'<h3>{esc(result["engine"])}</h3><table class="listen" data-engine="{esc(result["engine"])}">{head}{"".join(rows)}</table>'


def player(path: str | None) -> str:
    if not path:
        return "–"
    return f'<audio controls preload="metadata" src="{esc(quote(path))}"></audio>'


def image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{esc(path.stem)}" src="data:image/png;base64,{data}"><figcaption>{esc(path.name)}</figcaption></figure>'


def legend_html(results: Sequence[Mapping[str, Any]]) -> str:
    definitions = results[0]["metric_definitions"] if results else {}
    rows = [
        [name, d["unit"], "higher" if d["higher_is_better"] else "lower", d["description"], d["ignores"]]
        for name, d in definitions.items()
    ]
    return table((["metric", "unit", "better", "definition", "what it ignores"], rows), "legend")
