"""report.md's tables on hand-made result payloads: the bad-tail column named
by its percentile, each cell's confidence interval, the worst clips with their
audio links, the baselines that did not run, counts in words."""
from __future__ import annotations

import math

from nsbench.report.html_report import checks_html
from nsbench.report.markdown import baselines_text, checks_lines
from nsbench.report.tables import cell_rows, summary_rows, worst_rows

DEFINITIONS = {"si_sdri": {"unit": "dB", "higher_is_better": True}}


def stats(mean, ci=(math.nan, math.nan)):
    return {"n": 3, "mean": mean, "median": mean, "p5": mean - 2, "p95": mean + 2, "mean_ci95": list(ci)}


def result(engine, definitions=DEFINITIONS, **extra):
    return {
        "engine": engine, "clips": 3, "failures": 0, "stoi": 0.9, "rtf": 0.01, "rtf_wall": 0.02,
        "metrics": {"si_sdri": stats(3.0, (2.0, 4.0))}, "metric_definitions": definitions,
        "cells": [{"cell": {"snr_db": "0"}, "clips": 2, "failures": 0, "metrics": {"si_sdri": stats(1.0, (0.5, 1.5))}},
                  {"cell": {"snr_db": "5"}, "clips": 1, "failures": 0, "metrics": {"si_sdri": stats(5.0)}}],
        "worst_cell": {"metric": "si_sdri", "cell": {"snr_db": "0"}, "mean": 1.0},
        "alignment": {"text": "sample-aligned"}, "flags": {}, "expected_flags": {}, **extra,
    }


def test_the_bad_tail_is_named_by_its_percentile(view):
    header, rows = summary_rows([result("e")], view)
    assert header[5] == "p5 (bad tail)" and rows[0][5] == "1.00" and rows[0][4] == "[2.00, 4.00]"
    lower = {"si_sdri": {"unit": "dB", "higher_is_better": False}}
    header, rows = summary_rows([result("e", lower)], view)
    assert header[5] == "p95 (bad tail)" and rows[0][5] == "5.00"


def test_each_cell_shows_the_headline_interval_and_a_single_clip_none(view):
    header, rows = cell_rows([result("e")], ["snr_db"], view)
    assert header[-1] == "si_sdri 95% CI"
    assert [row[-1] for row in rows] == ["[0.50, 1.50]", "–"]


def test_worst_clips_name_the_clip_and_link_its_audio():
    picks = [{"run": "utt 2#b", "labels": {"snr_db": "0"}, "metric": "si_sdri", "value": -1.234, "audio": "audio/e/utt 2#b.wav"},
             {"run": "utt3", "labels": {"snr_db": "5"}, "metric": "si_sdri", "value": 0.5}]
    _, rows = worst_rows([result("e", worst_clips=picks)])
    assert rows[0] == ["e", "1", "utt 2#b", "snr_db=0", "si_sdri", "-1.23", "[listen](audio/e/utt%202%23b.wav)"]
    assert rows[1][-1] == "–"  # no audio kept


def test_a_baseline_that_did_not_run_is_named():
    # Each engine's info names the baselines it was compared with (the specs that declare ``baseline``).
    info = {"engine_info": {"compared_with": ["passthrough", "rnnoise"]}}
    assert "Not run, so not compared with: rnnoise (add --engine rnnoise)." in baselines_text([result("passthrough", **info), result("e", **info)])
    assert "Not run" not in baselines_text([result("passthrough", **info), result("rnnoise", **info), result("e", **info)])


def test_flag_counts_are_in_words():
    flags = {"silent": {"description": "output is silent", "clips": ["a"]}}
    expected = {"identical_to_input": {"description": "", "clips": ["a"], "expected": "by definition"}}
    engine = result("e", flags=flags, expected_flags=expected)
    lines = checks_lines(engine)
    assert lines[1] == "  - FLAG silent: output is silent; 1 clip: a" and lines[2].endswith(": 1 clip")
    many = result("e", flags={"silent": {"description": "d", "clips": [f"c{i}" for i in range(12)]}})
    assert checks_lines(many)[1].endswith("12 clips: c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 and 2 more")
    page = checks_html(engine)
    assert "1 clip: a</li>" in page and "1 clips" not in page and "by definition): 1 clip</li>" in page
    assert "c11</li>" in checks_html(many)  # the page names every clip


def test_the_per_cell_verdicts_are_counted_in_cells():
    from nsbench.report.tables import baseline_rows

    def verdict(v):
        return {"n": 8, "mean_difference": 1.0, "hodges_lehmann": 0.9, "hl_ci95": [0.25, 1.5], "ci_method": "exact",
                "p_value": 0.01 if v != "not distinguishable" else 0.5, "verdict": v}

    cells = [{"cell": {"snr_db": s}, **verdict(v)} for s, v in (("0", "better"), ("5", "better"), ("10", "not distinguishable"))]
    engine = result("e", comparisons={"passthrough": {"si_sdri": {"all": verdict("better"), "cells": cells}}})
    header, rows = baseline_rows([engine])
    assert rows == [["e", "passthrough", "si_sdri", "8", "1.000", "0.900 [0.250, 1.500] exact", "0.010", "better",
                     "better in 2 cells, not distinguishable in 1 cell"]]
