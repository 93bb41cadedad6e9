"""The Music Demixing SDR (nsbench.builtin.metrics.demixing) on analytic cases."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nsbench.builtin.metrics import demixing
from nsbench.plugins.errors import MetricUndefined
from nsbench.plugins.records import MetricInputs

from tests.helpers.dataset_layouts import tone


def inputs(output, clean, noisy, rate=16000) -> MetricInputs:
    as32 = lambda x: np.asarray(x, dtype=np.float32)
    return MetricInputs(output=as32(output), clean=as32(clean), noisy=as32(noisy), sample_rate=rate)


@pytest.fixture(scope="module")
def voice_and_music():
    rng = np.random.default_rng(3)
    voice = tone(200, 1.0, 16000, 0.3) * (0.5 + 0.5 * tone(4, 1.0, 16000))
    music = 0.1 * rng.standard_normal(16000)
    return voice.astype(np.float32), music.astype(np.float32)


def energy(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.dot(x, x))


def test_mdx_sdr_half_level_voice_is_6_02_db(voice_and_music):
    voice, music = voice_and_music
    half = inputs(0.5 * voice, voice, voice + music)
    assert demixing.mdx_sdr_voice_metric(half) == pytest.approx(10 * math.log10(1 / 0.25), abs=1e-6)  # 6.0206
    # The accompaniment estimate noisy - output = music + voice/2: error voice/2.
    expected_music = 10 * math.log10(energy(music) / (0.25 * energy(voice)))
    assert demixing.mdx_sdr_music_metric(half) == pytest.approx(expected_music, abs=1e-5)
    assert demixing.mdx_sdr_mean_metric(half) == pytest.approx((6.0206 + expected_music) / 2, abs=1e-4)


def test_mdx_sdr_passthrough_silence_perfect_and_polarity(voice_and_music):
    voice, music = voice_and_music
    noisy = voice + music
    snr = 10 * math.log10(energy(voice) / energy(music))
    passthrough = inputs(noisy, voice, noisy)
    assert demixing.mdx_sdr_voice_metric(passthrough) == pytest.approx(snr, abs=1e-5)
    assert demixing.mdx_sdr_music_metric(passthrough) == pytest.approx(0, abs=1e-9)
    silence = inputs(np.zeros_like(voice), voice, noisy)
    assert demixing.mdx_sdr_voice_metric(silence) == pytest.approx(0, abs=1e-9)
    assert demixing.mdx_sdr_music_metric(silence) == pytest.approx(-snr, abs=1e-5)
    perfect = inputs(voice, voice, noisy)
    assert demixing.mdx_sdr_voice_metric(perfect) == pytest.approx(10 * math.log10((energy(voice) + 1e-7) / 1e-7))
    assert demixing.mdx_sdr_voice_metric(inputs(-voice, voice, noisy)) == pytest.approx(10 * math.log10(1 / 4), abs=1e-6)


def test_mdx_sdr_matches_the_published_formula_on_noise():
    rng = np.random.default_rng(11)
    reference, estimate = rng.standard_normal((2, 5000))
    estimate = 0.7 * reference + 0.2 * estimate
    expected = 10 * math.log10(np.sum(reference**2) / np.sum((reference - estimate) ** 2))
    assert demixing.mdx_sdr(estimate, reference) == pytest.approx(expected, abs=1e-9)


def test_mdx_sdr_silent_stems_are_undefined_not_infinite(voice_and_music):
    voice, music = voice_and_music
    with pytest.raises(MetricUndefined, match="the clean voice is silent"):
        demixing.mdx_sdr_voice_metric(inputs(music, np.zeros_like(voice), music))
    with pytest.raises(MetricUndefined, match="noisy equals clean"):
        demixing.mdx_sdr_music_metric(inputs(voice, voice, voice))
    with pytest.raises(MetricUndefined, match="silent"):
        demixing.mdx_sdr(voice, np.zeros_like(voice))
