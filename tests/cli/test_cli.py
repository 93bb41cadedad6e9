"""The CLI end to end: result files, their keys, report.md against the JSON, errors."""
from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.report.format import fmt_value
from nsbench.store.folders import MARKER

from tests.helpers.audio import make_folder_dataset, tone_and_noise, write_wav
from tests.helpers.paths import REPO_ROOT
from tests.helpers.plugins import cli_with

EXAMPLE_PLUGIN = str(REPO_ROOT / "examples" / "spectral_subtraction_plugin.py")
ENGINE_KEYS = {
    "engine", "dataset", "stoi", "rtf", "rtf_wall", "clips", "runs", "failures", "failed_clips", "metrics",
    "cells", "worst_cell", "metric_definitions", "dataset_description", "provenance", "engine_info",
    "alignment", "flags", "expected_flags", "worst_clips", "typical_clips", "comparisons", "format_version", "metric_notes",
    "reference_use", "run_identity", "from_cache",
}
STATS_KEYS = {"n", "mean", "median", "mad", "p5", "p95", "mean_ci95", "median_ci95"}
# A pooled metric's figures (FUSS SI-SNR: over scored pairs) add these.
POOLED_STATS_KEYS = STATS_KEYS | {"std", "pairs", "clip_mean", "pooled_over", "pooling"}
# Beside the JSON and report.md: report.html, its audio, the plots, and the folder's marker and lock.
REPORT_FILES = [
    MARKER, "audio", "forest.png", "gain_per_cell.png", "ranking.json", "report.html", "report.md", "rtf.png", "snr_music_attenuation_db.png",
    "snr_si_sdr.png", "snr_si_sdri.png", "snr_stoi.png", "snr_voice_level_db.png",
]
PROVENANCE_KEYS = {"nsbench_version", "command_line", "git_commit", "python", "platform", "packages", "time_utc", "jobs"}
CLIP_KEYS = {"engine", "clip_id", "labels", "scores", "undefined", "error", "notes", "duration", "cpu_seconds", "wall_seconds", "source_path", "delay", "seed",
             "sample_rate", "residual_lag", "lag_unmeasured", "flags", "from_cache", "pooled", "metric_notes"}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One small demo run shared by the tests that read its files."""
    results = tmp_path_factory.mktemp("results")
    audio = tmp_path_factory.mktemp("audio")
    argv = ["--plugin", EXAMPLE_PLUGIN, "--engine", "spectral-subtraction", "--limit", "28",
            "--results-folder", str(results), "--output-folder", str(audio), "--quiet"]
    assert main(argv) == 0
    return results / "demo", audio


def test_demo_run_writes_every_file_with_the_documented_keys(demo_run):
    folder, audio = demo_run
    assert sorted(p.name for p in folder.iterdir()) == sorted([
        "passthrough.clips.jsonl", "passthrough.json", "spectral-subtraction.clips.jsonl", "spectral-subtraction.json",
        *REPORT_FILES,
    ])
    for engine in ("passthrough", "spectral-subtraction"):
        result = json.loads((folder / f"{engine}.json").read_text())
        assert set(result) == ENGINE_KEYS
        assert set(result["provenance"]) == PROVENANCE_KEYS
        assert result["clips"] == 28 and result["failures"] == 0
        assert re.fullmatch(r"[0-9a-f]{64}", result["dataset_description"]["content_sha256"])
        for name, stats in result["metrics"].items():
            assert set(stats) == (POOLED_STATS_KEYS if name in ("fuss_sisnr", "fuss_sisnri") else STATS_KEYS), name
        lines = (folder / f"{engine}.clips.jsonl").read_text().splitlines()
        assert len(lines) == 28 and all(set(json.loads(line)) == CLIP_KEYS for line in lines)
        assert len(list((audio / engine).glob("*.wav"))) == 28


def test_picovoice_keys_are_the_clip_means(demo_run):
    folder, _ = demo_run
    result = json.loads((folder / "spectral-subtraction.json").read_text())
    clips = [json.loads(line) for line in (folder / "spectral-subtraction.clips.jsonl").read_text().splitlines()]
    stoi = [c["scores"]["stoi"] for c in clips if "stoi" in c["scores"]]
    assert result["stoi"] == pytest.approx(np.mean(stoi))
    assert result["rtf"] == pytest.approx(sum(c["cpu_seconds"] for c in clips) / sum(c["duration"] for c in clips))


def test_passthrough_improves_nothing_on_any_demo_clip(demo_run):
    folder, _ = demo_run
    clips = [json.loads(line) for line in (folder / "passthrough.clips.jsonl").read_text().splitlines()]
    gains = [c["scores"]["si_sdri"] for c in clips if "si_sdri" in c["scores"]]
    # 28 clips: the 24 noisy cells, one music-only, one clean, two more noisy.
    # Music-only and clean-voice clips have no SI-SDRi.
    assert len(gains) == 26
    assert all(gain == 0.0 for gain in gains)
    music = [c["scores"]["music_attenuation_db"] for c in clips if "music_attenuation_db" in c["scores"]]
    assert music and all(value == 0.0 for value in music)


def test_the_report_footer_and_the_results_name_the_demos_sources(demo_run):
    from nsbench.builtin.datasets import demo

    folder, _ = demo_run
    assert json.loads((folder / "passthrough.json").read_text())["dataset_description"]["attribution"] == demo.ATTRIBUTION_TEXT
    assert (folder / "report.md").read_text().endswith(f"## Audio sources\n\n{demo.ATTRIBUTION_TEXT}\n")
    footer = (folder / "report.html").read_text().split("<h2>Audio sources</h2>")[1]
    assert html.escape(demo.ATTRIBUTION_TEXT) in footer and "</body>" in footer
    # Every source the bundle's licences ask to credit is named.
    for credit in ("LibriSpeech", "gezortenplotz", "alex36917", "Tomlija", "Pete Warden", "Medley-solos-DB", "vocadito",
                   "datasets/demo_audio/ATTRIBUTION.md"):
        assert credit in demo.ATTRIBUTION_TEXT


def report_rows(report: str) -> dict[tuple[str, str, str], list[str]]:
    """The per-cell table of report.md: (noise, snr_db, engine) -> cells."""
    table = report.split("## Per cell")[1].split("##")[0].strip().splitlines()
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    rows = {}
    for line in table[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[tuple(cells[:3])] = dict(zip(header, cells))
    return rows


def test_report_numbers_equal_the_json(demo_run, view):
    folder, _ = demo_run
    rows = report_rows((folder / "report.md").read_text())
    checked = 0
    for engine in ("passthrough", "spectral-subtraction"):
        result = json.loads((folder / f"{engine}.json").read_text())
        for cell in result["cells"]:
            row = rows[(cell["cell"]["noise"], cell["cell"]["snr_db"], engine)]
            assert row["n"] == str(cell["clips"])
            for name, title, decimals in view.table_columns():
                if name not in cell["metrics"]:  # a metric not run (wer is optional) has no column
                    assert title not in row
                    continue
                expected = fmt_value(name, cell["metrics"][name]["mean"], decimals)  # timings below 0.001 read <0.001
                assert row[title] == expected, (engine, cell["cell"], title)
                checked += expected != "–"
    assert checked > 100


def test_report_shows_baseline_first_and_worst_cell(demo_run):
    folder, _ = demo_run
    report = (folder / "report.md").read_text()
    summary = report.split("## Per engine: mean and worst cell")[1].split("##")[0]
    engine_rows = [line.split("|")[1].strip() for line in summary.strip().splitlines()[2:]]
    assert engine_rows == ["passthrough", "spectral-subtraction"]
    result = json.loads((folder / "spectral-subtraction.json").read_text())
    worst = result["worst_cell"]
    means = [c["metrics"]["si_sdri"]["mean"] for c in result["cells"] if c["metrics"]["si_sdri"]["n"]]
    assert worst["metric"] == "si_sdri" and worst["mean"] == min(means)
    assert f"noise={worst['cell']['noise']}, snr_db={worst['cell']['snr_db']}" in summary
    assert "without mean removal" in report


def test_folder_dataset_end_to_end(tmp_path):
    data = make_folder_dataset(tmp_path / "my set")
    assert main(["--dataset", "folder", "--data-folder", str(data), "--results-folder", str(tmp_path / "r"), "--quiet"]) == 0
    result = json.loads((tmp_path / "r" / "folder" / "passthrough.json").read_text())
    assert result["clips"] == 3 and result["cells"][0]["cell"] == {"set": "my set"}
    assert result["metrics"]["si_sdri"]["mean"] == 0.0


def test_stereo_and_rate_mismatch_are_noted_once(tmp_path, capsys):
    data = make_folder_dataset(tmp_path / "d", count=1)
    clean, noise = tone_and_noise(0)
    write_wav(data / "noisy" / "utt0.wav", np.stack([clean + noise] * 2, axis=1), 16000)
    write_wav(data / "clean" / "utt0.wav", clean[::2], 8000)
    argv = ["--dataset", "folder", "--data-folder", str(data), "--results-folder", str(tmp_path / "r"), "--quiet",
            "--plugin", EXAMPLE_PLUGIN, "--engine", "spectral-subtraction"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("nsbench: note on utt0: utt0.wav: 2 channels downmixed to mono") == 1
    assert err.count("nsbench: note on utt0: clean resampled from 8000 Hz to 16000 Hz") == 1
    record = json.loads((tmp_path / "r" / "folder" / "spectral-subtraction.clips.jsonl").read_text())
    assert "clean resampled from 8000 Hz to 16000 Hz" in record["notes"]


def test_folder_dataset_lists_unpaired_files(tmp_path, capsys):
    data = make_folder_dataset(tmp_path / "d")
    (data / "clean" / "utt1.wav").rename(data / "clean" / "other.wav")
    assert main(["--dataset", "folder", "--data-folder", str(data), "--quiet"]) == 2
    assert "2 files in only one of noisy/ and clean/" in capsys.readouterr().err
    

def test_a_broken_file_fails_its_clip_and_the_run_goes_on(tmp_path, capsys):
    data = make_folder_dataset(tmp_path / "d")
    (data / "noisy" / "utt1.wav").write_bytes(b"")
    assert main(["--dataset", "folder", "--data-folder", str(data), "--results-folder", str(tmp_path / "r"), "--quiet"]) == 4  # every result written; utt1 failed
    result = json.loads((tmp_path / "r" / "folder" / "passthrough.json").read_text())
    assert result["failures"] == 1 and result["clips"] == 3
    assert result["failed_clips"][0]["clip_id"] == "utt1"
    assert "passthrough failed on utt1: cannot read" in capsys.readouterr().err


def test_an_engine_that_cannot_start_is_one_line_and_leaves_no_files(tmp_path, capsys):
    data = make_folder_dataset(tmp_path / "d", count=1)
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", "rnnoise",
            "--rnnoise-demo-path", str(tmp_path / "no_such_demo"), "--results-folder", str(tmp_path / "r"), "--quiet"]
    assert main(argv) == 4  # rnnoise, asked for by name, could not start
    err = capsys.readouterr().err
    assert f"nsbench: rnnoise skipped: --rnnoise-demo-path {tmp_path / 'no_such_demo'}: no such program" in err
    folder = tmp_path / "r" / "folder"
    assert sorted(p.name for p in folder.iterdir() if p.suffix in (".json", ".jsonl", ".md")) == [
        "passthrough.clips.jsonl", "passthrough.json", "report.md"]
    assert "- rnnoise: --rnnoise-demo-path" in (folder / "report.md").read_text()


def test_missing_data_folder_is_one_line(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["--dataset", "folder", "--data-folder", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == f"nsbench: error: data folder not found: {missing}"


def test_dataset_that_needs_a_folder_says_so(capsys):
    assert main(["--dataset", "folder"]) == 2
    assert "dataset 'folder' needs --data-folder" in capsys.readouterr().err


class FlagPlugin:
    """A plugin that adds a flag (add_arguments) and a dataset (register_datasets)
    whose clips depend on it."""

    @hookimpl
    def add_arguments(self, parser):
        parser.add_argument("--tone-count", type=int, default=1)

    @hookimpl
    def register_datasets(self, register):
        from nsbench.plugins.records import Clip, ClipSource
        from nsbench.plugins.specs import DatasetSpec

        def clips(options):
            made = []
            for index in range(options["tone_count"]):
                clean, noise = tone_and_noise(index)
                clip = Clip(f"tone{index}", clean + noise, clean, 16000, labels={"kind": "tone"})
                made.append(ClipSource(clip.clip_id, (lambda c=clip: c), clip.labels))
            return made

        register(DatasetSpec(name="tones", clips=clips, description="test tones", cell_keys=("kind",)))


def test_plugin_flags_reach_the_dataset(tmp_path):
    run_cli = cli_with(FlagPlugin())
    assert run_cli(["--dataset", "tones", "--tone-count", "4", "--results-folder", str(tmp_path), "--quiet"]) == 0
    assert json.loads((tmp_path / "tones" / "passthrough.json").read_text())["clips"] == 4


class SeededPlugin:
    """An engine whose output depends on its seed, as a generative model's does."""

    @hookimpl
    def register_engines(self, register):
        from nsbench.builtin.engines.passthrough import Passthrough
        from nsbench.plugins.specs import EngineSpec

        class Dithering(Passthrough):
            def __init__(self, seed):
                super().__init__()
                self.rng = np.random.default_rng(seed)

            def process(self, audio):
                return (audio + 0.01 * self.rng.standard_normal(len(audio))).astype(np.float32)

        register(EngineSpec(name="dithering", factory=lambda options: Dithering(options["seed"]),
                            description="seeded test engine", sample_rate=16000, delay=0, seeded=True))


def test_seeds_run_seeded_engines_once_per_seed_and_deterministic_ones_once(tmp_path):
    run_cli = cli_with(SeededPlugin())
    data = make_folder_dataset(tmp_path / "d", count=2)
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", "dithering", "--seeds", "0-2",
            "--results-folder", str(tmp_path / "r"), "--quiet"]
    assert run_cli(argv) == 0
    folder = tmp_path / "r" / "folder"
    rows = [json.loads(line) for line in (folder / "dithering.clips.jsonl").read_text().splitlines()]
    assert sorted((r["clip_id"], r["seed"]) for r in rows) == [(f"utt{c}", s) for c in range(2) for s in range(3)]
    assert len({r["scores"]["si_sdr"] for r in rows}) == 6  # each seed gives a different output
    result = json.loads((folder / "dithering.json").read_text())
    assert result["clips"] == 2 and result["runs"] == 6
    per_clip = [np.mean([r["scores"]["si_sdr"] for r in rows if r["clip_id"] == c]) for c in ("utt0", "utt1")]
    assert result["metrics"]["si_sdr"]["median"] == pytest.approx(np.median(per_clip))
    assert result["metrics"]["si_sdr"]["pooled"]["n"] == 6
    baseline = json.loads((folder / "passthrough.json").read_text())
    assert baseline["runs"] == 2 and "deterministic: run once, --seeds does not apply" in baseline["engine_info"]["notes"]


def test_bad_seeds_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--seeds", "zero"])
    assert exit_info.value.code == 2
    assert "expected seeds like 0-9 or 0,3,7, got 'zero'" in capsys.readouterr().err


def test_passthrough_si_sdri_is_exactly_zero_on_every_demo_clip(tmp_path):
    argv = ["--engine", "passthrough", "--metric", "si_sdri", "--metric", "music_attenuation_db",
            "--results-folder", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    rows = [json.loads(line) for line in (tmp_path / "demo" / "passthrough.clips.jsonl").read_text().splitlines()]
    # 24 voice cells (4 noise categories x 6 SNRs) of 6 clips, 6 music-only and 6 clean-voice clips.
    assert len(rows) == 156
    gains = [row["scores"]["si_sdri"] for row in rows if row["labels"]["noise"] != "none" and row["labels"]["snr_db"] != "no voice"]
    assert len(gains) == 144 and set(gains) == {0.0}
    assert {row["scores"]["music_attenuation_db"] for row in rows if "music_attenuation_db" in row["scores"]} == {0.0}
