"""What a new user tripped over (issue 37), one test per case; the README's
printed lines themselves run in tests/cli/test_readme_examples.py.

N-01 a command: template's relative paths; N-02 its python3 inside the venv;
N-03 a user's python: model missing, refused before anything runs; N-04 a
model named by its file; N-05 one folder per run identity; N-06 the cache's
location out of the identity; N-07 to N-11 the smaller things (case in a
name, --limit 0, one-line flag errors, an interval on too few clips, the
plugin skeleton's pytest).
"""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from nsbench.cli import main
from nsbench.plugins.errors import UserError
from nsbench.plugins.registry import closest_name
from nsbench.report import coverage, run_folders
from nsbench.report.tables import hodges_lehmann_text
from tests.helpers.paths import REPO_ROOT
from tests.helpers.reports import engine_result_files

QUICK = ["--quiet", "--no-html", "--no-plots", "--jobs", "1", "--metric", "si_sdr"]

GATE = """
import numpy as np

def gate(audio, sample_rate):
    return (audio * np.float32(0.5)).astype(np.float32)
"""


def test_n01_a_command_templates_relative_paths_resolve_from_where_the_user_stands(tmp_path, monkeypatch):
    from nsbench.builtin.engines.user_models import CommandEngine

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "halve.py").write_text(
        "import sys, soundfile\n"
        "audio, rate = soundfile.read(sys.argv[1], dtype='float32')\n"
        "soundfile.write(sys.argv[2], audio * 0.5, rate, subtype='FLOAT')\n")
    monkeypatch.chdir(tmp_path)
    engine = CommandEngine("python3 tools/halve.py {input} {output}", 16000, "wav-float", 30.0)
    try:
        audio = np.linspace(-0.5, 0.5, 1600, dtype=np.float32)
        np.testing.assert_allclose(engine.process(audio), audio * 0.5, atol=1e-7)
    finally:
        engine.close()


def test_n02_python3_in_a_template_is_the_interpreter_running_nsbench():
    from nsbench.builtin.engines.user_models import program_path

    beside = Path(sys.executable).parent / "python3"
    if not beside.exists():
        pytest.skip(f"no python3 beside {sys.executable}")
    assert program_path("python3") == str(beside)
    assert program_path("/bin/sh") == "/bin/sh"  # a path stays as written


def test_n03_a_missing_user_model_stops_the_run_before_the_baseline_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["--engine", "python:mygate:gate", "--limit", "2", "--results-folder", str(tmp_path / "r"), *QUICK])
    error = capsys.readouterr().err
    assert code == 2
    assert "cannot import mygate" in error and str(tmp_path) in error and "PYTHONPATH" in error
    assert not (tmp_path / "r").exists()  # nothing ran, nothing written


def test_n04_a_user_model_named_by_its_file_runs(tmp_path, monkeypatch):
    (tmp_path / "mygate.py").write_text(GATE)
    monkeypatch.chdir(tmp_path)
    name = "python:./mygate.py:gate"
    assert main(["--engine", name, "--limit", "2", "--results-folder", str(tmp_path / "r"), *QUICK]) == 0
    (result,) = [json.loads(p.read_text()) for p in engine_result_files(tmp_path / "r" / "demo")
                 if json.loads(p.read_text())["engine"] == name]
    assert result["clips"] == 2


def test_n05_runs_of_other_identities_get_folders_of_their_own(tmp_path):
    results = tmp_path / "r"
    for limit in ("2", "3"):
        assert main(["--engine", "passthrough", "--limit", limit, "--results-folder", str(results), *QUICK]) == 0
    folders = sorted(p.name for p in results.iterdir() if p.is_dir() and not p.is_symlink())
    assert len(folders) == 2 and all(name.startswith("demo-") for name in folders)
    counts = {json.loads((results / name / "passthrough.json").read_text())["clips"] for name in folders}
    assert counts == {2, 3}  # neither run replaced the other
    latest = results / "demo"
    assert latest.is_symlink() and json.loads((latest / "passthrough.json").read_text())["clips"] == 3
    assert not Path(os.readlink(latest)).is_absolute()  # a copied results folder keeps it working


def test_n05_a_results_folder_of_an_older_nsbench_is_left_as_it_is(tmp_path, capsys):
    older = tmp_path / "demo"
    older.mkdir()
    (older / "speex.json").write_text("{}")
    note = run_folders.point_latest(tmp_path, "demo", tmp_path / "demo-12345678")
    assert "stays as it is" in note and (older / "speex.json").read_text() == "{}"


def test_n06_the_cache_folder_is_not_part_of_the_run_identity():
    described = {"seed": 0, "content_sha256": "ab" * 32, "folder": "/home/a/.cache/nsbench/demo", "bundle": "/x/demo_audio"}
    moved = {**described, "folder": "/scratch/cache/demo"}
    identity = [coverage.run_identity("demo", d, ["a", "b"], {"si_sdr": "1"}, (), None, None) for d in (described, moved)]
    assert identity[0] == identity[1]
    other_content = {**described, "content_sha256": "cd" * 32}
    assert coverage.run_identity("demo", other_content, ["a", "b"], {"si_sdr": "1"}, (), None, None) != identity[0]


def test_n07_a_name_that_differs_only_in_case_gets_a_did_you_mean(capsys):
    assert closest_name("RNNoise", ["deepfilternet", "rnnoise", "speex"]) == "rnnoise"
    assert main(["--engine", "RNNoise", "--limit", "1", *QUICK]) == 2
    assert "Did you mean: rnnoise?" in capsys.readouterr().err


def test_n08_limit_zero_is_refused_as_such(capsys):
    assert main(["--limit", "0", *QUICK]) == 2
    error = capsys.readouterr().err
    assert "--limit must be at least 1" in error and "has no clips" not in error


@pytest.mark.parametrize("argv", [["--list", "engine"], ["--no-such-flag"]])
def test_n09_a_bad_flag_is_one_line_not_the_usage(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    error = capsys.readouterr().err
    assert stop.value.code == 2
    assert error.count("\n") == 1 and "usage:" not in error and "--help" in error


def test_n10_an_interval_on_too_few_clips_reads_as_such():
    text = hodges_lehmann_text({"hodges_lehmann": 1.07, "hl_ci95": [-math.inf, math.inf]}, 2)
    assert "too few clips for an interval" in text and "inf" not in text
    assert hodges_lehmann_text({"hodges_lehmann": 1.07, "hl_ci95": [0.5, 1.5]}, 2) == "1.07 [0.50, 1.50]"


def test_n11_the_plugin_skeleton_says_its_tests_need_pytest(tmp_path, capsys):
    assert main(["new-plugin", "my-engine", "--folder", str(tmp_path)]) == 0
    readme = (tmp_path / "nsbench-my-engine" / "README.md").read_text()
    assert "pip install pytest" in readme and "pytest" in capsys.readouterr().out


def test_n05_a_link_the_user_made_is_left_as_it_is(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "demo").symlink_to(tmp_path / "elsewhere")
    note = run_folders.point_latest(tmp_path, "demo", tmp_path / "demo-12345678")
    assert "stays as it is" in note and os.readlink(tmp_path / "demo") == str(tmp_path / "elsewhere")


def test_n15_a_missing_package_is_one_line_naming_the_install(tmp_path):
    """``python benchmark.py`` where the requirements are not installed (here
    the interpreter without its site-packages, ``-S``) was a traceback, exit 1."""
    import subprocess

    done = subprocess.run([sys.executable, "-S", str(REPO_ROOT / "benchmark.py"), "--list", "engines"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert " has no " in line and "pip install -r requirements.txt" in line and ". .venv/bin/activate" in line
