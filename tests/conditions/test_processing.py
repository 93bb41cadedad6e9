"""The signal-processing conditions against analytic values (nsbench.builtin.conditions.processing)."""
from __future__ import annotations

import numpy as np
import pytest

from nsbench.audio.alignment import estimate_lag
from nsbench.builtin.conditions import processing

from tests.helpers.conditions import RATE, snr_db


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
