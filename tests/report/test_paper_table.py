"""The papers' table (nsbench.report.paper_table) on hand-made result payloads:
the input first, the set's columns in order at its precision, the flavour and
the source in the footnote, a metric undefined on some clips said so, LaTeX
that escapes what engine names may hold."""
from __future__ import annotations

import json
import math

import pytest

from nsbench.cli import main
from nsbench.report import paper_table

ROW = ("pesq_wb", "csig", "cbak", "covl", "ssnr", "stoi")
FLAVOUR = {"composite_flavour": "vbd", "about": "int16-scaled samples"}


def result(engine: str, means: dict[str, float], counts: dict[str, int] | None = None, flavour=FLAVOUR) -> dict:
    options = {name: flavour for name in ("csig", "cbak", "covl", "ssnr")} if flavour else {}
    return {
        "engine": engine,
        "metrics": {name: {"n": (counts or {}).get(name, 4), "mean": value} for name, value in means.items()},
        "metric_definitions": {name: {} for name in means},
        "provenance": {"metric_options": options},
    }


def row_means(base: float) -> dict[str, float]:
    return {name: base + index + 0.004 for index, name in enumerate(ROW)}


def test_one_row_per_engine_the_input_first_at_two_decimals(view):
    [table] = paper_table.paper_tables([result("my_engine", row_means(2.0)), result("passthrough", row_means(1.0))], view)
    assert table.name == "vbd-row" and table.columns == ("PESQ", "CSIG", "CBAK", "COVL", "SSNR", "STOI")
    assert table.rows == (
        ("Noisy (input)", ("1.00", "2.00", "3.00", "4.00", "5.00", "6.00")),
        ("my_engine", ("2.00", "3.00", "4.00", "5.00", "6.00", "7.00")),
    )


def test_the_footnote_names_the_source_the_flavour_and_the_clips_a_mean_leaves_out(view):
    counts = {"csig": 3, "covl": 3}
    [table] = paper_table.paper_tables([result("passthrough", row_means(1.0)), result("e", row_means(2.0), counts)], view)
    assert table.options == (("csig, cbak, covl, ssnr: composite_flavour vbd", "int16-scaled samples"),)
    assert "SEGAN (Pascual et al. 2017" in table.notes[0]
    assert table.undefined == ("e: csig over 3, covl over 3 of 4 clips (undefined on the rest; reasons per clip).",)
    text = paper_table.markdown(table)
    assert text.startswith("## Paper table: vbd-row\n\n| system | PESQ | CSIG |")
    assert "csig, cbak, covl, ssnr: composite_flavour vbd (int16-scaled samples)." in text


def test_runs_with_both_flavours_in_one_folder_name_both(view):
    floated = {"composite_flavour": "float", "about": "samples in [-1, 1]"}
    [table] = paper_table.paper_tables([result("a", row_means(1.0)), result("b", row_means(1.0), flavour=floated)], view)
    assert [short for short, _ in table.options] == ["csig, cbak, covl, ssnr: composite_flavour float",
                                                     "csig, cbak, covl, ssnr: composite_flavour vbd"]


def test_no_table_unless_every_metric_of_the_set_ran(view):
    partial = {name: 1.0 for name in ROW if name != "stoi"}
    assert paper_table.paper_tables([result("e", partial)], view) == []
    assert paper_table.paper_tables([], view) == []
    undefined_everywhere = result("e", row_means(1.0), {"csig": 0})
    [table] = paper_table.paper_tables([undefined_everywhere], view)
    assert table.rows[0][1][1] == "–"


def test_latex_is_a_tabular_with_escaped_names_and_the_flavour_in_its_last_row(view):
    results = [result("passthrough", row_means(1.0)), result("command:my_tool --gain 50% {x}", row_means(2.0))]
    text = paper_table.latex(paper_table.paper_tables(results, view), "voicebank")
    lines = text.splitlines()
    assert lines[0] == "% nsbench paper table 'vbd-row' on voicebank, written by nsbench."
    body = lines[lines.index(r"\begin{tabular}{lcccccc}"):]
    assert body[1:4] == [r"\hline", r"System & PESQ & CSIG & CBAK & COVL & SSNR & STOI \\", r"\hline"]
    assert body[4] == r"Noisy (input) & 1.00 & 2.00 & 3.00 & 4.00 & 5.00 & 6.00 \\"
    assert body[5] == r"command:my\_tool --gain 50\% \{x\} & 2.00 & 3.00 & 4.00 & 5.00 & 6.00 & 7.00 \\"
    assert body[7] == r"\multicolumn{7}{l}{\footnotesize csig, cbak, covl, ssnr: composite\_flavour vbd} \\"
    assert body[-1] == r"\end{tabular}" and text.endswith("\n")
    assert all(line.startswith("%") for line in lines[: lines.index(r"\begin{tabular}{lcccccc}")])


def test_a_nan_mean_is_a_dash_in_both_renderings(view):
    means = row_means(1.0) | {"ssnr": math.nan}
    [table] = paper_table.paper_tables([result("e", means)], view)
    assert table.rows[0][1][4] == "–"
    assert " & -- & " in paper_table.latex([table], "demo")


@pytest.mark.slow
def test_the_row_on_the_demo_whose_clean_voices_start_in_digital_silence(tmp_path):
    """The demo's clean voices are padded with digital silence (frames without an
    LPC model): CSIG and COVL still have a value on every clip that has a voice."""
    pytest.importorskip("pesq")
    argv = ["--engine", "speex", "--metric", "vbd-row", "--limit", "8", "--results-folder", str(tmp_path),
            "--no-html", "--no-plots", "--quiet", "--jobs", "1"]
    assert main(argv) == 0
    result = json.loads((tmp_path / "demo" / "speex.json").read_text())
    assert all(result["metrics"][name]["n"] == 8 for name in ("pesq_wb", "csig", "cbak", "covl", "ssnr", "stoi"))
    text = (tmp_path / "demo" / "paper-table.tex").read_text()
    assert "\nNoisy (input) & " in text and "\nspeex & " in text
    assert text.index("Noisy (input)") < text.index("\nspeex & ")
