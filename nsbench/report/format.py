"""Cells and markdown: how a number, an interval or a list of clips is written.

report.md, report.html and the terminal summary write their figures with these,
so the same value reads the same everywhere.
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence


def fmt(value: float, decimals: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{decimals}f}"


def number(value: Any, digits: int = 2) -> str:
    """A statistic that may be missing (None, NaN, infinite): "n/a" then, as the agreement tables print it."""
    return "n/a" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.{digits}f}"


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


class Markdown(str):
    """Text that is markdown already (a link nsbench made): written as it is, never escaped again."""


# What would make a name from a dataset, plugin or engine into markup rather
# than text in report.md, and nothing else, so a name reads the same raw:
# a tag, comment or autolink (``<`` before a letter, /, ! or ?), an entity,
# a backslash escape, a code span, emphasis (``_`` inside a word is plain text
# to CommonMark), an inline link or image (``](``). Every escape below is one
# Python-Markdown honours too.
# A backslash at the end is escaped too: the markup nsbench writes after a
# name (``**``) must not be escaped by it.
MARKUP = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?\w+;)|\\(?=[!-/:-@\[-`{-~]|$)|[`*]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|\](?=\()")
ENTITIES = {"<": "&lt;", "&": "&amp;"}
# In a link's text or an image's alt text, a bracket ends it: escaped too.
LINK_TEXT_MARKUP = re.compile(MARKUP.pattern + r"|[\[\]]")
# What md and nsbench's own bold make of text, undone from left to right.
MARKED = re.compile(r"\\([!-/:-@\[-`{-~])|&(lt|amp);|\*\*")


def md(text: Any, markup: re.Pattern = MARKUP) -> str:
    """``text`` as plain text in markdown: what report.html's escaping is to
    report.md. A line break becomes a space: a name never starts a block."""
    if isinstance(text, Markdown):
        return text
    flat = " ".join(str(text).splitlines())
    return markup.sub(lambda found: ENTITIES.get(found.group(), "\\" + found.group()), flat)


def link_text(text: Any) -> str:
    """md for the text of a link or an image's alt text."""
    return md(text, LINK_TEXT_MARKUP)


def plain(text: str) -> str:
    """A line of report.md as report.html shows it before its own escaping:
    without the bold nsbench writes and without md's escapes."""
    return MARKED.sub(lambda found: found.group(1) or {"lt": "<", "amp": "&"}.get(found.group(2) or "", ""), text)


def markdown_row(cells: Sequence[str]) -> str:
    """A table row, each cell escaped (md); ``|`` would end the cell, so it becomes ``/``."""
    return "| " + " | ".join(md(cell).replace("|", "/") for cell in cells) + " |"


def markdown_table(table: Table) -> str:
    header, rows = table
    return "\n".join([markdown_row(header), markdown_row(["---"] * len(header)), *(markdown_row(row) for row in rows)])


# Clips named per flag in report.md; the JSON names them all.
CLIPS_NAMED = 10


def clips_count(count: int) -> str:
    return f"{count} clip{'s' if count != 1 else ''}"


def clip_list(clips: Sequence[str], named: int | None = CLIPS_NAMED) -> str:
    """"2 clips: a, b"; beyond ``named`` (None: no limit), "and N more". Plain
    text: report.md escapes it (md), report.html too."""
    limit = len(clips) if named is None else named
    more = f" and {len(clips) - limit} more" if len(clips) > limit else ""
    return f"{clips_count(len(clips))}: {', '.join(map(str, clips[:limit]))}{more}"
