"""report.md and report.html have one writer (nsbench.report.report_pages):
a run's reports and a listening test collected later meet there, the
section once, kept by a rerun, each file put in place whole."""
from __future__ import annotations

import json

from nsbench.report import listening_section, report_pages

# A collected MUSHRA test's results, as nsbench.listen.collect.results_of shapes them (the fields the section reads).
PAYLOAD = {
    "method": "mushra", "scales": ["score"], "interval": "Student-t 95% interval", "problems": [],
    "listeners": [{"listener": "ann", "part": 1, "excluded": ""}, {"listener": "cy", "part": 1, "excluded": "reference below 90"}],
    "balance": {"min": 2, "max": 2, "parts_taken": {"1": 2}},
    "conditions": [{"condition": "speex", "cells": {},
                    "score": {"mean": 61.0, "ci95": [55.0, 67.0], "ratings": 4, "listeners": 1, "clips": 2}}],
    "agreement": {"score": {}},
}
PAGE = "<html><body><h1>demo</h1></body></html>\n"


def collected(folder) -> str:
    """What --collect writes beside the reports; returns report.md's section."""
    text = listening_section.markdown(PAYLOAD)
    (folder / listening_section.RESULTS_JSON).write_text(json.dumps(PAYLOAD))
    (folder / listening_section.RESULTS_MD).write_text(text)
    return text.rstrip()


def test_without_a_listening_test_the_reports_are_written_as_given(tmp_path):
    report_pages.write_markdown(tmp_path, "# Results\n\ntext\n")
    report_pages.write_html(tmp_path, PAGE)
    assert (tmp_path / "report.md").read_text() == "# Results\n\ntext\n"
    assert (tmp_path / "report.html").read_text() == PAGE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.md"]  # no temporary file left


def test_collect_adds_the_section_once_and_a_rerun_keeps_it(tmp_path):
    report_pages.write_markdown(tmp_path, "# Results\n\ntext\n")
    report_pages.write_html(tmp_path, PAGE)
    section = collected(tmp_path)
    report_pages.add_listening_section(tmp_path)
    report_pages.add_listening_section(tmp_path)  # collected again: replaced, not added twice
    report = (tmp_path / "report.md").read_text()
    assert report == f"# Results\n\ntext\n\n{listening_section.START}\n{section}\n{listening_section.END}\n"
    page = (tmp_path / "report.html").read_text()
    assert page.count('id="listening-test"') == 1 and page.index('id="listening-test"') < page.index("</body>")
    assert "<td>speex</td>" in page and "reference below 90" in page

    report_pages.write_markdown(tmp_path, "# Results again\n")  # the run again, in the same folder
    report_pages.write_html(tmp_path, PAGE)
    assert (tmp_path / "report.md").read_text().count("## Listening test") == 1
    assert (tmp_path / "report.md").read_text().startswith("# Results again\n")
    assert (tmp_path / "report.html").read_text().count('id="listening-test"') == 1


def test_collect_writes_no_report_the_run_did_not(tmp_path):
    report_pages.write_markdown(tmp_path, "# Results\n")  # a run with --no-html
    collected(tmp_path)
    report_pages.add_listening_section(tmp_path)
    assert "## Listening test" in (tmp_path / "report.md").read_text()
    assert not (tmp_path / "report.html").exists()


def test_an_unreadable_results_file_leaves_report_html_without_the_section(tmp_path):
    collected(tmp_path)
    (tmp_path / listening_section.RESULTS_JSON).write_text("{}")  # edited by hand: not a test's results
    report_pages.write_markdown(tmp_path, "# Results\n")
    report_pages.write_html(tmp_path, PAGE)
    assert "## Listening test" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "report.html").read_text() == PAGE
