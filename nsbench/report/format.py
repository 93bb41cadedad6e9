"""Cells and markdown: how a number, an interval or a list of clips is written.

report.md, report.html and the terminal summary write their figures with these,
so the same value reads the same everywhere.
"""
from __future__ import annotations

import math
from typing import Sequence


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


def interval(bounds: Sequence[float] | None, decimals: int) -> str:
    if not bounds or any(math.isnan(bound) for bound in bounds):  # a single clip has none
        return "–"
    return f"[{fmt(bounds[0], decimals)}, {fmt(bounds[1], decimals)}]"


Table = tuple[list[str], list[list[str]]]  # header, rows: markdown and HTML render the same cells


def markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "/") for cell in cells) + " |"


def markdown_table(table: Table) -> str:
    header, rows = table
    return "\n".join([markdown_row(header), markdown_row(["---"] * len(header)), *(markdown_row(row) for row in rows)])


# Clips named per flag in report.md; the JSON names them all.
CLIPS_NAMED = 10


def clips_count(count: int) -> str:
    return f"{count} clip{'s' if count != 1 else ''}"


def clip_list(clips: Sequence[str], named: int | None = CLIPS_NAMED) -> str:
    """"2 clips: a, b"; beyond ``named`` (None: no limit), "and N more"."""
    limit = len(clips) if named is None else named
    more = f" and {len(clips) - limit} more" if len(clips) > limit else ""
    return f"{clips_count(len(clips))}: {', '.join(clips[:limit])}{more}"
