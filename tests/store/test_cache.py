"""The cache of outputs and scores: keys, checksums, --rerun, --no-cache, and
resuming a run killed with a real SIGKILL.

The engine and the metric here are a real plugin file (tests.helpers.plugins)
that logs each call, with the clip's length (which differs per clip), to the
file named by $CALL_LOG, so the tests count exactly what each run computed. The metric also scores the
baseline, passthrough, which every run adds: twice per clip."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nsbench.store import cache, codec
from nsbench.store.keys import clip_digest
from nsbench.cli import main

from tests.helpers.audio import make_folder_dataset, tone_and_noise
from tests.helpers.paths import REPO_ROOT
from tests.helpers.plugins import HALVING_ENERGY_PLUGIN, logged_lengths

CLIPS = 8


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A folder dataset whose clips have distinct lengths, the plugin, and the call log."""
    data = make_folder_dataset(tmp_path / "data", CLIPS, seconds=clip_seconds)
    plugin = tmp_path / "halving_plugin.py"
    plugin.write_text(HALVING_ENERGY_PLUGIN)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("CALL_LOG", str(log))
    return data, plugin, log


def clip_seconds(index: int) -> float:
    return 0.5 + 0.05 * index


def lengths() -> list[int]:
    return [len(tone_and_noise(index, seconds=clip_seconds(index))[0]) for index in range(CLIPS)]


def argv(setup, results: Path, *extra: str) -> list[str]:
    data, plugin, _ = setup
    return ["--plugin", str(plugin), "--engine", "halving", "--metric", "energy", "--metric", "si_sdr", "--dataset", "folder",
            "--data-folder", str(data), "--results-folder", str(results), "--jobs", "1", "--quiet", "--no-plots", "--no-html", *extra]


def clip_lines(results: Path, engine: str = "halving") -> list[dict]:
    return [json.loads(line) for line in (results / "folder" / f"{engine}.clips.jsonl").read_text().splitlines()]


def scores(results: Path) -> dict[str, dict]:
    return {row["clip_id"]: row["scores"] for row in clip_lines(results)}


def test_a_second_run_computes_nothing_and_gives_the_same_numbers(setup, tmp_path):
    _, _, log = setup
    assert main(argv(setup, tmp_path / "first")) == 0
    assert sorted(logged_lengths(log, "engine")) == sorted(lengths()) and sorted(logged_lengths(log, "metric")) == sorted(2 * lengths())
    log.unlink()
    assert main(argv(setup, tmp_path / "second")) == 0
    assert logged_lengths(log, "engine") == [] and logged_lengths(log, "metric") == []
    first, second = clip_lines(tmp_path / "first"), clip_lines(tmp_path / "second")
    assert [row["from_cache"] for row in first] == [False] * CLIPS and [row["from_cache"] for row in second] == [True] * CLIPS
    note = f"{CLIPS} of {CLIPS} outputs from the cache, with the timings of the run that made them"
    assert note in json.loads((tmp_path / "second" / "folder" / "halving.json").read_text())["engine_info"]["notes"]
    assert f"{note}." in (tmp_path / "second" / "folder" / "report.md").read_text()
    # The same numbers, timings included (they are the first run's).
    for row in first + second:
        row.pop("from_cache")
    assert first == second


def test_rerun_recomputes_everything_and_no_cache_touches_nothing(setup, tmp_path, private_run_cache):
    _, _, log = setup
    assert main(argv(setup, tmp_path / "a", "--no-cache")) == 0
    assert list(private_run_cache.iterdir()) == []  # nothing written
    assert main(argv(setup, tmp_path / "b")) == 0
    log.unlink()
    assert main(argv(setup, tmp_path / "c", "--rerun")) == 0
    assert sorted(logged_lengths(log, "engine")) == sorted(lengths())
    assert scores(tmp_path / "a") == scores(tmp_path / "b") == scores(tmp_path / "c")


def test_a_new_metric_is_computed_on_the_cached_outputs_without_running_the_engine(setup, tmp_path):
    _, _, log = setup
    assert main(argv(setup, tmp_path / "first")) == 0
    log.unlink()
    assert main(argv(setup, tmp_path / "second", "--metric", "si_sdri")) == 0
    assert logged_lengths(log, "engine") == [] and logged_lengths(log, "metric") == []
    assert all("si_sdri" in row["scores"] for row in clip_lines(tmp_path / "second"))


def test_keys_follow_the_engine_options_and_code_but_not_the_harness_flags(setup, tmp_path):
    _, plugin, log = setup
    assert main(argv(setup, tmp_path / "a")) == 0
    log.unlink()
    # Where results go, how many jobs, plots: the same outputs.
    assert main(argv(setup, tmp_path / "b", "--limit", "3")) == 0
    assert logged_lengths(log, "engine") == []
    # An edited engine: new keys, and its new numbers.
    plugin.write_text(plugin.read_text().replace("GAIN = 0.5", "GAIN = 0.25"))
    assert main(argv(setup, tmp_path / "c")) == 0
    assert sorted(logged_lengths(log, "engine")) == sorted(lengths())
    energy_a = scores(tmp_path / "a")["utt0"]["energy"]
    assert scores(tmp_path / "c")["utt0"]["energy"] == pytest.approx(energy_a / 4, rel=1e-6)


def test_keys_follow_an_option_added_by_a_plugin(setup, tmp_path):
    _, plugin, log = setup
    plugin.write_text(plugin.read_text() + textwrap.dedent(
        """
        @hookimpl
        def add_arguments(parser):
            parser.add_argument("--halving-strength", type=float, default=1.0)
        """
    ))
    assert main(argv(setup, tmp_path / "a")) == 0
    log.unlink()
    assert main(argv(setup, tmp_path / "b", "--halving-strength", "2")) == 0
    assert sorted(logged_lengths(log, "engine")) == sorted(lengths())


def halving_entry(root: Path, kind: str, length: int) -> Path:
    """The cache file of halving's output (or scores) of the clip of that
    length: of the two outputs of that length, the quieter one."""
    outputs = []
    for path in root.rglob("*.output"):
        audio = codec.decode(cache.parse_entry(path.read_bytes())[1])
        if len(audio) == length:
            outputs.append((float(np.sum(audio.astype(np.float64) ** 2)), path))
    assert len(outputs) == 2
    return min(outputs)[1].with_suffix(f".{kind}")


@pytest.mark.parametrize("kind", ["output", "scores"])
def test_a_corrupt_entry_is_detected_removed_and_recomputed(setup, tmp_path, private_run_cache, capsys, kind):
    _, _, log = setup
    assert main(argv(setup, tmp_path / "first")) == 0
    victim = halving_entry(private_run_cache, kind, lengths()[3])
    data = bytearray(victim.read_bytes())
    data[-5] ^= 0x40  # one bit in the payload
    victim.write_bytes(bytes(data))
    log.unlink()
    capsys.readouterr()
    assert main(argv(setup, tmp_path / "second")) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("nsbench: corrupt cache entry")]
    assert len(warnings) == 1 and warnings[0].endswith(
        f"/{victim.parent.name}/{victim.name}: its checksum does not match its contents; removed and recomputed")
    # Exactly that clip recomputed: its output (engine and metric), or its scores (metric only).
    assert logged_lengths(log, "metric") == [lengths()[3]] and logged_lengths(log, "engine") == ([lengths()[3]] if kind == "output" else [])
    assert scores(tmp_path / "first") == scores(tmp_path / "second")
    assert cache.parse_entry(victim.read_bytes())  # rewritten whole


def test_cache_entries_round_trip_and_refuse_damage(tmp_path):
    store = cache.Cache(tmp_path)
    audio = np.linspace(-1, 1, 1001, dtype=np.float32)
    store.put_output("ab" * 32, cache.CachedOutput(audio, 0.25, 0.5, "0 samples at 16000 Hz"))
    back = store.get_output("ab" * 32)
    np.testing.assert_array_equal(back.audio, audio)
    assert (back.cpu_seconds, back.wall_seconds, back.delay) == (0.25, 0.5, "0 samples at 16000 Hz")
    assert back.audio.flags.writeable
    sources = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # a separation output, not contiguous
    store.put_output("ef" * 32, cache.CachedOutput(sources, 0.0, 0.0, ""))
    np.testing.assert_array_equal(store.get_output("ef" * 32).audio, sources)
    # The payload is the compact codec's (nsbench.store.codec; tests/store/test_cache_compact.py), decoded alone too.
    np.testing.assert_array_equal(codec.decode(cache.parse_entry(store.path("ef" * 32, "output").read_bytes())[1]), sources)
    path = store.path("ab" * 32, "output")
    for damage in (b"", b"garbage", path.read_bytes()[:-10]):
        path.write_bytes(damage)
        assert store.get_output("ab" * 32) is None and not path.exists()
    assert len(store.warnings) == 3 and all("removed and recomputed" in w for w in store.warnings)
    assert cache.Cache(tmp_path, read=False).get_scores("cd" * 32) == {}
    assert list(tmp_path.rglob("*.tmp")) == []  # no temporary file left behind


def test_clip_keys_depend_on_every_sample():
    clean, noise = tone_and_noise(0)
    from nsbench.plugins.records import Clip

    one = Clip("a", clean + noise, clean, 16000)
    nudged = (clean + noise).copy()
    nudged[1234] = np.nextafter(nudged[1234], np.float32(1))
    assert clip_digest(one) == clip_digest(Clip("other-id", clean + noise, clean, 16000))
    assert clip_digest(one) != clip_digest(Clip("a", nudged, clean, 16000))
    assert clip_digest(one) != clip_digest(Clip("a", clean + noise, clean, 8000))


def test_list_cache_shows_where_and_how_big_and_clear_empties_it(setup, tmp_path, monkeypatch, capsys):
    private_cache = tmp_path / "cache"  # its own: this test empties it
    monkeypatch.setenv("NSBENCH_CACHE", str(private_cache))
    assert main(argv(setup, tmp_path / "first")) == 0
    capsys.readouterr()
    assert main(["--list", "cache"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith(f"cache: {private_cache} ")
    runs = next(line for line in shown if line.split()[0] == cache.RUNS_FOLDER)
    # an output and a scores entry per clip and engine (with passthrough), a marker per engine, the FORMAT file
    assert int(runs.split()[1]) == 2 * 2 * CLIPS + 2 + 1
    assert main(["--clear-cache"]) == 0
    assert capsys.readouterr().out.startswith(f"removed {private_cache}: ")
    assert not private_cache.exists()


def test_a_run_killed_with_sigkill_resumes_computing_only_what_was_missing(setup, tmp_path):
    """A real SIGKILL to a real process half-way; the same command then
    finishes the run with every clip scored once."""
    _, _, log = setup
    results = tmp_path / "results"
    command = [sys.executable, "benchmark.py", *argv(setup, results)]
    process = subprocess.Popen(command, cwd=REPO_ROOT, env={**os.environ, "ENGINE_SLEEP": "0.3"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jsonl = results / "folder" / "halving.clips.jsonl"
    deadline = time.monotonic() + 120
    while not (jsonl.is_file() and len(jsonl.read_text().splitlines()) >= CLIPS // 2):
        assert process.poll() is None and time.monotonic() < deadline, "the run ended or stalled before half-way"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    done_before = {row["clip_id"] for row in clip_lines(results)}
    first_engine = logged_lengths(log, "engine")
    assert CLIPS // 2 <= len(done_before) < CLIPS
    log.unlink()

    resumed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    rows = clip_lines(results)
    assert sorted(row["clip_id"] for row in rows) == sorted(f"utt{index}" for index in range(CLIPS))
    assert all(row["error"] is None for row in rows)
    assert {row["clip_id"] for row in rows if row["from_cache"]} >= done_before
    # The resumed run computed only clips not finished before, each once.
    length_of = dict(zip((f"utt{index}" for index in range(CLIPS)), lengths()))
    again_engine, again_metric = logged_lengths(log, "engine"), logged_lengths(log, "metric")
    assert not set(again_engine) & {length_of[clip] for clip in done_before}
    assert not set(again_metric) & {length_of[clip] for clip in done_before}
    # (passthrough, run first, was complete: only halving's clips are scored)
    assert len(again_engine) == len(set(again_engine)) and len(again_metric) == len(set(again_metric))
    assert set(again_engine) <= set(again_metric)
    assert sorted(set(first_engine) | set(again_engine)) == sorted(lengths())
    assert len(again_engine) <= CLIPS - len(done_before)
    # And the numbers are those of an uninterrupted run.
    assert main(argv(setup, tmp_path / "clean", "--no-cache")) == 0
    assert scores(results) == scores(tmp_path / "clean")
    assert json.loads((results / "folder" / "halving.json").read_text())["clips"] == CLIPS
