"""What a run's reports and exit code say about all it did: earlier runs'
results in the same folder (covered, or listed with the reason they are
not), failed clips with their reasons, exit code 4, what the cache served,
and cached outputs re-scored in the workers."""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from nsbench.cli import main
from nsbench.report.format import md

from tests.helpers.audio import make_folder_dataset
from tests.helpers.paths import REPO_ROOT
from tests.helpers.plugins import HALVING_ENERGY_PLUGIN, logged_pids
from tests.helpers.reports import run_cli as run, section

QUIET = ["--jobs", "1", "--no-plots"]


def table_engines(report: str) -> list[str]:
    rows = section(report, "Per engine: mean and worst cell").strip().splitlines()[2:]
    return [row.split("|")[1].strip() for row in rows]


# --------------------------------------------------------------------------- earlier runs in the folder


def test_a_later_run_reports_the_earlier_engines_and_says_what_it_leaves_out(tmp_path, monkeypatch):
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache"))
    results = tmp_path / "results"
    folder = results / "folder"

    data = make_folder_dataset(tmp_path / "data", 4)

    def clips(count: int, *flags: str) -> tuple[int, str, str]:
        return run(["--dataset", "folder", "--data-folder", str(data), "--limit", str(count), "--results-folder", str(results),
                    *QUIET, *flags])

    assert clips(4, "--engine", "speex")[0] == 0
    code, out, _ = clips(4, "--engine", "noisereduce")
    assert code == 0
    report = (folder / "report.md").read_text()
    assert table_engines(report) == ["passthrough", "noisereduce", "speex"]
    assert "**From earlier runs:** speex (" in report
    assert "from an earlier run" in section(report, "Engines").split("- speex")[1]
    assert "Not in this report" not in report
    html = (folder / "report.html").read_text()
    assert 'id="earlier-runs"' in html and "<td>speex</td>" in html
    assert "the report also holds speex, from an earlier run" in out
    # speex.json itself is left as its run wrote it.
    assert "from_earlier_run" not in json.loads((folder / "speex.json").read_text())

    # Other clips, other metrics: each run identity has a folder of its own
    # (nsbench.report.run_folders), so no report replaces another's.
    four = folder.resolve()
    code, out, _ = clips(3, "--engine", "noisereduce")
    assert code == 0
    three = folder.resolve()
    assert three != four and "Not in this report" not in (three / "report.md").read_text()
    assert table_engines((three / "report.md").read_text()) == ["passthrough", "noisereduce"]
    assert table_engines((four / "report.md").read_text()) == ["passthrough", "noisereduce", "speex"]
    assert clips(3, "--engine", "speex", "--metric", "si_sdr")[0] == 0
    assert table_engines((folder / "report.md").read_text()) == ["passthrough", "speex"]
    assert folder.resolve() not in (three, four) and table_engines((three / "report.md").read_text()) == ["passthrough", "noisereduce"]


def test_a_file_from_before_run_identities_is_listed_not_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache"))
    data = make_folder_dataset(tmp_path / "data", 2)
    common = ["--dataset", "folder", "--data-folder", str(data), "--results-folder", str(tmp_path), *QUIET, "--no-html"]
    assert run([*common, "--engine", "speex"])[0] == 0
    old = json.loads((tmp_path / "folder" / "speex.json").read_text())
    del old["run_identity"]
    (tmp_path / "folder" / "speex.json").write_text(json.dumps(old))
    (tmp_path / "folder" / "notes.json").write_text("{not json")
    code, out, _ = run([*common, "--engine", "noisereduce"])
    assert code == 0
    report = (tmp_path / "folder" / "report.md").read_text()
    left_out = section(report, "Not in this report")
    assert "- `speex.json`: written by an older nsbench" in left_out
    assert "- `notes.json`: cannot read it:" in left_out
    assert "speex" not in table_engines(report)


# --------------------------------------------------------------------------- failed clips and exit code 4


def broken_folder(root: Path) -> Path:
    """Three good pairs, three empty noisy files (one reason) and a corrupt one (its own)."""
    data = make_folder_dataset(root, 3)
    for name in ("empty_a", "empty_b", "empty_c"):
        (data / "noisy" / f"{name}.wav").write_bytes(b"")
        (data / "clean" / f"{name}.wav").write_bytes((data / "clean" / "utt0.wav").read_bytes())
    (data / "noisy" / "corrupt.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 20)
    (data / "clean" / "corrupt.wav").write_bytes((data / "clean" / "utt0.wav").read_bytes())
    return data


def test_failed_clips_are_in_both_reports_grouped_by_reason_and_the_run_exits_4(tmp_path):
    data = broken_folder(tmp_path / "data")
    code, out, err = run(["--dataset", "folder", "--data-folder", str(data), "--engine", "speex", "--no-cache",
                          "--results-folder", str(tmp_path / "r"), *QUIET])
    assert code == 4
    folder = tmp_path / "r" / "folder"
    assert {"passthrough.json", "speex.json", "report.md", "report.html"} <= {p.name for p in folder.iterdir()}  # all written
    failed = section((folder / "report.md").read_text(), "Failed clips")
    empty = next(line for line in err.splitlines() if "failed on empty_a" in line).split("failed on empty_a: ")[1]
    corrupt = next(line for line in err.splitlines() if "speex failed on corrupt" in line).split("failed on corrupt: ")[1]
    assert "the file is empty (0 bytes)" in empty
    # One reason for the three empty files, their own names in it made one placeholder.
    for engine in ("passthrough", "speex"):
        # report.md escapes the placeholder (nsbench.report.format.md): "<clip>" would be an HTML tag there.
        assert f"- **{engine}**, 3 clips (empty_a, empty_b, empty_c): {md(empty.replace('empty_a', '<clip>'))}" in failed
        assert f"- **{engine}**, 1 clip (corrupt): {corrupt}" in failed
    html = (folder / "report.html").read_text()
    assert 'id="failed-clips"' in html and "3 clips (empty_a, empty_b, empty_c)" in html
    assert "exit code 4: passthrough failed on 4 clips; speex failed on 4 clips" in out


def test_a_run_without_failures_has_no_failed_section_and_exits_0(tmp_path):
    data = make_folder_dataset(tmp_path / "data", 2)
    code, out, _ = run(["--dataset", "folder", "--data-folder", str(data), "--engine", "speex", "--no-cache",
                        "--results-folder", str(tmp_path / "r"), *QUIET, "--no-html"])
    assert code == 0 and "exit code" not in out
    assert "## Failed clips" not in (tmp_path / "r" / "folder" / "report.md").read_text()


def test_koala_without_a_key_exits_4_after_writing_the_others(tmp_path, monkeypatch):
    pytest.importorskip("pvkoala")
    from engines.koala import KEY_VARIABLE  # noqa: the built-in adapter, as the registry loads it

    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    data = make_folder_dataset(tmp_path / "data", 2)
    code, out, err = run(["--dataset", "folder", "--data-folder", str(data), "--engine", "koala", "--no-cache",
                          "--results-folder", str(tmp_path), *QUIET, "--no-html"])
    assert code == 4
    assert "koala skipped" in err and (tmp_path / "folder" / "passthrough.json").is_file()
    assert "koala" in section((tmp_path / "folder" / "report.md").read_text(), "Engines that did not run")
    assert "exit code 4: koala did not run" in out


REGRESSING_PLUGIN = textwrap.dedent(
    """
    import os
    import numpy as np
    from nsbench.plugins.hookspecs import hookimpl
    from nsbench.plugins.specs import EngineSpec

    class Hiss:
        sample_rate, delay = 16000, 0
        def process(self, audio):
            if len(audio) == int(os.environ.get("FAIL_ON_LENGTH", "-1")):
                raise RuntimeError("asked to fail")
            level = float(os.environ.get("HISS", "0"))
            return audio + level * np.random.default_rng(0).standard_normal(len(audio)).astype(audio.dtype)
        def close(self):
            pass

    @hookimpl
    def register_engines(register):
        register(EngineSpec(name="hiss", factory=lambda options: Hiss(), description="adds noise", sample_rate=16000, delay=0))
    """
)


def test_a_regression_with_failed_clips_exits_3_not_4(tmp_path, monkeypatch):
    """3 (worse than --compare) outranks 4 (something left out)."""
    plugin = tmp_path / "hiss_plugin.py"
    plugin.write_text(REGRESSING_PLUGIN)
    data = make_folder_dataset(tmp_path / "data", 4, seconds=lambda index: 1.0 + 0.1 * index)
    common = ["--plugin", str(plugin), "--engine", "hiss", "--dataset", "folder", "--data-folder", str(data), "--metric", "si_sdr",
              "--no-cache", *QUIET, "--no-html"]
    assert run([*common, "--results-folder", str(tmp_path / "good")])[0] == 0
    monkeypatch.setenv("FAIL_ON_LENGTH", "16000")
    assert run([*common, "--results-folder", str(tmp_path / "failing")])[0] == 4
    monkeypatch.setenv("HISS", "0.5")
    code, _, _ = run([*common, "--results-folder", str(tmp_path / "worse"), "--compare", str(tmp_path / "good")])
    assert code == 3


def test_the_manual_lists_every_exit_code():
    codes = section((REPO_ROOT / "docs" / "failures.md").read_text(), "Exit codes")
    for code in ("0", "1", "2", "3", "4", "130", "143"):
        assert f"| {code} |" in codes, code
    assert "a signal's code wins, then 2, then 3, then 4" in codes


# --------------------------------------------------------------------------- the cache


def test_a_repeated_run_says_how_many_clips_came_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache"))
    data = make_folder_dataset(tmp_path / "data", 3)
    common = ["--dataset", "folder", "--data-folder", str(data), "--engine", "speex", "--results-folder", str(tmp_path / "r"),
              *QUIET, "--no-html"]
    code, out, _ = run(common)
    assert code == 0 and "from the cache" not in out
    assert "From the cache" not in (tmp_path / "r" / "folder" / "report.md").read_text()
    code, out, _ = run(common)
    assert "from the cache: all 6 clip runs; timings as first run" in out
    assert "From the cache: all 6 clip runs" in (tmp_path / "r" / "folder" / "report.md").read_text()
    # A run with one more engine: the cache served some of the clip runs, named per engine.
    code, out, _ = run([*common, "--engine", "noisereduce"])
    assert "from the cache: 6 of 9 clip runs (passthrough 3 of 3, speex 3 of 3); timings as first run" in out
    assert json.loads((tmp_path / "r" / "folder" / "speex.json").read_text())["from_cache"] == {"outputs": 3, "runs": 3}


def clip_scores(results: Path) -> list[tuple[str, dict]]:
    lines = (results / "folder" / "halving.clips.jsonl").read_text().splitlines()
    return [(row["clip_id"], {k: v for k, v in row["scores"].items() if not k.startswith("rtf")}) for row in map(json.loads, lines)]


@pytest.fixture
def cached_outputs(tmp_path, monkeypatch):
    """Two caches holding the halving engine's outputs and si_sdr, but no energy."""
    plugin = tmp_path / "pid_plugin.py"
    plugin.write_text(HALVING_ENERGY_PLUGIN)
    data = make_folder_dataset(tmp_path / "data", 6, seconds=1.0)
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "first.log"))
    common = ["--plugin", str(plugin), "--engine", "halving", "--dataset", "folder", "--data-folder", str(data),
              "--quiet", "--no-plots", "--no-html", "--metric", "si_sdr"]
    for cache in ("serial", "parallel"):
        monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / f"cache-{cache}"))
        assert main([*common, "--jobs", "1", "--results-folder", str(tmp_path / "first")]) == 0
    return tmp_path, common


def test_a_new_metric_on_cached_outputs_is_scored_in_the_worker_processes(cached_outputs, monkeypatch):
    tmp_path, common = cached_outputs
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache-parallel"))
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "parallel.log"))
    assert main([*common, "--metric", "energy", "--jobs", "2", "--results-folder", str(tmp_path / "parallel")]) == 0
    pids = logged_pids(tmp_path / "parallel.log", "metric")
    assert len(pids) == 6 * 2  # each clip, passthrough and halving
    assert os.getpid() not in pids and len(set(pids)) >= 2  # in the workers, not here
    assert logged_pids(tmp_path / "parallel.log", "engine") == []  # the outputs came from the cache

    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache-serial"))
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "serial.log"))
    assert main([*common, "--metric", "energy", "--jobs", "1", "--results-folder", str(tmp_path / "serial")]) == 0
    assert set(logged_pids(tmp_path / "serial.log", "metric")) == {os.getpid()}
    # The same process's arithmetic on the same cached arrays: exactly equal.
    assert clip_scores(tmp_path / "parallel") == clip_scores(tmp_path / "serial")
    assert all("energy" in scores for _, scores in clip_scores(tmp_path / "parallel"))
