"""Picovoice's remixer (datasets/dns2020_remix.py) against hand computations."""
from __future__ import annotations

import re

import numpy as np
import pytest
import soundfile

from nsbench.builtin.datasets import dns2020_remix as remix

from tests.helpers.dns_layouts import RATE, speechlike


def test_peak_frame_power_drops_the_trailing_partial_frame_as_picovoice_does():
    # 1200 samples: frames 0-511 and 512-1023 count; 1024-1199 (176 samples) is
    # dropped by Picovoice's `pcm.size // 512`. The tail is the loudest part, so
    # counting or zero-padding it would change the answer.
    x = np.concatenate([np.full(512, 0.1), np.full(512, 0.2), np.full(176, 1.0)])
    assert remix.peak_frame_power(x) == pytest.approx(512 * 0.2**2)  # 20.48, not 176
    assert remix.peak_frame_power(x[::-1]) == pytest.approx(max(176 * 1.0 + 336 * 0.04, 512 * 0.04))
    with pytest.raises(ValueError, match="shorter than one 512-sample"):
        remix.peak_frame_power(np.ones(511))


def test_remix_scales_the_noise_by_hand_computed_gain():
    clean = np.concatenate([np.full(512, 0.1), np.full(512, 0.2), np.full(176, 1.0)])
    noise = np.concatenate([np.full(512, 0.05), np.zeros(512), np.full(176, 0.9)])
    # power(clean) = 20.48, power(noise) = 512 * 0.0025 = 1.28 (tail ignored):
    # at 0 dB the gain is sqrt(20.48 / 1.28) = 4; at 20 dB, 0.4.
    np.testing.assert_allclose(remix.remix(clean, clean + noise, 0.0), clean + 4 * noise)
    np.testing.assert_allclose(remix.remix(clean, clean + noise, 20.0), clean + 0.4 * noise)


@pytest.mark.parametrize("snr_db", [-10.0, 0.0, 7.5, 30.0])
def test_remix_snr_equals_the_target_by_peak_frame_power(snr_db):
    rng = np.random.default_rng(3)
    clean = speechlike(5, 5000)
    noisy = clean + 0.3 * rng.standard_normal(5000) * np.linspace(0.2, 1, 5000)
    mixed = remix.remix(clean, noisy, snr_db)
    measured = 10 * np.log10(remix.peak_frame_power(clean) / remix.peak_frame_power(mixed - clean))
    assert measured == pytest.approx(snr_db, abs=1e-9)


def test_remix_refuses_what_has_no_snr():
    clean = speechlike(1, 2048)
    with pytest.raises(ValueError, match="no noise"):
        remix.remix(clean, clean, 0.0)
    with pytest.raises(ValueError, match="silent"):
        remix.remix(np.zeros(2048), clean, 0.0)
    with pytest.raises(ValueError, match="equal length"):
        remix.remix(clean, clean[:-1], 0.0)


def test_to_pcm16_floors_and_clips_like_libsndfile():
    values = np.array([0.7, 0.5, -0.3, 1.5, 2.5, -2.5, 40000, -40000, 32767.2, -32768.0]) / 32768
    np.testing.assert_array_equal(remix.to_pcm16(values), [0, 0, -1, 1, 2, -3, 32767, -32768, 32767, -32768])


def test_to_pcm16_matches_what_soundfile_writes(tmp_path):
    version = tuple(int(p) for p in re.findall(r"\d+", soundfile.__libsndfile_version__)[:3])
    if version > (1, 2, 2):
        pytest.skip("libsndfile after 1.2.2 rounds to nearest; Picovoice's results predate it")
    audio = np.random.default_rng(0).uniform(-1.2, 1.2, 50000)
    soundfile.write(str(tmp_path / "x.wav"), audio, RATE)  # Picovoice's call: default subtype PCM_16
    np.testing.assert_array_equal(soundfile.read(str(tmp_path / "x.wav"), dtype="int16")[0], remix.to_pcm16(audio))
