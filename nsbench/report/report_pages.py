"""report.md and report.html: their one writer.

The results writer (nsbench.report.writer) hands over each report's text
once it is complete; ``nsbench listen --collect``, which adds its results to a
folder a run wrote, asks for them to be written again. Either way the
listening test's section, if one was collected (nsbench.report.listening_section),
goes in between its markers, and each file is put in place whole
(nsbench.store.atomic): a reader finds the old report or the new one, never half.
"""
from __future__ import annotations

from pathlib import Path

from nsbench.report import listening_section
from nsbench.store import atomic

REPORT_MD, REPORT_HTML = "report.md", "report.html"


def write_markdown(folder: Path, text: str) -> None:
    """report.md: ``text``, with the listening test's section at its end (or where it was)."""
    found = listening_section.sections(folder)
    atomic.write_text(folder / REPORT_MD, listening_section.replace_between(text, found[0], "") if found else text)


def write_html(folder: Path, page: str) -> None:
    """report.html: ``page``, with the listening test's section before ``</body>`` (or where it was)."""
    found = listening_section.sections(folder)
    if found and found[1]:
        page = listening_section.replace_between(page, found[1], "</body>")
    atomic.write_text(folder / REPORT_HTML, page)


def add_listening_section(folder: Path) -> None:
    """--collect: the reports a run wrote in ``folder``, written again with the
    section just collected (an earlier one replaced). A report the run did not
    write (--no-html) stays unwritten."""
    for name, write in ((REPORT_MD, write_markdown), (REPORT_HTML, write_html)):
        if (folder / name).is_file():
            write(folder, (folder / name).read_text())
