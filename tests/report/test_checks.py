"""The report catches what a mean hides: each test engine injects one failure
into a clean engine's output, and the report flags exactly that failure for
exactly that engine; --align-constant-lag removes a constant lag and says so."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import EngineSpec

from tests.helpers.plugins import cli_with

LAG = 160  # 10 ms at 16 kHz: one frame of a typical engine
# The demo's first 26 clips: the 24 noisy cells (4 noise categories x 6 SNRs), one music-only, one clean-voice clip.
NOISY_CELLS = 24
CLIPS = NOISY_CELLS + 2
VOICED = NOISY_CELLS + 1  # the clips with a voice: every one but the music-only clip
CHEAP_METRICS = ["--metric", "si_sdri", "--metric", "voice_level_db"]  # what the flags read; STOI would triple the time


class NoiseLeft:
    """A clean engine (an oracle): the clean voice plus about 30% of the noise
    (-10 dB), sample-aligned, level kept. Its gain on the noise varies in time
    as a real suppressor's does: a fixed gain would make the music-only output
    a scaled copy of the input, which is a collapsed model. Subclasses add one
    failure."""

    sample_rate, delay = 16000, 0

    def __init__(self):
        self.calls = 0

    def process(self, audio, clean):
        self.calls += 1
        gain = 0.3 + 0.1 * np.sin(2 * np.pi * 2 * np.arange(len(audio)) / self.sample_rate)
        return self.fault(clean + gain * (audio - clean)).astype(np.float32)

    def fault(self, output):
        return output

    def close(self):
        pass


class Late(NoiseLeft):
    def fault(self, output):
        return np.concatenate([np.zeros(LAG, np.float32), output[:-LAG]])


class Identity(NoiseLeft):
    def process(self, audio, clean):
        return audio.copy()


class Silent(NoiseLeft):
    def fault(self, output):
        return np.zeros_like(output)


class QuietVoice(NoiseLeft):
    def fault(self, output):
        return output * 10 ** (-6 / 20)  # everything 6 dB down: SI-SDR cannot see it


class VoiceDeleted(NoiseLeft):
    """Keeps the noise and removes the voice, with a faint hiss of its own (-50
    dBFS), so that a clean-voice clip's output is not silent but voiceless."""

    def process(self, audio, clean):
        self.calls += 1
        hiss = np.random.default_rng(self.calls).standard_normal(len(audio)) * 10 ** (-50 / 20)
        return (0.3 * (audio - clean) + hiss).astype(np.float32)


class NanOnce(NoiseLeft):
    def fault(self, output):
        if self.calls == 3:
            output = output.copy()
            output[100] = np.nan
        return output


ENGINES = {"noise-left": NoiseLeft, "late": Late, "identity": Identity, "silent": Silent, "quiet-voice": QuietVoice,
           "voice-deleted": VoiceDeleted, "nan-once": NanOnce}
# engine -> the one flag it must raise (None: it must raise none)
EXPECTED = {"noise-left": None, "late": None, "identity": "identical_to_input", "silent": "silent",
            "quiet-voice": "voice_level_drop", "voice-deleted": "voice_deleted", "nan-once": "nan_inf", "passthrough": None}


class FaultyEngines:
    @hookimpl
    def register_engines(self, register):
        for name, cls in ENGINES.items():
            register(EngineSpec(name=name, factory=lambda options, cls=cls: cls(), description=f"test: {name}",
                                sample_rate=16000, delay=0, oracle=True, default=False))


def run(tmp_path, monkeypatch, *engines: str, extra: tuple[str, ...] = ()) -> dict[str, dict]:
    run_cli = cli_with(FaultyEngines())
    argv = [flag for name in engines for flag in ("--engine", name)]
    # One job: NanOnce counts its calls, which a worker pool would split.
    argv += ["--limit", str(CLIPS), "--jobs", "1", "--results-folder", str(tmp_path), "--quiet", *CHEAP_METRICS, *extra]
    # Every result is written; a run with nan-once, which fails a clip, then exits 4.
    assert run_cli(argv) == (4 if "nan-once" in engines else 0)
    folder = tmp_path / "demo"
    return {path.stem: json.loads(path.read_text()) for path in folder.glob("*.json")}


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("checks")
    try:
        results = run(folder, monkeypatch, *ENGINES, extra=("--no-plots", "--no-html"))
    finally:
        monkeypatch.undo()
    results["report.md"] = (folder / "demo" / "report.md").read_text()
    return results


@pytest.mark.parametrize("engine", EXPECTED)
def test_each_engine_raises_exactly_its_own_flag(faulty_run, engine):
    flags = faulty_run[engine]["flags"]
    expected = EXPECTED[engine]
    assert sorted(flags) == ([expected] if expected else [])


def test_flags_name_the_clips(faulty_run, demo_sources):
    from nsbench.audio.sdr import si_sdr
    from nsbench.audio.checks import NOISY_INPUT_BELOW_DB

    noisy_input = [f"{n}_snr{s}_0" for n in ("stationary", "nonstationary", "babble", "music") for s in (-5, 0, 5, 10, 15, 20)]
    # The passthrough is the input on the noisy clips and the music-only one (not
    # on the clean-voice clip, where the input is the right answer): expected there.
    # Checked where the input's SI-SDR is under 20 dB: the 20 dB clips' is 20 +- 0.02, on either side by chance.
    clips = {source.clip_id: source.load() for source in demo_sources[:CLIPS] if source.labels["snr_db"] == "20"}
    checked = [clip_id for clip_id in noisy_input
               if clip_id not in clips or si_sdr(clips[clip_id].noisy, clips[clip_id].clean) < NOISY_INPUT_BELOW_DB]
    assert len(checked) >= NOISY_CELLS - 4
    assert sorted(faulty_run["identity"]["flags"]["identical_to_input"]["clips"]) == sorted(checked + ["music-only_0"])
    assert faulty_run["passthrough"]["expected_flags"]["identical_to_input"]["clips"] == faulty_run["identity"]["flags"]["identical_to_input"]["clips"]
    # Silence is right on the music-only clip: flagged on the 25 clips with a voice.
    assert sorted(faulty_run["silent"]["flags"]["silent"]["clips"]) == sorted(noisy_input + ["clean-voice_0"])
    # The voice drop needs a positive gain: the clean-voice clip has none to read.
    assert sorted(faulty_run["quiet-voice"]["flags"]["voice_level_drop"]["clips"]) == sorted(noisy_input)
    # A deleted voice needs no gain to read: every clip with a voice.
    assert sorted(faulty_run["voice-deleted"]["flags"]["voice_deleted"]["clips"]) == sorted(noisy_input + ["clean-voice_0"])
    nan = faulty_run["nan-once"]
    assert nan["flags"]["nan_inf"]["clips"] == [nan["failed_clips"][0]["clip_id"]] and nan["failures"] == 1


def test_alignment_says_sample_aligned_or_late_by_the_lag(faulty_run):
    for engine in ("noise-left", "identity", "quiet-voice", "nan-once", "passthrough"):
        assert faulty_run[engine]["alignment"]["text"] == "sample-aligned", engine
    assert faulty_run["voice-deleted"]["alignment"]["text"] == f"alignment not measured, not measurable on {VOICED} clips"
    late = faulty_run["late"]["alignment"]
    assert late["text"] == f"late by {LAG} samples on {VOICED} clips"  # every clip with a voice
    assert late["constant_lag"] == {"samples": LAG, "sample_rate": 16000, "clips": VOICED}
    assert faulty_run["silent"]["alignment"]["text"] == f"alignment not measured, not measurable on {VOICED} clips"


def test_the_report_shows_each_flag_beside_its_engine_only(faulty_run):
    report = faulty_run["report.md"]
    checks = report.split("## Checks: alignment and degenerate output")[1].split("\n## ")[0]
    blocks = {block.split("**")[0]: block for block in checks.split("- **")[1:]}
    for engine, flag in EXPECTED.items():
        raised = [line for line in blocks[engine].splitlines() if "FLAG" in line]
        assert raised == ([next(line for line in raised if flag in line)] if flag else []), engine
    assert f"late by {LAG} samples on {VOICED} clips" in blocks["late"]
    summary = report.split("## Per engine: mean and worst cell")[1].split("\n## ")[0]
    row = next(line for line in summary.splitlines() if line.startswith("| quiet-voice "))
    assert row.endswith(f"| sample-aligned | voice_level_drop ({NOISY_CELLS}) |")


def test_align_constant_lag_removes_the_lag_and_says_so(faulty_run, tmp_path, monkeypatch):
    results = run(tmp_path, monkeypatch, "late", extra=("--align-constant-lag", "--no-plots", "--no-html"))
    late = results["late"]
    assert late["alignment"]["text"] == "sample-aligned"
    done = late["alignment"]["compensation"]
    assert (done["samples"], done["sample_rate"]) == (LAG, 16000)
    assert done["first_pass"]["text"] == f"late by {LAG} samples on {VOICED} clips"
    # The second pass is the clean engine's output exactly, so are its scores.
    assert late["metrics"]["si_sdri"]["mean"] == pytest.approx(faulty_run["noise-left"]["metrics"]["si_sdri"]["mean"], abs=1e-9)
    assert set(late["engine_info"]["delays_removed"]) == {f"{LAG} samples at 16000 Hz"}
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "Constant lag compensated (--align-constant-lag)" in report and f"removed {LAG} more samples at 16000 Hz" in report
    # An aligned engine is left alone: no second pass, no note.
    assert "compensation" not in results["passthrough"]["alignment"]


def test_the_array_checks_not_exercised_by_the_engines_above():
    """barely_changed and clipped, on one hand-made clip (0 dB SNR)."""
    from nsbench.audio import checks
    from nsbench.plugins.records import Clip

    rng = np.random.default_rng(0)
    t = np.arange(16000) / 16000
    clean = (0.3 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    noise = (rng.standard_normal(16000) * np.std(clean)).astype(np.float32)
    clip = Clip(clip_id="c", noisy=clean + noise, clean=clean, sample_rate=16000)
    assert checks.output_flags(clean + 0.3 * noise, clip) == []
    assert checks.output_flags(0.5 * clip.noisy, clip) == ["identical_to_input"]
    # 50 dB from the input: between BARELY_CHANGED_DB and IDENTICAL_DB.
    nudged = clip.noisy + 10 ** (-50 / 20) * noise
    assert checks.output_flags(nudged, clip) == ["barely_changed"]
    loud = np.clip(8 * clean, -1, 1)  # a fifth of the samples at full scale
    assert checks.output_flags(loud, clip) == ["clipped"]
    # An input clipped as much: the engine did not clip it.
    clipped_input = Clip(clip_id="c", noisy=np.clip(8 * clean, -1, 1) + 0 * noise, clean=clean, sample_rate=16000)
    assert "clipped" not in checks.output_flags(loud, clipped_input)


def test_two_identical_engines_are_reported_not_distinguishable(faulty_run):
    # The identity engine returns its input, as the passthrough does: the same scores on every clip.
    comparison = faulty_run["identity"]["comparisons"]["passthrough"]["si_sdri"]
    assert comparison["all"]["verdict"] == "not distinguishable" and comparison["all"]["p_value"] == 1.0
    # The music-only and clean-voice cells have no SI-SDRi to pair.
    assert [cell["verdict"] for cell in comparison["cells"] if cell["n"]] == ["not distinguishable"] * NOISY_CELLS
    row = next(line for line in faulty_run["report.md"].splitlines() if line.startswith("| identity | passthrough | si_sdri |"))
    assert row.endswith(f"| 0.000 | 0.000 [0.000, 0.000] normal | 1.000 | not distinguishable | not distinguishable in {NOISY_CELLS} cells |")


def test_voice_drop_threshold_is_an_option(tmp_path, monkeypatch):
    """QuietVoice turns the voice down 6 dB: flagged under a 5 dB threshold,
    not under 7, and the flag's text gives the threshold used."""
    flagged = run(tmp_path / "at5", monkeypatch, "quiet-voice", extra=("--voice-drop-db", "5"))["quiet-voice"]
    assert flagged["flags"]["voice_level_drop"]["description"].startswith("voice level below -5 dB ")
    assert flagged["flags"]["voice_level_drop"]["clips"]
    kept = run(tmp_path / "at7", monkeypatch, "quiet-voice", extra=("--voice-drop-db", "7"))["quiet-voice"]
    assert "voice_level_drop" not in kept["flags"]


# ------------------------------------------------------------------ a deleted voice (issue 37)


def test_voice_kept_is_the_clean_voices_gain_in_the_output_and_deleted_below_40_db():
    """On a seeded 2 s noise 'voice' (its active segments: all of it), with
    independent noise beside it: the gain is read within its chance
    correlation, the sign does not matter, and -40 dB is the line."""
    from nsbench.audio import checks
    from nsbench.plugins.records import Clip

    rng = np.random.default_rng(1)
    clean = (0.1 * rng.standard_normal(32000)).astype(np.float32)
    noise = (0.1 * rng.standard_normal(32000)).astype(np.float32)
    clip = Clip(clip_id="c", noisy=clean + noise, clean=clean, sample_rate=16000)
    # Chance correlation of noise as loud as the voice: 1/sqrt(32000) of the voice, -45 dB; at -6 dB it moves 0.05 dB.
    assert checks.voice_kept_db(0.5 * clean + noise, clean, 16000) == pytest.approx(-6.02, abs=0.1)
    assert checks.voice_kept_db(-clean, clean, 16000) == pytest.approx(0.0, abs=1e-6)  # polarity flipped: all kept
    assert checks.voice_kept_db(np.zeros_like(clean), clean, 16000) == -np.inf
    for kept_db, deleted in ((-39.0, False), (-41.0, True)):
        output = (10 ** (kept_db / 20) * clean + 1e-3 * noise[::-1]).astype(np.float32)  # a faint unrelated hiss
        assert checks.voice_kept_db(output, clean, 16000) == pytest.approx(kept_db, abs=0.3)
        assert ("voice_deleted" in checks.output_flags(output, clip)) == deleted, kept_db
    # Silent says more: an output 60 dB down is silent, not voice_deleted.
    assert checks.output_flags(1e-4 * clean, clip) == ["silent"]
    assert checks.output_flags(noise, clip) == ["voice_deleted"]  # the noise kept, the voice gone


def test_voice_deleted_allows_for_the_residual_lag():
    """A noise 'voice' 10 ms late shares nothing with itself in time: read
    without the lag it looks deleted, with the lag the check found, kept whole."""
    from nsbench.audio import checks
    from nsbench.plugins.records import Clip

    clean = (0.1 * np.random.default_rng(2).standard_normal(32000)).astype(np.float32)
    late = np.concatenate([np.zeros(LAG, np.float32), clean[:-LAG]])
    clip = Clip(clip_id="c", noisy=clean, clean=clean, sample_rate=16000)
    assert checks.voice_kept_db(late, clean, 16000) < -40
    assert checks.voice_kept_db(late, clean, 16000, LAG) == pytest.approx(0.0, abs=0.01)
    assert checks.residual_lag(late, clip) == (LAG, "")
    assert "voice_deleted" in checks.output_flags(late, clip)
    assert "voice_deleted" not in checks.output_flags(late, clip, LAG)


def test_voice_deleted_is_in_every_report(tmp_path, capsys):
    """The terminal's flags line, report.md and report.html name it, as the other flags."""
    run_cli = cli_with(FaultyEngines())
    argv = ["--engine", "voice-deleted", "--limit", "3", "--jobs", "1", "--results-folder", str(tmp_path), "--no-plots", *CHEAP_METRICS]
    assert run_cli(argv) == 0
    out = capsys.readouterr().out
    flags = out.split("flags: ")[1].split("\nreport:")[0]
    assert "passthrough" not in flags and "voice-deleted voice_deleted x3" in " ".join(flags.split())
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "voice_deleted" in report.split("## Checks: alignment and degenerate output")[1]
    html = (tmp_path / "demo" / "report.html").read_text()
    assert '<span class="flag">voice_deleted</span> on 3 clips' in html


@pytest.fixture(scope="module")
def pre_rebuild_clips():
    """babble_snr5_3 and babble_snr20_0 as the demo mixed them before issue 37
    rebuilt it: from the shared demo pack, which the bundle then held byte for byte."""
    from nsbench.builtin.datasets import demo
    from nsbench.plugins.records import Clip, ClipSource
    from tests.helpers.paths import SHARED_AUDIO

    pack = SHARED_AUDIO / "demo-pack"
    if not (pack / "MANIFEST.tsv").is_file():
        pytest.skip(f"no shared demo pack at {pack}")
    recordings = demo.read_recordings(pack)
    entries = {entry["clip_id"]: entry for entry in demo.plan(demo.DEFAULT_SEED, recordings)}
    sources = []
    for clip_id in ("babble_snr5_3", "babble_snr20_0"):
        made = demo.make_clip(entries[clip_id], recordings, pack)  # written as float32 WAV then
        clip = Clip(clip_id=clip_id, noisy=made.noisy.astype(np.float32), clean=made.clean.astype(np.float32), sample_rate=16000)
        sources.append(ClipSource(clip_id=clip_id, load=lambda clip=clip: clip, labels=made.labels))
    return sources


@pytest.mark.parametrize("engine", ["rnnoise", "passthrough", "oracle-irm", "oracle-ibm"])
def test_on_the_demo_before_its_rebuild_rnnoises_two_deleted_voices_are_flagged(pre_rebuild_clips, engine):
    """Issue 37's two clips: RNNoise's SI-SDRi -52.5 and -43.9 dB, neither
    flagged by voice_level_drop; voice_deleted flags both, and never the
    passthrough or an oracle."""
    from tests.helpers.engine_checks import run_builtin

    records = {outcome.record.clip_id: outcome.record for outcome in run_builtin(engine, pre_rebuild_clips)}
    for clip_id, record in records.items():
        assert ("voice_deleted" in record.flags) == (engine == "rnnoise"), (clip_id, record.flags)
        assert "voice_level_drop" not in record.flags
    if engine == "rnnoise":  # the clips: RNNoise's SI-SDRi within 0.5 dB of what it reported
        assert records["babble_snr5_3"].scores["si_sdri"] == pytest.approx(-52.5, abs=0.5)
        assert records["babble_snr20_0"].scores["si_sdri"] == pytest.approx(-43.9, abs=0.5)
