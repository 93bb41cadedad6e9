"""Input conditions: codec round trips through the real FFmpeg in PyAV, the
signal-processing conditions against analytic values, composition, and a run
with --condition end to end (cells, JSON, report, cache, bad input)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nsbench.audio.alignment import estimate_lag
from nsbench.builtin.conditions import codecs, processing
from nsbench.cli import main
from nsbench.run.conditions import ConditionSpec, apply_steps, conditioned, conditioned_sources, resolve
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.types import Clip, ClipSource, UserError

from tests.helpers.audio import make_folder_dataset
from tests.helpers.plugins import add_plugin_to_the_cli

RATE = 16000


@pytest.fixture(scope="module")
def registry():
    return build_registry(get_plugin_manager(load_entry_points=False))


@pytest.fixture(scope="module")
def speech_like() -> np.ndarray:
    # Another seed than the probe the delays are measured on: the test
    # signal is not the one the alignment was fitted to. A steady tone would
    # not do: a speech codec's waveform matches a periodic signal at several lags.
    return codecs.probe_signal(RATE, seed=5, seconds=3.0)


def snr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    reference, estimate = reference.astype(np.float64), estimate.astype(np.float64)
    return float(10 * np.log10(np.sum(reference**2) / np.sum((reference - estimate) ** 2)))


# SNR against the original of the speech-like signal at 16 kHz (measured
# 15.3, 18.8, 20.9, 25.3, 37.5, 10.2, 25.4 dB with PyAV 18.1.0 / FFmpeg 8.1.2):
# the range a codec at that bitrate gives; a broken round trip (misaligned,
# wrong rate, silence, clipping) falls far outside.
EXPECTED_SNR_DB = {
    "opus-16k": (11, 19),
    "opus-32k": (14, 23),
    "aac-64k": (16, 26),
    "mp3-64k": (20, 30),
    "g711-ulaw": (34, 40),  # mu-law: about 38 dB on a well-loaded signal
    "amr-nb-12k": (6, 14),  # CELP: keeps what is heard, not the waveform
    "g722": (21, 30),
}
# Codec delays at the codec's rate that no container records (the issue's
# figures); the rest come back at lag 0 from their container.
KNOWN_DELAYS = {"amr-nb-12k": 40, "g722": 22}


@pytest.mark.parametrize("name", sorted(codecs.CODECS))
def test_codec_round_trip_loses_what_its_bitrate_loses_at_lag_zero(name, speech_like):
    first = codecs.round_trip(speech_like, RATE, codecs.CODECS[name])
    low, high = EXPECTED_SNR_DB[name]
    assert first.dtype == np.float32 and first.shape == speech_like.shape
    assert low <= snr_db(speech_like, first) <= high
    assert estimate_lag(first, speech_like, 800) == 0
    assert codecs.round_trip(speech_like, RATE, codecs.CODECS[name]).tobytes() == first.tobytes()  # deterministic
    setting = codecs.CODECS[name]
    assert round(codecs.codec_delay(setting, setting.rate)) == KNOWN_DELAYS.get(name, 0)


def test_opus_at_32k_loses_less_than_at_16k(speech_like):
    assert snr_db(speech_like, codecs.round_trip(speech_like, RATE, codecs.CODECS["opus-32k"])) > snr_db(
        speech_like, codecs.round_trip(speech_like, RATE, codecs.CODECS["opus-16k"])) + 2


def test_amr_round_trips_of_the_demo_voices_are_aligned(demo_tts_sources):
    """AMR-NB's delay is 79.2 samples at 16 kHz: removing 79 left half of
    these one sample late; the fraction is removed too. On the synthetic
    voices: on two of the real demo's readers (7226, 5778) the correlation
    peak of AMR-NB's output sits 23-28 samples off, a codec matter, not a delay."""
    voices = [clip.clean for clip in (source.load() for source in demo_tts_sources[:8]) if clip.has_voice][:6]
    for voice in voices:
        assert estimate_lag(codecs.round_trip(voice, RATE, codecs.CODECS["amr-nb-12k"]), voice, 800) == 0


def test_a_fractional_delay_is_removed_exactly():
    signal = codecs.probe_signal(RATE, seed=9)
    padded = np.concatenate([signal, np.zeros(1600)])
    frequencies = np.fft.rfftfreq(len(padded))
    delayed = np.fft.irfft(np.fft.rfft(padded) * np.exp(-2j * np.pi * frequencies * 3.4), len(padded))
    assert snr_db(signal, codecs.without_delay(delayed, 3.4, len(signal))) > 100
    early = np.fft.irfft(np.fft.rfft(padded) * np.exp(2j * np.pi * frequencies * 0.3), len(padded))
    assert snr_db(signal[:-10], codecs.without_delay(early, -0.3, len(signal))[:-10]) > 60


@pytest.mark.parametrize("rate", [8000, 48000])
def test_round_trip_comes_back_at_the_clips_rate_aligned(rate):
    signal = codecs.probe_signal(rate, seed=6, seconds=2.0)
    for name in ("amr-nb-12k", "opus-16k"):
        out = codecs.round_trip(signal, rate, codecs.CODECS[name])
        assert out.shape == signal.shape and estimate_lag(out, signal, rate // 20) == 0


# An encoder no FFmpeg build has: the lookup in the real FFmpeg fails.
ABSENT = codecs.Codec("libnosuchcodec", 8000, 8000, "wav", "s16", "absent")


def test_a_codec_missing_from_ffmpeg_is_named_with_its_install():
    message = codecs.missing(ABSENT)
    assert "no libnosuchcodec encoder" in message and "FFmpeg 8" in message and "pip install av==" in message
    assert codecs.missing(codecs.CODECS["opus-16k"]) == ""


# --------------------------------------------------------------------------- processing


def test_limiter_reaches_its_loudness_holds_its_ceiling_and_stays_aligned(speech_like):
    quiet = (speech_like * 0.1).astype(np.float32)  # about -40 dBFS: the limiter pushes it up 26 dB
    out = processing.dynamics(quiet, RATE, **processing.LIMITER)
    assert np.max(np.abs(out)) <= 10 ** (-1 / 20) + 1e-6
    assert abs(processing.gated_loudness(out, RATE) - processing.LIMITER["target_dbfs"]) < 2.0
    assert estimate_lag(out, quiet, 800) == 0
    # The peaks were limited: the crest factor fell.
    crest = lambda x: np.max(np.abs(x)) / np.sqrt(np.mean(x.astype(np.float64) ** 2))
    assert crest(out) < 0.8 * crest(quiet)


def test_static_curve_is_the_papers():
    levels = np.array([-40.0, -27.0, -24.0, -21.0, -12.0])
    gain = processing.static_gain_db(levels, threshold_db=-24.0, ratio=4.0, knee_db=6.0)
    # below the knee 0; at the threshold (the knee's middle) slope*(W/2)^2/(2W) = -0.75*9/12;
    # at the knee's top the line itself: -0.75*3; above, (1/R - 1)(x - T).
    np.testing.assert_allclose(gain, [0.0, 0.0, -0.5625, -2.25, -9.0])


def test_compressor_narrows_the_dynamics_and_makes_up_the_loudness():
    t = np.arange(4 * RATE) / RATE
    tone = np.sin(2 * np.pi * 300 * t)
    signal = (tone * np.where(t < 2, 10 ** (-10 / 20), 10 ** (-30 / 20))).astype(np.float32)
    out = processing.dynamics(signal, RATE, **processing.COMPRESSOR)
    level = lambda x: 20 * np.log10(np.sqrt(np.mean(x.astype(np.float64) ** 2)))
    loud, quiet = slice(RATE // 2, 3 * RATE // 2), slice(5 * RATE // 2, 7 * RATE // 2)
    assert level(signal[loud]) - level(signal[quiet]) == pytest.approx(20, abs=0.01)
    # The gated loudness is the loud half's (the quiet one is gated out): -13 dBFS,
    # so the clip is first turned down 5 dB; the loud half's peaks (-15 dBFS) are
    # then 9 dB over the -24 dB threshold, past the knee: gain (1/4 - 1) * 9 = -6.75 dB;
    # the quiet half (peaks -35 dBFS) is under it. 20 dB apart become 13.25.
    assert level(out[loud]) - level(out[quiet]) == pytest.approx(20 - 6.75, abs=0.3)
    assert processing.gated_loudness(out, RATE) == pytest.approx(-18.0, abs=0.5)


def test_lowpass_keeps_the_telephone_band_and_removes_the_rest():
    t = np.arange(2 * RATE) / RATE
    low, high = np.sin(2 * np.pi * 1000 * t), np.sin(2 * np.pi * 6000 * t)
    out_low = processing.lowpass(low.astype(np.float32), RATE, 4000.0, 8)
    out_high = processing.lowpass(high.astype(np.float32), RATE, 4000.0, 8)
    middle = slice(RATE // 2, 3 * RATE // 2)
    assert snr_db(low[middle], out_low[middle]) > 40  # passes, unshifted
    assert snr_db(high[middle], high[middle] - out_high[middle]) > 40 or np.max(np.abs(out_high[middle])) < 1e-3


def test_clip_quantise_and_gain_are_what_they_say(speech_like):
    peak = np.max(np.abs(speech_like))
    clipped = processing.hard_clip(speech_like, RATE, 3.0)
    assert np.max(np.abs(clipped)) == pytest.approx(peak * 10 ** (-3 / 20), rel=1e-6)
    quantised = processing.quantise(speech_like, RATE, 8)
    np.testing.assert_array_equal(quantised * 128, np.round(quantised * 128))
    assert np.max(np.abs(quantised - speech_like)) <= 1 / 256 + 1e-7
    np.testing.assert_allclose(processing.gain(speech_like, RATE, -20.0), speech_like * 0.1, rtol=1e-6)


# --------------------------------------------------------------------------- composition


def loaded_clip(seed: int = 1) -> Clip:
    rng = np.random.default_rng(seed)
    clean = codecs.probe_signal(RATE, seed=seed, seconds=1.0)
    noisy = (clean + 0.05 * rng.standard_normal(len(clean))).astype(np.float32)
    return Clip("c", noisy, clean, RATE, labels={"set": "x"})


def test_composed_conditions_apply_in_the_order_written(registry):
    clip = loaded_clip()
    [_, first_gain], [_, first_quantise] = (resolve([name], registry.conditions) for name in
                                            ("gain-minus-20db+quantise-8bit", "quantise-8bit+gain-minus-20db"))
    assert first_gain.name == "gain-minus-20db+quantise-8bit"
    expected = processing.quantise(processing.gain(clip.noisy, RATE, -20.0), RATE, 8)
    np.testing.assert_array_equal(apply_steps(clip, first_gain.steps)[0], expected)
    other = processing.gain(processing.quantise(clip.noisy, RATE, 8), RATE, -20.0)
    np.testing.assert_array_equal(apply_steps(clip, first_quantise.steps)[0], other)
    assert not np.array_equal(expected, other)


def test_none_is_always_first_and_is_the_dataset_clip_itself(registry):
    names = [c.name for c in resolve(["opus-16k", "limiter", "opus-16k"], registry.conditions)]
    assert names == ["none", "opus-16k", "limiter"]
    assert resolve([], registry.conditions) == []
    source = ClipSource("c", loaded_clip, {"set": "x"})
    none, opus = resolve(["opus-16k"], registry.conditions)
    plain = conditioned(source, none)
    assert plain.load is source.load and plain.clip_id == "c" and plain.labels["condition"] == "none"
    coded = conditioned(source, opus).load()
    assert coded.clip_id == "c@opus-16k" and coded.labels["condition"] == "opus-16k"
    np.testing.assert_array_equal(coded.clean, loaded_clip().clean)  # a codec leaves the reference alone
    lowpassed = conditioned(source, resolve(["lowpass-4k"], registry.conditions)[1]).load()
    assert not np.array_equal(lowpassed.clean, loaded_clip().clean)  # the band limit applies to both


def test_a_transform_that_cannot_reach_workers_is_refused():
    class LambdaCondition:
        @hookimpl
        def register_conditions(self, register):
            register(ConditionSpec(name="lambda", transform=lambda audio, rate: audio, description="unpicklable"))

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(LambdaCondition())
    with pytest.raises(UserError, match="condition 'lambda': its transform cannot be sent to worker processes"):
        resolve(["lambda"], build_registry(manager).conditions)


def separation_clip() -> Clip:
    sources = (0.1 * np.random.default_rng(0).standard_normal((3, RATE))).astype(np.float32)
    return Clip("mix", sources.sum(axis=0), sources[0], RATE, sources=sources)


def test_a_reference_condition_reaches_the_sources_and_comes_back_from_the_cache(registry, tmp_path):
    lowpass = resolve(["lowpass-4k"], registry.conditions)[1]
    [source] = conditioned_sources([ClipSource("mix", separation_clip)], [lowpass], (str(tmp_path), True))
    computed, cached = source.load(), source.load()
    expected = np.stack([processing.lowpass(row, RATE, 4000.0, 8) for row in separation_clip().sources])
    np.testing.assert_array_equal(computed.sources, expected)
    for name in ("noisy", "clean", "sources"):
        assert getattr(cached, name).tobytes() == getattr(computed, name).tobytes()
    assert list((tmp_path / "runs").rglob("*.output"))  # stored, so the second load came from it


def test_unknown_condition_is_one_line_with_did_you_mean_exit_2(capsys):
    assert main(["--engine", "passthrough", "--condition", "opus16k", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Unknown condition 'opus16k'. Did you mean: opus-16k?" in err[0]


# --------------------------------------------------------------------------- a run


def fails_on_short_clips(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    if len(audio) < 1.5 * sample_rate:
        raise ValueError("too short for this test condition")
    return audio


class ConditionsPlugin:
    """A plugin: a condition that fails on one clip, and a codec FFmpeg lacks."""

    @hookimpl
    def register_conditions(self, register):
        register(ConditionSpec(name="picky", transform=fails_on_short_clips, description="fails under 1.5 s"))
        register(codecs.codec_condition("fake-codec", ABSENT))


@pytest.fixture
def with_test_conditions(monkeypatch):
    add_plugin_to_the_cli(monkeypatch, ConditionsPlugin())


def read_run(folder):
    results = {path.stem: json.loads(path.read_text()) for path in folder.glob("*.json")}
    clips = {path.name.split(".")[0]: [json.loads(line) for line in path.read_text().splitlines()] for path in folder.glob("*.clips.jsonl")}
    return results, clips, (folder / "report.md").read_text()


@pytest.mark.slow
def test_a_run_with_conditions(tmp_path, with_test_conditions, capsys):
    data = make_folder_dataset(tmp_path / "data", count=2, seconds=lambda index: 1.0 + index)
    base = ["--dataset", "folder", "--data-folder", str(data), "--engine", "webrtc", "--jobs", "1", "--quiet",
            "--no-html", "--no-plots", "--results-folder", str(tmp_path / "results")]
    conditions = ["opus-16k", "lowpass-4k", "limiter+amr-nb-12k", "picky"]
    assert main([*base, *(f"--condition={name}" for name in conditions)]) == 4  # every result written; the picky condition fails its short clip
    results, clips, report = read_run(tmp_path / "results" / "folder")
    names = ["none", *conditions]

    # Each condition its own cell, under the key "condition", in the JSON and the clip records.
    passthrough, webrtc = results["passthrough"], results["webrtc"]
    assert {row["cell"]["condition"] for row in passthrough["cells"]} == set(names)
    assert [row["cell"]["condition"] for row in passthrough["conditions"]] == names
    assert {record["clip_id"] for record in clips["passthrough"]} == {
        f"utt{i}{'' if name == 'none' else '@' + name}" for i in range(2) for name in names}
    # The passthrough's gain is 0 under every condition; its input score differs between them.
    for record in clips["passthrough"]:
        if not record["error"]:
            assert record["scores"]["si_sdri"] == 0.0
    assert all(row["metrics"]["si_sdri"]["mean"] == 0.0 for row in passthrough["conditions"])
    inputs = {row["cell"]["condition"]: row["metrics"]["si_sdr_input"]["mean"] for row in passthrough["conditions"]}
    assert len({round(value, 6) for value in inputs.values()}) == len(names)
    # The condition that fails on the short clip fails that clip alone, with the reason.
    failed = [record for record in clips["webrtc"] if record["error"]]
    assert [record["clip_id"] for record in failed] == ["utt0@picky"]
    assert "condition picky failed on the noisy input: ValueError: too short" in failed[0]["error"]
    # Provenance: names, parameters, FFmpeg and codec names.
    recorded = {c["name"]: c for c in webrtc["provenance"]["conditions"]}
    amr = recorded["limiter+amr-nb-12k"]["steps"][1]
    assert amr["parameters"]["bit_rate"] == 12200 and amr["ffmpeg"].startswith("8.") and "libopencore_amrnb" in amr["encoder"]
    assert recorded["limiter+amr-nb-12k"]["steps"][0]["parameters"]["target_dbfs"] == -14.0
    # The report: the worst condition per engine in its top section, a per-condition table.
    top = report.split("## Per engine")[0]
    assert "**webrtc** loses most under **" in top or "**webrtc** loses nothing against none" in top
    assert "## Per condition" in report and "| limiter+amr-nb-12k | webrtc |" in report
    assert "| set | condition | engine |" in report  # the per-cell table has condition cells

    # Cached outputs are keyed on the condition: another condition is computed, the rest comes from the cache.
    assert main([*base, "--condition", "opus-16k", "--condition", "opus-32k"]) == 0
    _, again, _ = read_run(tmp_path / "results" / "folder")
    from_cache = {record["clip_id"]: record["from_cache"] for record in again["webrtc"]}
    assert from_cache == {"utt0": True, "utt1": True, "utt0@opus-16k": True, "utt1@opus-16k": True,
                          "utt0@opus-32k": False, "utt1@opus-32k": False}
    assert {r["clip_id"]: r["scores"] for r in again["webrtc"] if r["clip_id"].endswith("opus-16k")} == {
        r["clip_id"]: r["scores"] for r in clips["webrtc"] if r["clip_id"].endswith("opus-16k")}

    # A codec the FFmpeg build lacks: one line naming it and the install, before any engine runs.
    capsys.readouterr()
    assert main([*base, "--results-folder", str(tmp_path / "other"), "--condition", "fake-codec"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "libnosuchcodec" in err[0] and "pip install av==" in err[0]
    assert not (tmp_path / "other").exists()
