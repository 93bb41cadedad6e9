"""--compare: the regression gate an engine developer puts in their CI."""
from __future__ import annotations

import json

import pytest

from nsbench.report.compare import EXIT_REGRESSION, engine_rows, parse_tolerances, tallied
from nsbench.plugins.errors import UserError

from tests.helpers.plugins import ResidualEngine, cli_with
from tests.helpers.audio import make_folder_dataset

METRICS = ["--metric", "si_sdri", "--metric", "stoi", "--metric", "music_attenuation_db", "--metric", "rtf_cpu"]


@pytest.fixture
def cli(tmp_path):
    run_cli = cli_with(ResidualEngine())
    data = make_folder_dataset(tmp_path / "set")

    def run(results: str, *extra: str) -> int:
        return run_cli(["--dataset", "folder", "--data-folder", str(data), "--engine", "residual", "--quiet", "--no-html",
                     "--no-plots", "--jobs", "1", "--results-folder", str(tmp_path / results), *METRICS, *extra])

    return run


def test_identical_run_passes_and_a_regression_exits_3(cli, tmp_path, capsys):
    assert cli("stored") == 0
    capsys.readouterr()
    assert cli("same", "--compare", str(tmp_path / "stored")) == 0
    # A comparison without regressions says so on the terminal too (issue 37).
    assert "no regression beyond tolerance" in capsys.readouterr().err
    comparison = json.loads((tmp_path / "same" / "folder" / "comparison.json").read_text())
    assert comparison["regressions"] == 0 and comparison["engines_compared"] == ["passthrough", "residual"]
    assert {row["status"] for row in comparison["rows"]} == {"same"}
    assert "rtf_cpu" not in {row["metric"] for row in comparison["rows"]}  # timing is never a regression
    assert "No regression beyond tolerance." in (tmp_path / "same" / "folder" / "report.md").read_text()

    assert cli("worse", "--residual", "0.5", "--compare", str(tmp_path / "stored" / "folder")) == EXIT_REGRESSION
    # The terminal names the engine and the metrics that got worse (issue 37), not a bare count.
    assert "6 values worse than" in (err := capsys.readouterr().err)
    assert "residual si_sdri (2 values), stoi (2 values), music_attenuation_db (2 values)" in " ".join(err.split())
    rows = json.loads((tmp_path / "worse" / "folder" / "comparison.json").read_text())["rows"]
    worse = {(row["engine"], row["cell"], row["metric"]) for row in rows if row["status"] == "worse"}
    # SI-SDRi and STOI fall; music attenuation (lower is better) rises: all three are regressions.
    assert worse == {("residual", cell, metric) for cell in ("all clips", "set=set") for metric in ("si_sdri", "stoi", "music_attenuation_db")}
    report = (tmp_path / "worse" / "folder" / "report.md").read_text()
    assert "**REGRESSION**: 6 values worse than stored beyond tolerance (exit code 3)" in report

    # A looser tolerance lets the small change through; a better engine never fails the gate.
    assert cli("loose", "--residual", "0.5", "--compare", str(tmp_path / "stored"), "--compare-tolerance", "5") == 0
    assert cli("better", "--residual", "0.2", "--compare", str(tmp_path / "stored" / "folder" / "residual.json")) == 0


def test_a_missing_cell_or_more_failures_is_a_regression():
    def summary(failures, cells):
        return {"failures": failures, "metrics": {"m": {"mean": 1.0}},
                "cells": [{"cell": {"snr": c}, "metrics": {"m": {"mean": 1.0}}} for c in cells]}

    rows = engine_rows("e", {"m": {"unit": "dB", "higher_is_better": True}}, summary(1, ["0"]), summary(0, ["0", "5"]), {})
    assert {(row["cell"], row["metric"], row["status"]) for row in rows if row["status"] != "same"} == {
        ("all clips", "failures", "worse"), ("snr=5", "m", "missing now")}
    assert tallied(rows, ["e"], [])["regressions"] == 2


def test_bad_compare_arguments_are_one_line(cli, tmp_path, capsys):
    assert cli("r", "--compare", str(tmp_path / "nowhere")) == 2
    assert f"--compare {tmp_path / 'nowhere'}: no such file or folder" in capsys.readouterr().err
    with pytest.raises(UserError, match="expected 0.1 or METRIC=0.1"):
        parse_tolerances(["stoi=lots"])
    assert parse_tolerances(["0.1", "stoi=0.01"]) == {None: 0.1, "stoi": 0.01}


def test_results_of_another_format_version_are_refused_in_one_line(cli, tmp_path, capsys):
    assert cli("stored") == 0
    capsys.readouterr()
    stored = tmp_path / "stored" / "folder" / "residual.json"
    result = json.loads(stored.read_text())
    assert result["format_version"] == 2
    del result["format_version"]  # written before versions: version 1, FUSS means over clips
    stored.write_text(json.dumps(result))
    assert cli("now", "--compare", str(stored)) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error == [f"nsbench: error: --compare {stored}: results format version 1, this nsbench writes version 2; their figures "
                     "are not comparable: run the stored version's command again with this nsbench to get a baseline"]
