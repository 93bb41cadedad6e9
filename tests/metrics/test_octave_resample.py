"""metrics/octave_resample.py against pystoi's own resampler, bit for bit."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.helpers.lazy import LazyModule

octave = importlib.import_module("nsbench.builtin.metrics.octave_resample")
utils = LazyModule("pystoi.utils", skip_if_missing=True)

# 8-48 kHz take the numpy path; 44.1 kHz (a ~32,000-tap filter) goes to scipy.
RATES = (8000, 12000, 16000, 24000, 32000, 48000, 44100)


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("length", [1, 5, 257, 4001, 40000, 160001])
def test_equals_pystois_resample_oct(rate, length):
    signal = np.random.default_rng(length + rate).standard_normal(length) * 0.1
    ours, theirs = octave.resample_oct(signal, 10000, rate), utils.resample_oct(signal, 10000, rate)
    assert ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)


def test_block_edges_keep_the_same_bits(monkeypatch):
    """Outputs computed a block at a time, with blocks far smaller than usual,
    including blocks shorter than the filter."""
    signal = np.random.default_rng(3).standard_normal(30001)
    for block, length in ((7, 3001), (1000, 30001), (4097, 30001)):  # tiny blocks on a short signal: a call per tap each
        monkeypatch.setattr(octave, "BLOCK_OUTPUTS", block)
        for rate in (16000, 48000, 8000):
            ours = octave.resample_oct(signal[:length], 10000, rate)
            assert np.array_equal(ours, utils.resample_oct(signal[:length], 10000, rate))


def test_speech_level_signals_and_digital_silence():
    """Real-looking input: a quiet tone burst between exact zeros."""
    rate = 16000
    time = np.arange(rate * 2) / rate
    signal = np.where((time > 0.5) & (time < 1.2), 0.01 * np.sin(2 * np.pi * 440 * time), 0.0)
    ours, theirs = octave.resample_oct(signal, 10000, rate), utils.resample_oct(signal, 10000, rate)
    assert np.array_equal(ours, theirs)
    assert np.all(ours[:4000] == 0.0)  # silence stays exactly silent


def test_the_same_rate_is_a_copy():
    signal = np.arange(10.0)
    out = octave.resample_oct(signal, 10000, 10000)
    assert np.array_equal(out, signal) and out is not signal


def test_long_filters_take_scipys_path_and_short_ones_do_not():
    assert len(octave._filter(10000, 48000)) <= octave.MAX_FAST_TAPS < len(octave._filter(10000, 44100))
