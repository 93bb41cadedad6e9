"""Clips without a clean reference (PLUGIN_API 3): the folder set with noisy/
alone and with --allow-unpaired, run end to end through real engines; metrics
that need the reference skipped (neither failed nor undefined); the checks'
no-reference forms; oracles; the default metric choice.

Audio: real speech and noise recordings from datasets/demo_audio (LibriSpeech
and freesound, see its MANIFEST.tsv), mixed here and written as 16-bit WAV.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench.run import no_reference
from nsbench.audio import checks
from nsbench.audio.files import read_audio
from nsbench.cli import main
from nsbench.plugins.records import Clip, ClipSource
from nsbench.plugins.specs import MetricSpec

DEMO_AUDIO = Path(__file__).resolve().parents[2] / "datasets" / "demo_audio"
RATE = 16000
SECONDS = 2.0


def recordings(count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(speech, noise) pairs of real recordings, SECONDS long at 16 kHz."""
    speech = sorted((DEMO_AUDIO / "speech").glob("*.flac"))[:count]
    noise = sorted((DEMO_AUDIO / "noise").glob("*.flac"))[:count]
    length = int(SECONDS * RATE)
    pairs = []
    for s, n in zip(speech, noise):
        voice, voice_rate, _ = read_audio(s)
        hum, noise_rate, _ = read_audio(n)
        assert voice_rate == noise_rate == RATE
        pairs.append((voice[:length], hum[:length]))
    return pairs


def write_set(root: Path, names: list[str], clean_names: list[str] = ()) -> Path:
    """noisy/<name> for every name (speech + noise at about 0 dB), and clean/<name> for clean_names."""
    for (voice, noise), name in zip(recordings(len(names)), names):
        noise = noise * np.sqrt(np.sum(voice**2) / max(np.sum(noise**2), 1e-12))
        for role, audio in (("noisy", voice + noise), ("clean", voice)):
            if role == "noisy" or name in clean_names:
                (root / role).mkdir(parents=True, exist_ok=True)
                soundfile.write(str(root / role / name), 0.5 * audio / max(1.0, np.abs(voice + noise).max()), RATE,
                                subtype="PCM_16")
    return root


def run(tmp_path: Path, root: Path, *flags: str) -> tuple[int, Path]:
    results = tmp_path / "results"
    argv = ["--dataset", "folder", "--data-folder", str(root), "--results-folder", str(results), "--quiet",
            "--no-plots", *flags]
    return main(argv), results / "folder"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache"))


def clip_lines(folder: Path, engine: str) -> list[dict]:
    return [json.loads(line) for line in (folder / f"{engine}.clips.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_noisy_only_folder_runs_end_to_end_with_dnsmos_and_no_intrusive_metric(tmp_path):
    pytest.importorskip("speechmos")
    root = write_set(tmp_path / "calls", ["a.wav", "b.wav", "c.wav"])
    code, folder = run(tmp_path, root, "--engine", "speex")  # default --jobs: DNSMOS in worker processes
    assert code == 0
    for engine in ("passthrough", "speex"):
        result = json.loads((folder / f"{engine}.json").read_text())
        assert result["failures"] == 0
        assert {"dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl", "rtf_cpu"} <= set(result["metrics"])
        assert not {"si_sdr", "si_sdri", "stoi", "pesq_wb", "voice_level_db"} & set(result["metrics"])
        assert result["reference_use"]["clips_without_reference"] == 3
        assert result["alignment"]["not_checked_clips"] == 3
        for line in clip_lines(folder, engine):
            assert line["error"] is None
            # The only metrics without a value are the speech-gated levels: these
            # 1-second fixtures leave the VAD too few pauses to measure the noise in.
            assert set(line["undefined"]) <= {"vad_voice_level_db", "vad_attenuation_db"}
            assert all("no-speech chunks" in reason for reason in line["undefined"].values())
            assert 1.0 <= line["scores"]["dnsmos_ovrl"] <= 5.0
            assert line["lag_unmeasured"] == checks.NO_REFERENCE_LAG
    # DNSMOS of the passthrough is DNSMOS of the input; speex changes it.
    ours = {line["clip_id"]: line["scores"]["dnsmos_bak"] for line in clip_lines(folder, "speex")}
    theirs = {line["clip_id"]: line["scores"]["dnsmos_bak"] for line in clip_lines(folder, "passthrough")}
    assert any(abs(ours[c] - theirs[c]) > 0.01 for c in ours)
    passthrough = json.loads((folder / "passthrough.json").read_text())
    assert passthrough["expected_flags"]["identical_to_input"]["clips"] == ["a", "b", "c"]  # judged against the input
    report = (folder / "report.md").read_text()
    assert "No clip has a clean reference." in report and "dnsmos_ovrl" in report
    assert "No clip has a clean reference." in (folder / "report.html").read_text()
    assert "no clean reference" in (folder / "report.html").read_text()  # the listening grid's clean column
    # Its explanations are about what ran: no SI-SDR convention; ranked on the DNSMOS figures that ran.
    assert "SI-SDR" not in report.split("## Per engine")[0] and "SI-SDR" not in (folder / "report.html").read_text()
    ranking = json.loads((folder / "ranking.json").read_text())
    assert set(ranking["settings"]["categories"]) == {"non-intrusive"}
    assert {"dnsmos_ovrl", "dnsmos_sig", "dnsmos_bak"} <= set(ranking["settings"]["categories"]["non-intrusive"])


def test_unpaired_noisy_files_stop_the_run_unless_allowed(tmp_path, capsys):
    root = write_set(tmp_path / "mine", ["a.wav", "b.wav"], clean_names=["a.wav"])
    code, _ = run(tmp_path, root, "--engine", "passthrough", "--metric", "si_sdri", "--no-html")
    assert code == 2
    assert "1 file in only one of noisy/ and clean/" in capsys.readouterr().err
    code, folder = run(tmp_path, root, "--engine", "passthrough", "--allow-unpaired", "--no-html",
                       "--metric", "si_sdri", "--metric", "rtf_cpu")
    assert code == 0
    lines = {line["clip_id"]: line for line in clip_lines(folder, "passthrough")}
    assert "si_sdri" in lines["a"]["scores"] and "rtf_cpu" in lines["a"]["scores"]
    # b has no reference: si_sdri is skipped (not failed, not undefined), rtf_cpu scored.
    assert "si_sdri" not in lines["b"]["scores"] and lines["b"]["undefined"] == {} and lines["b"]["error"] is None
    assert "rtf_cpu" in lines["b"]["scores"]
    result = json.loads((folder / "passthrough.json").read_text())
    assert result["metrics"]["si_sdri"]["n"] == 1 and result["metrics"]["rtf_cpu"]["n"] == 2
    assert result["reference_use"] == {"clips": 2, "clips_without_reference": 1,
                                       "metrics_without_reference": ["rtf_cpu"], "metrics_needing_reference": ["si_sdri"]}
    report = (folder / "report.md").read_text()
    assert "1 of 2 clips have no clean reference. Metrics this set could use there (they judge the output alone, " \
           "or against the input): rtf_cpu. Metrics that need the reference, scored on the clips that have one " \
           "(skipped, not failed, elsewhere): si_sdri." in report


def test_a_clean_file_without_its_noisy_one_stops_the_run_even_when_allowed(tmp_path, capsys):
    root = write_set(tmp_path / "mine", ["a.wav"], clean_names=["a.wav"])
    soundfile.write(str(root / "clean" / "z.wav"), np.zeros(RATE, dtype=np.float32), RATE)
    code, _ = run(tmp_path, root, "--engine", "passthrough", "--allow-unpaired", "--no-html")
    assert code == 2
    assert "z.wav" in capsys.readouterr().err


def test_an_oracle_named_on_a_set_without_references_fails_each_clip_with_one_reason(tmp_path):
    root = write_set(tmp_path / "calls", ["a.wav", "b.wav"])
    code, folder = run(tmp_path, root, "--engine", "oracle-irm", "--metric", "rtf_cpu", "--no-html")
    assert code == 4  # failed clips exit 4 once every result is written
    lines = clip_lines(folder, "oracle-irm")
    assert [line["error"] for line in lines] == ["an oracle engine needs the clean reference, and this clip has none"] * 2


def test_default_engines_leave_the_oracles_out_without_any_reference(capsys):
    from nsbench.session.plan import select_engines
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry

    registry = build_registry(get_plugin_manager())
    without = [ClipSource("a", load=lambda: None, has_reference=False)]
    names = [spec.name for spec in select_engines([], registry, without)]
    assert "oracle-irm" not in names and "passthrough" in names
    assert "oracle-irm, oracle-ibm not run: oracle engines need the clean reference" in capsys.readouterr().err
    assert "oracle-irm" in [spec.name for spec in select_engines([], registry, [ClipSource("a", load=lambda: None)])]


def spec(name: str, default: bool, needs_reference: bool) -> MetricSpec:
    return MetricSpec(name=name, func=lambda inputs: 0.0, unit="", higher_is_better=True, description="", ignores="",
                      default=default, needs_reference=needs_reference)


def test_the_default_metrics_follow_the_references():
    specs = [spec("intrusive", True, True), spec("cheap_noref", True, False), spec("panel", False, False),
             spec("optin_intrusive", False, True)]
    paired, unpaired = ClipSource("a", load=lambda: None), ClipSource("b", load=lambda: None, has_reference=False)
    names = lambda sources: [s.name for s in no_reference.default_metrics(specs, sources)]
    assert names([paired]) == ["intrusive", "cheap_noref"]  # nothing changes on paired sets
    assert names([unpaired]) == ["cheap_noref", "panel"]
    assert names([paired, unpaired]) == ["intrusive", "cheap_noref", "panel"]


def clip_without_reference(noisy: np.ndarray) -> Clip:
    return Clip("x", noisy=noisy.astype(np.float32), clean=None, sample_rate=RATE)


def test_the_checks_judge_identity_and_silence_against_the_input():
    rng = np.random.default_rng(0)
    noisy = (0.1 * rng.standard_normal(RATE)).astype(np.float32)
    clip = clip_without_reference(noisy)
    assert checks.output_flags(0.5 * noisy, clip) == ["identical_to_input"]
    assert checks.output_flags(noisy * 1e-4, clip) == ["identical_to_input", "silent"]
    assert checks.output_flags(np.zeros_like(noisy), clip) == ["silent"]
    different = (0.1 * rng.standard_normal(RATE)).astype(np.float32)
    assert checks.output_flags(different, clip) == []
    assert checks.residual_lag(noisy, clip) == (None, checks.NO_REFERENCE_LAG)


def test_a_metric_that_needs_the_reference_is_skipped_not_failed_on_such_a_clip():
    from nsbench.run.scoring import score_one

    clip = clip_without_reference(np.ones(RATE))
    reads_clean = spec("reads_clean", True, True)
    assert score_one(reads_clean, clip, None) == {}
    judges_output = MetricSpec(name="level", func=lambda inputs: float(np.sum(inputs.output**2)), unit="",
                               higher_is_better=True, description="", ignores="", needs_reference=False)
    from nsbench.plugins.records import MetricInputs

    inputs = MetricInputs(output=np.ones(4, dtype=np.float32), clean=None, noisy=np.ones(4, dtype=np.float32), sample_rate=RATE)
    assert score_one(judges_output, clip, inputs) == {"values": {"level": 4.0}}


def test_the_shipped_no_reference_metrics_say_so():
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry

    registry = build_registry(get_plugin_manager())
    needing = {record.spec.name: record.spec.needs_reference for record in registry.metrics}
    for name in ("dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl", "rtf_cpu", "rtf_wall"):
        assert needing[name] is False
    for name in ("si_sdr", "si_sdri", "stoi", "estoi", "pesq_wb", "voice_level_db", "music_attenuation_db", "wer"):
        assert needing[name] is True


def test_the_conformance_kit_catches_a_metric_that_claims_no_reference_but_reads_it():
    from nsbench.testing import ConformanceError, check_metric

    reads = MetricSpec(name="liar", func=lambda inputs: float(np.sum(inputs.clean**2)), unit="", higher_is_better=True,
                       description="", ignores="", needs_reference=False)
    with pytest.raises(ConformanceError, match=r"says needs_reference=False, but without the clean reference .*TypeError"):
        check_metric(reads)
    honest = MetricSpec(name="level", func=lambda inputs: float(np.sum(inputs.output**2)), unit="", higher_is_better=True,
                        description="", ignores="", needs_reference=False)
    check_metric(honest)
    check_metric("rtf_cpu")


def test_a_condition_keeps_a_clip_without_reference_so(tmp_path):
    root = write_set(tmp_path / "calls", ["a.wav"])
    code, folder = run(tmp_path, root, "--engine", "passthrough", "--metric", "rtf_cpu", "--condition", "gain-minus-20db",
                       "--no-html")
    assert code == 0
    lines = clip_lines(folder, "passthrough")
    assert len(lines) == 2 and all(line["error"] is None and "rtf_cpu" in line["scores"] for line in lines)
    result = json.loads((folder / "passthrough.json").read_text())
    assert result["reference_use"]["clips_without_reference"] == 1
