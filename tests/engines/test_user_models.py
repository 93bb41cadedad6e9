"""The user's own model: python:, command: and an installed plugin package."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nsbench.cli import main
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.report.model import RUN_FILE_STEMS, file_stem
from nsbench.run.engine_run import EngineRun
from nsbench.run.runner import run_engine
from nsbench.plugins.errors import UserError

from tests.helpers.paths import REPO_ROOT
from tests.helpers.lazy import LazyModule
from tests.helpers.reports import engine_result_files
from tests.run.test_runner import metrics, sources

sys.path.insert(0, str(REPO_ROOT))
python_model = LazyModule("examples.python_model")  # it imports scipy.signal: ~2 s of every collection


def engine(name: str, **options):
    spec = build_registry(get_plugin_manager(load_entry_points=False)).engines.require_available(name).spec
    defaults = {"python_rate": 16000, "command_rate": 16000, "command_format": "wav-float", "command_timeout": 30.0}
    return spec, {**defaults, **options}


def outputs(name: str, count: int = 2, **options):
    spec, opts = engine(name, **options)
    return list(run_engine(EngineRun(spec, opts, metrics("si_sdri")), sources(count)))


def test_python_function_engine_runs_the_users_function():
    outcomes = outputs("python:examples.python_model:denoise")
    noisy = sources(1)[0].load().noisy
    np.testing.assert_array_equal(outcomes[0].output, python_model.denoise(noisy, 16000))
    assert outcomes[0].record.engine == "python:examples.python_model:denoise"


def test_python_class_engine_runs_the_users_class():
    outcomes = outputs("python:examples.python_model:Denoiser")
    noisy = sources(1)[0].load().noisy
    np.testing.assert_array_equal(outcomes[0].output, python_model.Denoiser().process(noisy))


def test_python_engine_bad_targets_are_user_errors():
    for target, message in [
        ("python:examples.python_model", "expected python:package.module:function"),
        ("python:no_such_pkg_xyz.mod:f", "cannot import no_such_pkg_xyz.mod"),
        ("python:examples.python_model:missing", "has no attribute missing"),
    ]:
        spec, options = engine(target)
        with pytest.raises(UserError, match=message):
            list(run_engine(EngineRun(spec, options, metrics("si_sdr")), sources(1)))


def command(*argv: str) -> str:
    import shlex

    return "command:" + " ".join(shlex.quote(a) for a in argv)


def test_command_engine_runs_the_program_per_clip():
    outcomes = outputs(command(sys.executable, str(REPO_ROOT / "examples" / "command_model.py"), "--in", "{input}", "--out", "{output}"))
    assert [o.record.failed for o in outcomes] == [False, False]
    noisy = sources(1)[0].load().noisy
    # The example gates its quietest frames to 0.3: output is a per-sample gain of 1 or 0.3.
    ratio = (outcomes[0].output / np.where(noisy == 0, 1, noisy))[noisy != 0]
    gated = np.isclose(ratio, 0.3, rtol=1e-5)
    assert np.all(gated | np.isclose(ratio, 1.0, rtol=1e-5)) and 0 < gated.mean() < 1


def test_command_arguments_with_spaces_quotes_and_semicolons_stay_whole(tmp_path):
    program = tmp_path / "my model; rm -rf 'x'.py"
    program.write_text(
        textwrap.dedent(
            """
            import sys, shutil
            assert len(sys.argv) == 3, sys.argv
            shutil.copy(sys.argv[1], sys.argv[2])
            """
        )
    )
    outcomes = outputs(command(sys.executable, str(program), "{input}", "{output}"), count=1)
    assert not outcomes[0].record.failed, outcomes[0].record.error
    np.testing.assert_array_equal(outcomes[0].output, sources(1)[0].load().noisy)
    assert (tmp_path / "x").exists() is False


def faulty_program(tmp_path, fault: str):
    """A program that fails with ``fault`` on its first run only (a marker file counts runs)."""
    program = tmp_path / "faulty.py"
    marker = tmp_path / "ran"
    program.write_text(
        "import os, shutil, signal, sys, time\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        f"    {fault}\n"
        "shutil.copy(sys.argv[1], sys.argv[2])\n"
    )
    return command(sys.executable, str(program), "{input}", "{output}")


@pytest.mark.parametrize(
    "fault, message, options",
    [
        ("sys.stderr.write('model weights missing'); sys.exit(3)", r"python3?[\d.]* failed \(exit code 3\): model weights missing", {}),
        ("os.kill(os.getpid(), signal.SIGSEGV)", r"python3?[\d.]* failed \(signal 11\)", {}),
        ("time.sleep(60)", r"python3?[\d.]* timed out after 1 s and was killed", {"command_timeout": 1.0}),
        ("sys.exit(0)", r"python3?[\d.]* exited without writing \{output\}", {}),
    ],
)
def test_command_failures_fail_one_clip_and_the_next_is_scored(tmp_path, fault, message, options):
    import re

    outcomes = outputs(faulty_program(tmp_path, fault), count=2, **options)
    assert outcomes[0].record.failed and re.fullmatch(message, outcomes[0].record.error), outcomes[0].record.error
    assert not outcomes[1].record.failed and "si_sdri" in outcomes[1].record.scores


def test_command_without_placeholders_is_refused():
    spec, options = engine("command:sox in.wav out.wav")
    with pytest.raises(UserError, match=r"needs \{input\} and \{output\}"):
        list(run_engine(EngineRun(spec, options, metrics("si_sdr")), sources(1)))


def test_command_engine_leaves_no_temporary_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    outputs(command(sys.executable, str(REPO_ROOT / "examples" / "command_model.py"), "--in", "{input}", "--out", "{output}"), count=1)
    assert list(tmp_path.iterdir()) == []


def test_plugin_package_installs_and_is_found_by_entry_point(tmp_path):
    target = tmp_path / "site"
    package = tmp_path / "plugin_package"  # a copy: building in place would leave build/ in the repo
    shutil.copytree(REPO_ROOT / "examples" / "plugin_package", package)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target), str(package)],
        check=True, capture_output=True,
    )
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "NSBENCH_CACHE": str(tmp_path / "cache")}
    listing = subprocess.run(
        [sys.executable, "benchmark.py", "--list", "engines"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    row = next(line for line in listing.splitlines() if line.startswith("gentle-gate "))
    assert "entry point (nsbench-example-plugin)" in row and "0.1.0" in row
    results = tmp_path / "results"
    subprocess.run(
        [sys.executable, "benchmark.py", "--engine", "gentle-gate", "--limit", "3", "--quiet", "--results-folder", str(results)],
        cwd=REPO_ROOT, env=env, check=True, capture_output=True,
    )
    result = json.loads((results / "demo" / "gentle-gate.json").read_text())
    assert result["clips"] == 3 and result["engine_info"]["origin"] == "entry point (nsbench-example-plugin)"


def test_cli_writes_engine_names_with_odd_characters_as_safe_file_names(tmp_path):
    name = command(sys.executable, str(REPO_ROOT / "examples" / "command_model.py"), "--in", "{input}", "--out", "{output}")
    assert main(["--engine", name, "--limit", "2", "--quiet", "--results-folder", str(tmp_path)]) == 0
    files = sorted(p.name for p in (tmp_path / "demo").iterdir() if p.suffix in (".json", ".jsonl") and p.stem not in RUN_FILE_STEMS)
    assert "passthrough.json" in files and len(files) == 4  # each engine's .json and .clips.jsonl
    assert all("/" not in f and "{" not in f and " " not in f for f in files)


DELAY_BY = str(REPO_ROOT / "tests" / "programs" / "delay_by.py")


def delayed_run(tmp_path, capsys, folder: str, samples: int, *flags: str) -> tuple[dict, str]:
    """The demo's first 3 clips through delay_by.py: its <engine>.json (with its
    clips' lines as ``clip_lines``) and the terminal summary."""
    argv = ["--engine", command(sys.executable, DELAY_BY, str(samples), "{input}", "{output}"), "--limit", "3",
            "--metric", "si_sdri", "--metric", "stoi", "--no-plots", "--results-folder", str(tmp_path / folder), *flags]
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    results = [json.loads(p.read_text()) for p in engine_result_files(tmp_path / folder / "demo")]
    result = next(r for r in results if r["engine"] != "passthrough")
    lines = (tmp_path / folder / "demo" / f"{file_stem(result['engine'])}.clips.jsonl").read_text().splitlines()
    return {**result, "clip_lines": [json.loads(line) for line in lines]}, out


def per_clip(result: dict, metric: str) -> dict[str, float]:
    return {clip["clip_id"]: clip["scores"][metric] for clip in result["clip_lines"]}


def test_a_declared_command_delay_is_removed_and_its_name_replaces_the_command_line(tmp_path, capsys):
    """A program that outputs its input 40 samples late: undeclared, it scores
    as a shifted output and the summary says how to fix it; with
    --command-delay 40 the harness removes the lag (through the spec's delay,
    as for any engine) and it scores as the undelayed program, clip by clip,
    under the --command-name the reports show."""
    undelayed, _ = delayed_run(tmp_path, capsys, "zero", 0, "--no-html")
    late, late_summary = delayed_run(tmp_path, capsys, "late", 40, "--no-html")
    declared, summary = delayed_run(tmp_path, capsys, "declared", 40, "--command-delay", "40", "--command-name", "late-40")
    assert late["alignment"]["constant_lag"]["samples"] == 40
    unwrapped = late_summary.replace("\n  ", " ")
    assert f"lag: {late['engine']} is late by 40 samples at 16000 Hz on 3 of 3 clips" in unwrapped
    assert "--align-constant-lag" in unwrapped and "--command-delay" in unwrapped
    # The same program, the same clips, the delay removed exactly: only the float formatting of the files could differ.
    for metric in ("si_sdri", "stoi"):
        expected, got = per_clip(undelayed, metric), per_clip(declared, metric)
        assert got.keys() == expected.keys()
        for clip in expected:
            assert got[clip] == pytest.approx(expected[clip], rel=1e-9, abs=1e-9), (metric, clip)
        assert min(per_clip(late, "si_sdri").values()) < min(expected.values()) - 3  # the lag costs: the test measures something
    assert declared["engine"] == "late-40" and declared["engine_info"]["declared_delay"] == 40
    assert DELAY_BY in declared["engine_info"]["description"]  # the whole command line, kept in the JSON
    assert declared["alignment"]["sample_aligned"] and "lag:" not in summary
    folder = tmp_path / "declared" / "demo"
    assert (folder / "late-40.json").is_file()
    for text in (summary, (folder / "report.md").read_text(), (folder / "report.html").read_text()):
        assert "late-40" in text and "delay_by.py" not in text.replace(str(folder), "")


def test_command_flags_that_cannot_be_applied_are_user_errors(tmp_path):
    program = command(sys.executable, DELAY_BY, "0", "{input}", "{output}")
    base = ["--engine", program, "--limit", "1", "--quiet", "--results-folder", str(tmp_path)]
    assert main([*base, "--command-delay", "-3"]) == 2
    assert main([*base, "--command-name", "passthrough"]) == 2  # an engine's name already
    assert main([*base, "--engine", command(sys.executable, DELAY_BY, "1", "{input}", "{output}"), "--command-name", "mine"]) == 2


def test_the_command_delay_counts_samples_at_the_command_rate(tmp_path, capsys):
    """At --command-rate 48000 the program lags 120 samples (2.5 ms, 40 at the
    clips' 16 kHz): --command-delay 120 removes exactly that, and the scores
    are the undelayed program's at the same rate."""
    rate = ["--command-rate", "48000", "--no-html"]
    undelayed, _ = delayed_run(tmp_path, capsys, "zero48", 0, *rate)
    declared, _ = delayed_run(tmp_path, capsys, "declared48", 120, *rate, "--command-delay", "120")
    assert declared["alignment"]["sample_aligned"] and declared["engine_info"]["delays_removed"] == {"120 samples at 48000 Hz": 3}
    expected, got = per_clip(undelayed, "si_sdri"), per_clip(declared, "si_sdri")
    assert got.keys() == expected.keys()
    assert all(got[clip] == pytest.approx(expected[clip], rel=1e-9, abs=1e-9) for clip in expected)
