"""The terminal summary and the report tables read clearly whatever ran: a
lower-is-better headline (--metric wer) says its direction and what the signed
differences mean, columns nobody computed are left out, timings never read
0.000, and --block-size and --condition results reach the terminal. On
hand-made result payloads (the payload is what a run writes)."""
from __future__ import annotations

import math
from pathlib import Path

from nsbench.report import fmt_timing, summary_rows
from nsbench.terminal_summary import summary_text

WER = {"wer": {"unit": "%", "higher_is_better": False}}


def wer_result(engine: str, mean: float, difference: float | None, rtf: float) -> dict:
    comparisons = {} if difference is None else {"passthrough": {"wer": {"all": {
        "verdict": "better" if difference < 0 else "worse", "mean_difference": difference, "p_value": 0.01, "n": 12}}}}
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


def test_a_lower_is_better_headline_says_so_and_what_the_signs_mean():
    text = unwrapped(summary_text("demo", wer_run(), [Path("r/report.md")]))
    assert text.splitlines()[0].startswith("nsbench demo: 12 clips; wer (%, lower is better) ranks the engines")
    assert "speex (-0.01)" in text
    assert "in brackets: the mean wer difference, engine minus passthrough; lower is better, so a negative one is an improvement" in text


def test_a_higher_is_better_headline_needs_no_key_to_its_signs():
    run = wer_run()
    for result in run:
        result["metric_definitions"] = {"wer": {"unit": "%", "higher_is_better": True}}
    assert "in brackets" not in summary_text("demo", run, [Path("r/report.md")])


def test_columns_nobody_computed_are_left_out_and_timings_never_read_zero():
    lines = summary_text("demo", wer_run(), [Path("r/report.md")]).splitlines()
    assert lines[1].split() == ["engine", "wer", "[95%", "CI]", "RTF", "flagged", "worst", "cell", "(wer", "there)"]
    rows = {line.split()[0]: line for line in lines[2:4]}
    assert "<0.001" in rows["passthrough"] and "0.000" not in rows["passthrough"] and "0.012" in rows["speex"]
    assert "–  –" not in "\n".join(lines[2:4])  # no column of dashes
    header, table = summary_rows(wer_run())
    assert "STOI" not in header and table[0][header.index("RTF (CPU)")] == "<0.001"


def test_timings_have_enough_digits():
    assert [fmt_timing(v) for v in (0.0, 0.0004, 0.0006, 0.0123, 1.5, math.nan)] == ["<0.001", "<0.001", "0.001", "0.012", "1.500", "–"]
