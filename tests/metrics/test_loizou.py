"""The classic intrusive measures on cases whose answer is known without the
references: identical signals, a known gain, silence, a clip too short, and
the steps the vectorised code must take as the references' loops do."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from nsbench.plugins.errors import MetricUndefined
from nsbench.plugins.records import MetricInputs

from tests.helpers.paper_cases import RATE, recording

loizou = importlib.import_module("nsbench.builtin.metrics.loizou")
composite = importlib.import_module("nsbench.builtin.metrics.composite")
spectral_distance = importlib.import_module("nsbench.builtin.metrics.spectral_distance")
bss_eval = importlib.import_module("nsbench.builtin.metrics.bss_eval")

PARTS = ("ssnr", "llr", "wss")


@pytest.fixture(scope="module")
def voice() -> np.ndarray:
    """Two seconds of a LibriSpeech reader from the demo bundle: no digital silence."""
    return recording("speech/ls196_M_122150-0000.flac", 2 * RATE)


def inputs(output: np.ndarray, clean: np.ndarray, noisy: np.ndarray | None = None, rate: int = RATE, **options) -> MetricInputs:
    return MetricInputs(output=np.asarray(output, np.float32), clean=clean, noisy=clean if noisy is None else noisy,
                        sample_rate=rate, options=options)


def parts(output, clean, **options) -> dict[str, float]:
    x = inputs(output, clean, **options)
    return {name: composite.part_metric(name, x) for name in PARTS} | {
        "fwsegsnr": composite.fwsegsnr_metric(x), "cd": composite.cd_metric(x)}


def test_identical_signals_are_the_measures_best_values(voice):
    same = parts(voice, voice)
    assert same["ssnr"] == 35.0 and same["fwsegsnr"] == 35.0  # every frame at the clip's top
    assert same["llr"] == 0.0 and same["wss"] == 0.0 and same["cd"] == 0.0
    x = inputs(voice, voice)
    assert [composite.composite_metric(name, x) for name in ("csig", "cbak", "covl")] == [5.0, 5.0, 5.0]
    # Not 0: URGENT's 1e-8 guards leave log((R / (R + 1e-8))^2 + 1e-8) in quiet bins.
    assert 0 < spectral_distance.lsd_metric(x) < 1e-4


@pytest.mark.parametrize("gain", [0.5, 0.125, 2.0])  # exact in float32
def test_a_known_gain_moves_only_the_segmental_snr(voice, gain):
    scaled = parts(gain * voice, voice)
    # Each frame's error is (1 - g) times the voice: the same SNR everywhere.
    assert scaled["ssnr"] == pytest.approx(min(35.0, -20 * math.log10(abs(1 - gain))), abs=1e-9)
    assert scaled["llr"] == pytest.approx(0.0, abs=1e-9) and scaled["cd"] == pytest.approx(0.0, abs=1e-9)
    assert scaled["wss"] == pytest.approx(0.0, abs=1e-9)  # the band slopes do not move with the level
    assert scaled["fwsegsnr"] == 35.0
    x = inputs(gain * voice, voice, noisy=voice + 0.01 * np.random.default_rng(0).standard_normal(voice.size).astype(np.float32))
    assert spectral_distance.lsd_metric(x) < 1e-4  # scaled to its best gain first
    with threadpool_limits(1):
        assert bss_eval.bss_metric("bss_sdr", x) == 50.0  # the clamp


def test_the_flavours_are_one_script_at_two_scales(voice):
    """CMGAN's wss() floors band energies at -100 dB after dividing by 32768:
    fed samples in [-1, 1] (``float``) the quiet bands sit on that floor and
    their slopes flatten; fed int16-scaled samples (``vbd``) they do not."""
    noisy = voice + (0.01 * np.random.default_rng(1).standard_normal(voice.size)).astype(np.float32)
    vbd, floated = parts(noisy, voice, flavour="vbd"), parts(noisy, voice, flavour="float")
    assert floated["wss"] < vbd["wss"] - 1
    assert floated["llr"] == pytest.approx(vbd["llr"], rel=1e-9) and floated["ssnr"] == pytest.approx(vbd["ssnr"], rel=1e-9)
    as_int16 = parts(noisy * 32768, voice * 32768, flavour="float")  # a power of two: exact in float32
    assert {name: as_int16[name] for name in PARTS} == {name: vbd[name] for name in PARTS}


def test_a_silent_output_has_no_lpc_model_and_the_capped_cepstral_distance(voice):
    silent = np.zeros_like(voice)
    x = inputs(silent, voice)
    with pytest.raises(MetricUndefined, match="no frame has an LPC model"):
        composite.part_metric("llr", x)
    with pytest.raises(MetricUndefined, match="output is silent"):
        composite.composite_metric("csig", x)  # through pesq_wb
    with pytest.raises(MetricUndefined, match="output is silent"):
        spectral_distance.lsd_metric(x)
    with pytest.raises(MetricUndefined, match="digital silence"):
        bss_eval.bss_metric("bss_sir", x)
    assert composite.cd_metric(x) == 10.0  # every frame at pysepm's cap
    assert composite.part_metric("ssnr", x) == pytest.approx(0.0, abs=1e-9)  # the error is the voice itself
    assert math.isfinite(composite.part_metric("wss", x)) and math.isfinite(composite.fwsegsnr_metric(x))


def test_a_clean_input_leaves_sir_and_sar_undefined_but_not_sdr(voice):
    x = inputs(voice, voice)
    with pytest.raises(MetricUndefined, match="no noise reference"):
        bss_eval.bss_metric("bss_sar", x)


def test_a_clip_without_a_whole_frame_is_undefined_with_its_reason(voice):
    # The references count int(L / hop - N / hop) frames: 600 samples make one.
    assert math.isfinite(composite.part_metric("ssnr", inputs(voice[:600], voice[:600])))
    x = inputs(voice[:599], voice[:599])
    for name in PARTS:
        with pytest.raises(MetricUndefined, match="clip shorter than 37.5 ms"):
            composite.part_metric(name, x)
    for metric in (composite.cd_metric, composite.fwsegsnr_metric):
        with pytest.raises(MetricUndefined, match="clip shorter than 37.5 ms"):
            metric(x)


def test_trimmed_mean_drops_frames_without_a_value_first():
    values = np.array([3.0, 1.0, np.nan, 2.0] * 5)  # 20 frames, 5 NaN: round(19) = 19 kept
    assert loizou.trimmed_mean(values) == pytest.approx(np.mean(np.sort(values[np.isfinite(values)])))
    one_nan = np.append(np.arange(19.0), np.nan)  # the NaN is the 5 % the references drop too
    assert loizou.trimmed_mean(one_nan) == np.mean(np.arange(19.0))
    assert math.isnan(loizou.trimmed_mean(np.full(4, np.nan)))


def test_nearest_peaks_follow_the_references_loops():
    """CMGAN's and pysepm's search, loop for loop, on random band energies."""
    energy = np.random.default_rng(3).normal(size=(50, 25)).cumsum(axis=1)
    slope = np.diff(energy, axis=1)
    expected = np.empty_like(slope)
    for frame in range(energy.shape[0]):
        for i in range(24):
            n = i
            if slope[frame, i] > 0:
                while n < 24 and slope[frame, n] > 0:
                    n += 1
                expected[frame, i] = energy[frame, n - 1]
            else:
                while n >= 0 and slope[frame, n] <= 0:
                    n -= 1
                expected[frame, i] = energy[frame, n + 1]
    np.testing.assert_array_equal(loizou.nearest_peaks(energy), expected)


def test_levinson_matches_a_direct_solve_of_the_normal_equations(voice):
    frames = loizou.windowed_frames(voice.astype(np.float64), RATE, 20)
    lags = loizou.autocorrelation(frames, 16)
    index = np.abs(np.arange(16)[:, None] - np.arange(16)[None, :])
    for frame_lags, polynomial in zip(lags, loizou.levinson(lags, 16)):
        direct = np.linalg.solve(frame_lags[index], frame_lags[1:])
        np.testing.assert_allclose(-polynomial[1:], direct, rtol=1e-8, atol=1e-10)
