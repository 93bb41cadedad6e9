"""Voice level and music attenuation (nsbench.builtin.metrics.levels) on
hand-built 20 ms segments."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from nsbench.plugins.errors import MetricUndefined

from tests.helpers.metric_signals import HALF_DB, SR, inputs, orthogonal_noise, rng

levels = importlib.import_module("nsbench.builtin.metrics.levels")

SEG = 320  # 20 ms at 16 kHz


def by_segment(*amplitudes: float, seed: int = 2) -> np.ndarray:
    """A signal of 20 ms segments, each of unit-power noise times its amplitude (float64)."""
    unit = rng(seed).standard_normal(SEG * len(amplitudes))
    unit /= np.sqrt(np.mean(unit**2))
    return unit * np.repeat(amplitudes, SEG)


def constant_segments(*values: float) -> np.ndarray:
    return np.repeat(np.asarray(values, dtype=np.float64), SEG)


def test_passthrough_music_attenuation_is_exactly_zero():
    clean = by_segment(1, 1, 0, 0, 1, 0)
    noisy = clean + 0.3 * rng(30).standard_normal(clean.size)
    assert levels.music_attenuation_metric(inputs(noisy, clean, noisy)) == 0.0


def test_halving_engine_reads_minus_6_db_on_both():
    clean = by_segment(1, 1, 0, 0, 1, 0)
    music = np.where(clean == 0, rng(31).standard_normal(clean.size), 0.0)
    noisy = clean + music
    x = inputs(0.5 * noisy, clean, noisy)
    # numpy sums in float64: 1e-9 dB covers any kernel's order (tests/helpers/golden_scores.py)
    assert levels.voice_level_metric(x) == pytest.approx(HALF_DB, abs=1e-9)
    assert levels.music_attenuation_metric(x) == pytest.approx(HALF_DB, abs=1e-9)
    assert levels.voice_level_metric(x) == pytest.approx(HALF_DB, abs=1e-9)


def test_hand_computed_clip():
    # clean segments: 1 (loudest), 0.1 (-20 dB, active), 0.001 (-60 dB, silent), 0 (silent)
    clean = constant_segments(1.0, 0.1, 0.001, 0.0)
    noisy = constant_segments(1.0, 1.0, 1.0, 1.0)
    output = constant_segments(0.5, 0.1, 0.2, 0.3)
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, False, False]
    # voice level: (0.25 + 0.01) / (1 + 0.01); music: (0.04 + 0.09) / (1 + 1); N cancels
    assert levels.voice_level_db(output, clean, SR) == pytest.approx(10 * math.log10(0.26 / 1.01), abs=1e-9)
    assert levels.music_attenuation_db(output, noisy, clean, SR) == pytest.approx(
        10 * math.log10(0.13 / 2.0), abs=1e-9
    )


def test_threshold_at_40_db():
    clean = constant_segments(1.0, 10 ** (-39 / 20), 10 ** (-41 / 20))
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, False]
    # Exactly 40 dB below is "not more than 40 dB below": active (powers 1e4 and 1 are exact).
    edge = constant_segments(100.0, 1.0, 0.0)
    assert list(levels.voice_active_segments(edge, SR)) == [True, True, False]
    # The 39 dB segment counts as voice, the 41 dB one as music.
    output = constant_segments(1.0, 0.0, 0.0)
    noisy = constant_segments(1.0, 1.0, 1.0)
    assert levels.voice_level_db(output, clean, SR) == pytest.approx(
        10 * math.log10(1.0 / (1.0 + 10 ** (-39 / 10))), abs=1e-9
    )
    assert levels.music_attenuation_db(output, noisy, clean, SR) == -120.0


def test_music_only_clip_covers_the_whole_clip_including_the_tail():
    n = 5 * SEG + 100  # a trailing partial segment of 100 samples
    clean = np.zeros(n)
    noisy = rng(32).standard_normal(n)
    assert levels.music_attenuation_db(0.1 * noisy, noisy, clean, SR) == pytest.approx(-20.0, abs=1e-9)
    tail_only = np.where(np.arange(n) >= 5 * SEG, noisy, 0.0)
    expected = 10 * math.log10(np.sum(noisy[5 * SEG:] ** 2) / np.sum(noisy**2))
    assert levels.music_attenuation_db(tail_only, noisy, clean, SR) == pytest.approx(expected, abs=1e-9)
    with pytest.raises(MetricUndefined, match="clean voice is silent"):
        levels.voice_level_db(noisy, clean, SR)


def test_trailing_partial_segment_is_classified_by_mean_power():
    # A 50-sample tail at -35 dB: active by mean power; its sum of squares alone
    # (50/320 of a segment's) would put it at -43 dB, voice-silent.
    clean = np.concatenate([constant_segments(1.0, 1.0), np.full(50, 10 ** (-35 / 20))])
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, True]
    clean[-50:] = 0.001  # -60 dB
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, False]


def test_no_voice_silent_segment_is_undefined():
    clean = by_segment(1, 0.5, 1, 0.2)
    noisy = clean + 0.1
    with pytest.raises(MetricUndefined, match="no voice-silent segment"):
        levels.music_attenuation_metric(inputs(noisy, clean, noisy))


def test_input_silent_where_voice_is_silent_is_undefined():
    clean = by_segment(1, 0, 1)
    with pytest.raises(MetricUndefined, match="nothing to attenuate"):
        levels.music_attenuation_db(clean, clean, clean, SR)


def test_passthrough_at_minus_5_db_snr_voice_level():
    # Voice in the first half only; noise everywhere, orthogonal to the voice over the
    # voice-active half and 5 dB louder there: voice level = 10log10(1 + 10^0.5) = +6.19 dB.
    half = 25 * SEG
    s = by_segment(*([1.0] * 25), seed=33)
    n_active = orthogonal_noise(s, -5.0, seed=34)
    clean = np.concatenate([s, np.zeros(half)])
    noisy = clean + np.concatenate([n_active, rng(35).standard_normal(half)])
    x = inputs(noisy, clean, noisy)
    assert levels.voice_level_metric(x) == pytest.approx(10 * math.log10(1 + 10**0.5), abs=1e-4)
    assert levels.voice_level_metric(x) == pytest.approx(6.19, abs=0.01)
    assert levels.music_attenuation_metric(x) == 0.0
