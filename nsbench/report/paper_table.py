"""The papers' table: a metric set that papers print as one row per system
(``MetricSetSpec.columns``, the VoiceBank-DEMAND row), ready to paste.

One row per engine, the engine that passes its input through first (the
papers' "Noisy" row), the set's metrics in its order, each cell the engine's
mean over the clips at the set's precision. A footnote names where the
papers' table comes from, the options the metrics ran with (the composite's
flavour, from the results' provenance) and any metric some clips left
undefined. report.md shows it (Markdown), the terminal summary too, and the
results writer puts it in ``PAPER_TABLE_FILE`` as a LaTeX ``tabular``.

A set is tabled when every one of its metrics is among the run's (each
result's ``metric_definitions``), whatever named them: ``--metric vbd-row``
or the metrics one by one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nsbench.report.layout import View
from nsbench.report.format import fmt, markdown_table

# The run-level file the results writer writes beside report.md (no engine's
# files end in .tex: <engine>.json and <engine>.clips.jsonl).
PAPER_TABLE_FILE = "paper-table.tex"
NOISY_LABEL = "Noisy (input)"


@dataclass(frozen=True)
class PaperTable:
    name: str  # the metric set's
    columns: tuple[str, ...]  # titles, in the set's order
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (row label, cells)
    source: str  # where the papers' table comes from
    options: tuple[tuple[str, str], ...]  # (the options in short, what they mean), one per group of metrics
    undefined: tuple[str, ...]  # rows whose means cover fewer clips in some column

    @property
    def notes(self) -> list[str]:
        """The footnote, sentence by sentence."""
        source = [f"Means over clips at the papers' precision; their table: {self.source}."] if self.source else []
        options = [f"{short} ({about})." if about else f"{short}." for short, about in self.options]
        return source + options + list(self.undefined)


def paper_tables(results: Sequence[Mapping[str, Any]], view: View) -> list[PaperTable]:
    """A table per registered set whose metrics all ran."""
    ran = set.intersection(*(set(r.get("metric_definitions", {})) for r in results)) if results else set()
    return [table_of(spec, results, view) for spec in view.paper_tables if set(spec.metrics) <= ran]


def table_of(spec: Any, results: Sequence[Mapping[str, Any]], view: View) -> PaperTable:
    ordered = view.reference_first(results)
    rows = tuple((row_label(result, view), tuple(fmt(mean_of(result, name), spec.decimals) for name in spec.metrics))
                 for result in ordered)
    return PaperTable(spec.name, spec.columns, rows, spec.source, options_notes(spec.metrics, ordered),
                      undefined_notes(spec.metrics, ordered, view))


def row_label(result: Mapping[str, Any], view: View) -> str:
    return NOISY_LABEL if view.passes_input_through(result["engine"]) else result["engine"]


def mean_of(result: Mapping[str, Any], metric: str) -> float:
    stats = result.get("metrics", {}).get(metric, {})
    return stats.get("mean", math.nan) if stats.get("n") else math.nan


def options_notes(metrics: Sequence[str], results: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The metrics' options as the results recorded them (--composite-flavour),
    one note per distinct setting: ("csig, cbak, covl, ssnr: composite_flavour vbd", what vbd is)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for metric in metrics:
        for setting in sorted({options_of(r, metric) for r in results} - {("", "")}):
            grouped.setdefault(setting, []).append(metric)
    return tuple((f"{', '.join(names)}: {short}", about) for (short, about), names in grouped.items())


def options_of(result: Mapping[str, Any], metric: str) -> tuple[str, str]:
    options = result.get("provenance", {}).get("metric_options", {}).get(metric, {})
    short = ", ".join(f"{key} {value}" for key, value in options.items() if key != "about")
    return short, str(options.get("about", ""))


def undefined_notes(metrics: Sequence[str], results: Sequence[Mapping[str, Any]], view: View) -> tuple[str, ...]:
    """Where a mean covers fewer clips than the row's fullest column (a metric undefined on some)."""
    notes = []
    for result in results:
        counts = {metric: result.get("metrics", {}).get(metric, {}).get("n", 0) for metric in metrics}
        most = max(counts.values(), default=0)
        short = [f"{metric} over {count}" for metric, count in counts.items() if count < most]
        if short:
            notes.append(f"{row_label(result, view)}: {', '.join(short)} of {most} clips (undefined on the rest; reasons per clip).")
    return tuple(notes)


# ----------------------------------------------------------------- renderings


def markdown(table: PaperTable) -> str:
    """report.md's section: the table, then its footnote."""
    rows = [[label, *cells] for label, cells in table.rows]
    return "\n\n".join([f"## Paper table: {table.name}", markdown_table((["system", *table.columns], rows)),
                        *([" ".join(table.notes)] if table.notes else [])])


def terminal_lines(table: PaperTable) -> list[str]:
    rows = [["system", *table.columns], *([label, *cells] for label, cells in table.rows)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [f"{table.name} (the papers' row; report.md and {PAPER_TABLE_FILE} say more):",
            *("  ".join(cell.rjust(width) if i else cell.ljust(width) for i, (cell, width) in enumerate(zip(row, widths))).rstrip()
              for row in rows)]


LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--"}


def latex_text(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(character, character) for character in text)


def latex(tables: Sequence[PaperTable], dataset: str) -> str:
    """``PAPER_TABLE_FILE``: each table as a ``tabular`` (booktabs-free: \\hline
    only), its footnote in the last row, the whole text in comments above."""
    parts = []
    for table in tables:
        width = len(table.columns) + 1
        lines = [f"% nsbench paper table '{table.name}' on {dataset}, written by nsbench.",
                 *(f"% {note}" for note in table.notes),
                 f"\\begin{{tabular}}{{l{'c' * len(table.columns)}}}", r"\hline",
                 " & ".join(["System", *map(latex_text, table.columns)]) + r" \\", r"\hline",
                 *(" & ".join([latex_text(label), *map(latex_text, cells)]) + r" \\" for label, cells in table.rows),
                 r"\hline"]
        for short, _ in table.options:  # the flavour, where a reader of the table sees it
            lines.append(f"\\multicolumn{{{width}}}{{l}}{{\\footnotesize {latex_text(short)}}} \\\\")
        lines.append(r"\end{tabular}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
