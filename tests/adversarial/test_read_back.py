"""Issue 36, reading a run back: what a results folder holds is a stranger's data.

F-03: report.md writes every name a dataset, plugin or engine gave as text, never as markup.
F-11: --compare compares like with like: the same dataset, options and metrics, on
      the clips both runs have; a mismatch is one line and no verdict (exit 4).
F-22: a structurally broken <engine>.json, earlier in the folder or a --compare
      target, is named in one line and left out; the report is written from the rest.

Real runs of the CLI on folder datasets (a few clips of one second), a real
command engine, and files tampered with as a user or an attacker could.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from nsbench.report.format import md, plain

from tests.helpers.audio import tone_and_noise, write_wav
from tests.helpers.plugins import ResidualEngine
from tests.helpers.reports import run_cli as run, section

RATE = 16000
QUIET = ["--jobs", "1", "--no-plots", "--no-html"]


def write_pair(root: Path, name: str, index: int, noise_gain: float = 1.0) -> None:
    clean, noise = tone_and_noise(index, seconds=1.0)
    write_wav(root / "clean" / f"{name}.wav", clean, RATE)
    write_wav(root / "noisy" / f"{name}.wav", clean + noise_gain * noise, RATE)


# --------------------------------------------------------------------------- F-03: names in report.md

TAG = "<img src=x onerror=alert(1)>"
LINK = "[x](javascript:alert(1))"
CELL = "<i onmouseover=alert(4)>"
# Markup a name could smuggle in: a tag, or an inline link or image (a "](" md did not escape).
MARKUP = re.compile(r"<img|<i |(?<!\\)\]\(")
COMMAND = "command:sh -c 'cp \"$0\" \"$1\"' {input} {output} '<img src=y onerror=alert(2)>'"


@pytest.mark.parametrize("name", [TAG, LINK, CELL, "__init__", "a*b*c", "`code`", "a\\", "&lt;script&gt;", "two\nlines"])
def test_F03_md_writes_a_name_as_text_and_plain_reads_it_back(name):
    """F-03: what md makes of a name holds no tag, link or code span, and plain (report.html's reading) gives the name back."""
    written = md(name)
    assert not MARKUP.search(written) and "\n" not in written
    assert plain(f"**{written}**") == name.replace("\n", " ")


def test_F03_report_md_escapes_clip_engine_cell_and_reason_names(tmp_path):
    """F-03: a clip named like a tag, one named like a link (its file empty, so it
    fails with its path in the reason), a data folder (the cell) named like a tag
    and a command engine whose name holds a tag: report.md holds none of them as markup."""
    root = tmp_path / CELL
    write_pair(root, TAG, 0)
    write_pair(root, "plain", 1)
    (root / "noisy" / f"{LINK}.wav").write_bytes(b"")
    write_wav(root / "clean" / f"{LINK}.wav", np.zeros(RATE, np.float32), RATE)
    code, _, err = run(["--dataset", "folder", "--data-folder", str(root), "--engine", COMMAND, "--metric", "si_sdri",
                        "--results-folder", str(tmp_path / "r"), "--quiet", *QUIET])
    assert code == 4 and "Traceback" not in err  # the empty file fails its clip
    report = (tmp_path / "r" / "folder" / "report.md").read_text()
    assert not MARKUP.search(report)
    engine = md(COMMAND).replace("|", "/")
    assert f"| {engine} | 3 | 1 |" in section(report, "Per engine: mean and worst cell")
    assert f"  - FLAG identical_to_input: " in section(report, "Checks: alignment and degenerate output") and f": {md(TAG)}, plain" in section(report, "Checks: alignment and degenerate output")
    assert f"| {md(CELL)} | {engine} |" in section(report, "Per cell")
    failed = section(report, "Failed clips")
    assert f"- **{engine}**, 1 clip ({md(LINK)}): cannot read " in failed and f"{md(CELL)}/noisy/{md(LINK)}.wav" in failed
    assert f"| {engine} | 1 | {md(TAG)} | set={md(CELL)} |" in section(report, "Worst clips")


# --------------------------------------------------------------------------- F-11: --compare compares like with like


def graded_set(root: Path, count: int = 12, noisy_gain: float = 1.0) -> Path:
    """c00-c04 nearly clean (SI-SDR about 30 dB), the rest noisy (about 0 dB): a mean over
    the first five clips is far above the mean over all, whatever the engine."""
    for index in range(count):
        write_pair(root, f"c{index:02d}", index, 0.05 if index < 5 else 2.0 * noisy_gain)
    return root


@pytest.fixture
def cli(tmp_path):
    def cli(data: Path, results: Path, *extra: str) -> tuple[int, str, str]:
        return run(["--dataset", "folder", "--data-folder", str(data), "--engine", "residual", "--metric", "si_sdr",
                    "--results-folder", str(results), "--quiet", *QUIET, *extra], plugins=(ResidualEngine(),))

    return cli


def comparison(results: Path) -> dict:
    return json.loads((results / "folder" / "comparison.json").read_text())


def test_F11_fewer_clips_now_are_compared_on_the_clips_both_runs_have(tmp_path, cli):
    """F-11: 5 clips against 12 stored: on c12dba3 their mean (the five easy clips) beat
    the stored mean over all twelve, so a worse engine passed. Now both sides are
    means over the same five clips: the regression is found, and the counts said."""
    data, stored = graded_set(tmp_path / "set"), tmp_path / "stored"
    assert cli(data, stored)[0] == 0
    code, _, err = cli(data, stored, "--limit", "5", "--residual", "0.5", "--compare", str(stored))  # in place: read before rewritten
    assert code == 3, err
    found = comparison(stored)
    assert found["clips"]["residual"] == {"compared": 5, "only_now": 0, "only_stored": 7}
    worse = {(row["cell"], row["metric"]) for row in found["rows"] if row["engine"] == "residual" and row["status"] == "worse"}
    assert worse == {("all clips", "si_sdr"), ("set=set", "si_sdr")}
    passthrough = [row for row in found["rows"] if row["engine"] == "passthrough"]
    assert {row["status"] for row in passthrough} == {"same"}
    report = (stored / "folder" / "report.md").read_text()
    assert "Clips compared (those both runs have): passthrough 5 (7 only stored); residual 5 (7 only stored)." in report


def test_F11_another_data_folder_is_not_compared_and_says_what_differs(tmp_path, cli):
    """F-11: on c12dba3 the passthrough "regressed" against a run on another data folder
    (exit 3). Now nothing is compared: one line names the options that differ, exit 4."""
    first, other = graded_set(tmp_path / "set"), graded_set(tmp_path / "other" / "set", noisy_gain=3.0)
    assert cli(first, tmp_path / "stored")[0] == 0
    code, _, err = cli(other, tmp_path / "now", "--compare", str(tmp_path / "stored"))
    assert code == 4
    lines = [line for line in err.splitlines() if "--compare" in line]
    assert len(lines) == 1 and "Traceback" not in err
    assert "passthrough, residual not compared, no verdict (exit code 4): other dataset options (data_folder: " in lines[0]
    assert f"{first} there, {other} now)" in lines[0]
    found = comparison(tmp_path / "now")
    assert found["rows"] == [] and found["regressions"] == 0 and set(found["not_compared"]) == {"passthrough", "residual"}
    assert "**No verdict**: no engine could be compared like with like (exit code 4)." in (tmp_path / "now" / "folder" / "report.md").read_text()


def test_F11_too_few_shared_clips_give_no_verdict(tmp_path, cli):
    """F-11: two clips against twelve passed on c12dba3 (the two easy clips' mean);
    now fewer than five shared clips give no verdict."""
    data = graded_set(tmp_path / "set")
    assert cli(data, tmp_path / "stored")[0] == 0
    code, _, err = cli(data, tmp_path / "now", "--limit", "2", "--compare", str(tmp_path / "stored"))
    assert code == 4
    assert "only 2 clips in common (0 only now, 10 only stored), fewer than 5" in err
    assert comparison(tmp_path / "now")["clips"]["residual"] == {"compared": 2, "only_now": 0, "only_stored": 10}


def test_F11_other_metric_settings_are_not_compared(tmp_path, cli):
    """F-11: the run identity's metrics differ (stoi added): not compared, the metrics named."""
    data = graded_set(tmp_path / "set", count=5)
    assert cli(data, tmp_path / "stored")[0] == 0
    code, _, err = cli(data, tmp_path / "now", "--metric", "stoi", "--compare", str(tmp_path / "stored"))
    assert code == 4 and "not compared, no verdict (exit code 4): other metrics (si_sdr)" in err


def test_F11_a_tampered_clips_jsonl_is_named_and_not_compared(tmp_path, cli):
    """F-11 with F-22: on other clips the stored .clips.jsonl is read; a line that is
    not a clip's is named with its line number, and that engine has no verdict."""
    data, stored = graded_set(tmp_path / "set", count=6), tmp_path / "stored"
    assert cli(data, stored)[0] == 0
    log = stored / "folder" / "residual.clips.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([lines[0], json.dumps({"clip_id": 5, "labels": {}, "scores": {}}), *lines[2:]]) + "\n")
    code, _, err = cli(data, tmp_path / "now", "--limit", "5", "--compare", str(stored))
    assert code == 4
    assert "residual not compared, no verdict (exit code 4): other clips (6 stored, 5 now) and residual.clips.jsonl: " \
           "line 2: $.clip_id: int where string is expected" in err
    assert comparison(tmp_path / "now")["clips"]["passthrough"]["compared"] == 5


# --------------------------------------------------------------------------- F-22: broken results read back


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def tamper(payload: dict, shape: str) -> str:
    """The payload as JSON text, broken in one way."""
    deep = None
    if shape == "a list instead of a dict":
        payload["cells"][0] = [payload["cells"][0]]
    elif shape == "no metrics":
        del payload["metrics"]
    elif shape == "a string for a number":
        payload["metrics"]["si_sdr"]["mean"] = "high"
        payload["failures"] = "none"
    elif shape == "nulls":
        payload["cells"] = None
        payload["worst_cell"] = {"metric": None, "cell": None, "mean": None}
    elif shape == "deeper than the parser goes":
        deep = nested(100_000)
    elif shape == "deeper than a result":
        deep = nested(600)
    if deep:
        payload["provenance"] = "DEEP"
    return json.dumps(payload).replace('"DEEP"', deep or '"DEEP"')


SHAPES = ["a list instead of a dict", "no metrics", "a string for a number", "nulls", "deeper than the parser goes",
          "deeper than a result"]
REASONS = {
    "a list instead of a dict": "$.cells[0]: list where object is expected",
    "no metrics": "$: missing 'metrics'",
    "a string for a number": "$.failures: str where integer is expected",
    "nulls": "$.cells: NoneType where array is expected",
    "deeper than the parser goes": "nested deeper than 32 levels",
    "deeper than a result": "nested deeper than 32 levels",
}


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory):
    """One run of passthrough and residual on three clips, to tamper with."""
    root = tmp_path_factory.mktemp("stored")
    data = graded_set(root / "set", count=3)
    assert run(["--dataset", "folder", "--data-folder", str(data), "--engine", "residual", "--metric", "si_sdr",
                "--results-folder", str(root / "results"), "--quiet", *QUIET], plugins=(ResidualEngine(),))[0] == 0
    return data, root / "results" / "folder"


@pytest.mark.parametrize("shape", SHAPES)
def test_F22_a_broken_earlier_result_is_left_out_and_the_report_written(tmp_path, cli, stored_run, shape):
    """F-22: an earlier engine's file (its run identity this run's) broken in one way:
    on c12dba3 the end of the run crashed (tables.py, format.py) or json's recursion
    escaped, and report.md stayed stale. Now it is named in one line, with the reason, and left out."""
    data, stored = stored_run
    shutil.copytree(stored.parent, tmp_path / "results", symlinks=True)  # the run's folder and results/folder, its link
    folder = tmp_path / "results" / "folder"
    (folder / "report.md").unlink()
    payload = json.loads((stored / "residual.json").read_text())
    payload["engine"] = "tampered"
    (folder / "tampered.json").write_text(tamper(payload, shape))
    code, out, err = run(["--dataset", "folder", "--data-folder", str(data), "--engine", "passthrough", "--metric", "si_sdr",
                          "--results-folder", str(tmp_path / "results"), *QUIET])
    assert code == 0 and "Traceback" not in err
    assert (out + err).count("tampered.json") == 1 and REASONS[shape] in " ".join(out.split())  # one line, wrapped to the terminal
    report = (folder / "report.md").read_text()
    left_out = section(report, "Not in this report")
    assert "- `tampered.json`: " in left_out and md(REASONS[shape]) in left_out and "| tampered |" not in report
    assert "| residual |" in section(report, "Per engine: mean and worst cell")  # the valid earlier file stays


@pytest.mark.parametrize("shape", SHAPES)
def test_F22_a_broken_compare_target_is_left_out_and_the_rest_compared(tmp_path, cli, stored_run, shape):
    """F-22: a --compare folder whose residual.json is broken: on c12dba3 the end of the
    run crashed (compare.py) after every engine had run. Now it is named in one line
    and left out; the passthrough is still compared."""
    data, stored = stored_run
    target = tmp_path / "target"
    shutil.copytree(stored, target)
    (target / "residual.json").write_text(tamper(json.loads((stored / "residual.json").read_text()), shape))
    code, _, err = cli(data, tmp_path / "now", "--compare", str(target))
    assert code == 0 and "Traceback" not in err
    named = [line for line in err.splitlines() if "residual.json" in line]
    assert len(named) == 1 and "left out" in named[0] and REASONS[shape] in named[0]
    found = comparison(tmp_path / "now")
    assert found["engines_compared"] == ["passthrough"] and "residual.json" in found["left_out"]
    assert "Left out of the stored results: residual.json: " in (tmp_path / "now" / "folder" / "report.md").read_text()


def test_F22_a_compare_target_with_no_valid_result_stops_before_the_run(tmp_path, cli, stored_run):
    """F-22: a single broken file as --compare: one line with the reason, exit 2, nothing run."""
    data, stored = stored_run
    target = tmp_path / "residual.json"
    target.write_text(tamper(json.loads((stored / "residual.json").read_text()), "nulls"))
    code, _, err = cli(data, tmp_path / "now", "--compare", str(target))
    assert code == 2 and not (tmp_path / "now").exists()
    assert err.strip().splitlines() == [f"nsbench: error: --compare {target}: no engine results (<engine>.json) there "
                                        f"(residual.json: does not match the results schema: {REASONS['nulls']}; "
                                        "$.worst_cell.metric: NoneType where string is expected; "
                                        "$.worst_cell.cell: NoneType where object is expected and 1 more)"]
