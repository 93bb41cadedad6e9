"""The terminal summary and the report tables read clearly whatever ran: a
lower-is-better headline (--metric wer) says its direction and what the signed
differences mean, columns nobody computed are left out, timings never read
0.000, and --block-size and --condition results reach the terminal. On
hand-made result payloads (the payload is what a run writes)."""
from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path

from nsbench.cli import main
from nsbench.report.format import fmt_timing
from nsbench.report.tables import summary_rows
from nsbench.report.terminal import summary_text

WER = {"wer": {"unit": "%", "higher_is_better": False}}


def wer_result(engine: str, mean: float, difference: float | None, rtf: float) -> dict:
    comparisons = {} if difference is None else {"passthrough": {"wer": {"all": {
        "verdict": "better" if difference < 0 else "worse", "mean_difference": difference, "p_value": 0.01, "n": 12,
        "hodges_lehmann": difference, "hl_ci95": [difference - 0.02, difference + 0.005], "ci_method": "exact"}}}}
    return {
        "engine": engine, "clips": 12, "failures": 0, "stoi": math.nan, "rtf": rtf, "rtf_wall": rtf,
        "metrics": {"wer": {"n": 12, "mean": mean, "mean_ci95": [mean - 1, mean + 1], "p95": mean + 3}},
        "metric_definitions": WER, "cells": [],
        "worst_cell": {"cell": {"noise": "babble"}, "metric": "wer", "mean": mean + 2},
        "engine_info": {"oracle": False}, "flags": {}, "alignment": {"text": "sample-aligned"}, "comparisons": comparisons,
    }


def wer_run() -> list[dict]:
    return [wer_result("passthrough", 20.0, None, 0.00002), wer_result("speex", 19.99, -0.01, 0.0123)]


def unwrapped(text: str) -> str:
    return text.replace("\n  ", " ")


def test_a_lower_is_better_headline_says_so_and_what_the_signs_mean(view):
    text = unwrapped(summary_text("demo", wer_run(), [Path("r/report.md")], view=view))
    assert text.splitlines()[0].startswith("nsbench demo: 12 clips; wer (%, lower is better) ranks the engines")
    assert "speex (mean -0.01, HL -0.01 [-0.03, -0.01])" in text
    assert "in brackets: the mean wer difference, engine minus passthrough, and its Hodges-Lehmann estimate; lower is better, so a negative one is an improvement" in text


def test_a_higher_is_better_headline_needs_no_key_to_its_signs(view):
    run = wer_run()
    for result in run:
        result["metric_definitions"] = {"wer": {"unit": "%", "higher_is_better": True}}
    assert "in brackets" not in summary_text("demo", run, [Path("r/report.md")], view=view)


def test_columns_nobody_computed_are_left_out_and_timings_never_read_zero(view):
    lines = summary_text("demo", wer_run(), [Path("r/report.md")], view=view).splitlines()
    assert lines[1].split() == ["engine", "wer", "[95%", "CI]", "RTF", "flagged", "worst", "cell", "(wer", "there)"]
    rows = {line.split()[0]: line for line in lines[2:4]}
    assert "<0.001" in rows["passthrough"] and "0.000" not in rows["passthrough"] and "0.012" in rows["speex"]
    assert "–  –" not in "\n".join(lines[2:4])  # no column of dashes
    header, table = summary_rows(wer_run(), view)
    assert "STOI" not in header and table[0][header.index("RTF (CPU)")] == "<0.001"


def test_timings_have_enough_digits():
    assert [fmt_timing(v) for v in (0.0, 0.0004, 0.0006, 0.0123, 1.5, math.nan)] == ["<0.001", "<0.001", "0.001", "0.012", "1.500", "–"]


# --------------------------------------------------------------------------- streaming and conditions, a real run


class Tables(HTMLParser):
    """Each <table id=...>'s rows of cell texts, header first."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.current: str | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.current = dict(attrs).get("id")
            self.tables[self.current] = []
        elif tag == "tr" and self.current:
            self.tables[self.current].append([])
        elif tag in ("td", "th") and self.current:
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self.current = None
        elif tag in ("td", "th") and self.cell is not None:
            self.tables[self.current][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def markdown_section_table(report: str, title: str) -> list[list[str]]:
    section = report.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows if not set(row) <= set("|- ")]


def test_streaming_and_conditions_reach_the_terminal_and_report_html(tmp_path, capsys):
    """speex streamed in blocks of 128 under opus-16k (and none): the terminal
    has a block for each, and report.html the same tables as report.md."""
    argv = ["--engine", "speex", "--block-size", "128", "--condition", "opus-16k", "--limit", "3", "--metric", "si_sdri",
            "--no-plots", "--results-folder", str(tmp_path)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    folder = tmp_path / "demo"
    results = {r["engine"]: r for r in (json.loads(p.read_text()) for p in folder.glob("*.json") if p.name != "ranking.json")}
    start = lines.index("streamed in blocks of 128 samples (8 ms each, its deadline):")
    assert lines[start + 1].split() == ["block", "p99", "deadline", "misses"]
    streamed = {line.split()[0]: line for line in lines[start + 2 : start + 4]}
    for engine in ("passthrough", "speex"):
        info = results[engine]["streaming"]
        assert streamed[engine].split() == [engine, f"{info['block_ms_p99']:.3f}", "ms", str(info["deadline_misses"]), "of",
                                            str(info["blocks"]), "blocks"]
    start = lines.index("si_sdri mean under each input condition:")
    assert lines[start + 1].split() == ["none", "opus-16k"]
    speex = lines[start + 3].split()
    means = {row["cell"]["condition"]: row["metrics"]["si_sdri"]["mean"] for row in results["speex"]["conditions"]}
    assert speex == ["speex", f"{means['none']:.2f}", f"{means['opus-16k']:.2f}"]
    report = (folder / "report.md").read_text()
    parser = Tables()
    parser.feed((folder / "report.html").read_text())
    assert parser.tables["streaming"] == markdown_section_table(report, "Streaming: block by block")
    assert parser.tables["conditions"] == markdown_section_table(report, "Per condition")
    assert len(parser.tables["conditions"]) == 1 + 2 * 2  # header, two engines under two conditions
