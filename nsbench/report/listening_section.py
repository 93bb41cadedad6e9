"""The listening test's section of report.md and report.html: pure text.

``nsbench listen --collect`` writes ``listening-results.json`` and
``listening-results.md`` beside the run's report (``markdown`` is that .md);
``sections(folder)`` reads them back as the two sections, and
nsbench.report.report_pages, the one writer of report.md and report.html,
puts them in between markers (replacing an earlier one) whenever it writes
the reports: after each run, so a rerun keeps the section, and when
--collect asks it to. It lives in report, below listen, so that the writer
need not import listen (listen imports report).
"""
from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.report.format import markdown_table, md, number, plain

START, END = "<!-- nsbench-listening-results -->", "<!-- /nsbench-listening-results -->"
RESULTS_JSON, RESULTS_MD = "listening-results.json", "listening-results.md"
TOP_METRICS = 10  # rows of the agreement table in the report; the JSON has every metric


def interval(stat: Mapping[str, Any], digits: int = 1) -> str:
    low, high = stat["ci95"]
    return f"{number(stat['mean'], digits)} [{number(low, digits)}, {number(high, digits)}]"


def headline_scale(payload: Mapping[str, Any]) -> str:
    return "score" if payload["method"] == "mushra" else "ovrl"


def score_rows(payload: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    scales = payload["scales"]
    head = ["condition", *[f"{s.upper() if s != 'score' else 'score'} (95% CI)" for s in scales], "ratings", "listeners", "clips"]
    rows = []
    for row in by_score(payload):
        first = row[scales[0]]
        rows.append([row["condition"], *[interval(row[s]) for s in scales], str(first["ratings"]), str(first["listeners"]),
                     str(first["clips"])])
    return head, rows


def by_score(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The conditions, best-rated first (unrated last)."""
    scale = headline_scale(payload)
    return sorted(payload["conditions"], key=lambda r: -r[scale]["mean"] if math.isfinite(r[scale]["mean"]) else math.inf)


def cell_rows(payload: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    scale = headline_scale(payload)
    cells = sorted({cell for row in payload["conditions"] for cell in row["cells"]})
    head = ["condition", *cells]
    rows = [[row["condition"], *[f"{interval(row['cells'][c][scale])} (n={row['cells'][c][scale]['ratings']})"
                                 if c in row["cells"] else "" for c in cells]] for row in by_score(payload)]
    return head, rows


def signed(entry: Mapping[str, Any], level: str) -> float:
    """Kendall's tau with the metric's direction applied: positive is agreement."""
    value = entry[level]["kendall"]
    if not math.isfinite(value):
        return -2.0
    return value if entry.get("higher_is_better") is not False else -value


def agreement_rows(payload: Mapping[str, Any], limit: int | None = TOP_METRICS) -> tuple[list[str], list[list[str]]]:
    scale = headline_scale(payload)
    entries = payload["agreement"].get(scale, {})
    head = ["metric", "better", "system n", "system r", "system rho", "system tau",
            "stimulus n", "stimulus r", "stimulus rho", "stimulus tau"]
    ordered = sorted(entries, key=lambda m: (-signed(entries[m], "stimulus"), m))
    rows = []
    for metric in ordered[:limit]:
        e = entries[metric]
        better = {True: "higher", False: "lower"}.get(e.get("higher_is_better"), "?")
        rows.append([metric, better, *[str(e[level]["n"]) if k == "n" else number(e[level][k])
                                       for level in ("system", "stimulus") for k in ("n", "pearson", "spearman", "kendall")]])
    return head, rows


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The report's markdown table: every cell escaped (a condition is an engine's name)."""
    return markdown_table((list(head), [list(row) for row in rows]))


def verdict(payload: Mapping[str, Any]) -> str:
    scale = headline_scale(payload)
    entries = payload["agreement"].get(scale, {})
    usable = [m for m in entries if math.isfinite(entries[m]["stimulus"]["kendall"])]
    if not usable:
        return "Too few rated stimuli with metric values to measure any agreement."
    best = min(usable, key=lambda m: (-signed(entries[m], "stimulus"), m))  # the agreement table's first row
    tau = entries[best]["stimulus"]["kendall"]
    return (f"Best agreement with the listeners per stimulus: **{md(best)}** (Kendall tau {tau:.2f} over "
            f"{entries[best]['stimulus']['n']} stimuli).")


def times(balance: Mapping[str, Any]) -> str:
    low, high = balance["min"], balance["max"]
    return f"{low} times" if low == high else f"{low} to {high} times (unequal: take the parts equally often)"


def markdown(payload: Mapping[str, Any]) -> str:
    method = "MUSHRA (ITU-R BS.1534-3)" if payload["method"] == "mushra" else "P.835 (signal, background, overall; 1-5)"
    excluded = [l for l in payload["listeners"] if l["excluded"]]
    kept = len(payload["listeners"]) - len(excluded)
    balance = payload["balance"]
    parts = [
        "## Listening test",
        f"{method}, {kept} listener part(s) kept of {len(payload['listeners'])}. Intervals: {payload['interval']}. "
        f"Each (clip, condition) pair rated {times(balance)} by the kept listeners "
        f"(parts taken: {', '.join(f'{p}: {n}' for p, n in balance['parts_taken'].items())}).",
        verdict(payload),
        md_table(*score_rows(payload)),
        "Per cell (" + ("score" if payload["method"] == "mushra" else "OVRL") + "):",
        md_table(*cell_rows(payload)),
        f"Agreement of each metric with the listeners' {headline_scale(payload).upper() if payload['method'] != 'mushra' else 'score'} "
        "(system: per condition; stimulus: per clip and condition; r Pearson, rho Spearman, tau Kendall tau-b; "
        f"sorted by agreement per stimulus, the metric's direction applied; {RESULTS_JSON} has every metric and scale):",
        md_table(*agreement_rows(payload)),
    ]
    if payload.get("human"):  # the same P.1401 table a rated set gets (nsbench.report.human_report)
        from nsbench.report.human_report import table

        parts += ["ITU-T P.1401 figures (stimulus = file level, condition level; as a rated set's):", md_table(*table(payload))]
    if excluded:
        parts.append("Excluded by screening:\n\n" + "\n".join(f"- {md(l['listener'])} (part {md(l['part'])}): {md(l['excluded'])}"
                                                             for l in excluded))
    if payload["problems"]:
        parts.append("Input problems:\n\n" + "\n".join(f"- {md(p)}" for p in payload["problems"]))
    return "\n\n".join(parts) + "\n"


def html_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def html_section(payload: Mapping[str, Any]) -> str:
    """The same section for report.html, from listening-results.json."""
    text = markdown(payload).split("\n\n")
    paragraphs = [f"<p>{html.escape(plain(block))}</p>" for block in text[1:3]]
    tables = [html_table(*score_rows(payload)), html_table(*cell_rows(payload)), html_table(*agreement_rows(payload))]
    excluded = [f"<li>{html.escape(l['listener'])} (part {l['part']}): {html.escape(l['excluded'])}</li>"
                for l in payload["listeners"] if l["excluded"]]
    return (f'<section id="listening-test"><h2>Listening test</h2>{"".join(paragraphs)}{tables[0]}'
            f"<p>Per cell:</p>{tables[1]}<p>Agreement with the listeners (tau: Kendall tau-b):</p>{tables[2]}"
            + (f"<p>Excluded by screening:</p><ul>{''.join(excluded)}</ul>" if excluded else "") + "</section>")


def replace_between(text: str, block: str, before: str) -> str:
    """``block`` between the markers: where they are, else before ``before`` (else at the end)."""
    marked = f"{START}\n{block}\n{END}"
    if START in text and END in text:
        return text[: text.index(START)] + marked + text[text.index(END) + len(END) :]
    at = text.rfind(before) if before else -1
    return text + "\n" + marked + "\n" if at < 0 else text[:at] + marked + "\n" + text[at:]


def sections(folder: Path) -> tuple[str, str] | None:
    """The collected listening results in ``folder`` as (report.md's section,
    report.html's), or None where none was collected. The files are the test's
    own, read as text; an unreadable results file gives report.html no
    section ("") while report.md keeps the collected text."""
    text, data = folder / RESULTS_MD, folder / RESULTS_JSON
    if not text.is_file() or not data.is_file():
        return None
    try:
        page = html_section(json.loads(data.read_text()))
    except (ValueError, KeyError, TypeError):
        page = ""
    return text.read_text().rstrip(), page
