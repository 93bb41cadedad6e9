"""DeepFilterNet3 on the demo-tts set's stationary cells."""
from __future__ import annotations

import time

import numpy as np

from nsbench.audio.files import resample
from nsbench.builtin.engines import deepfilternet

from tests.helpers.engine_checks import assert_improves_and_aligned, delays, run_builtin


def test_deepfilternet_improves_and_is_aligned(stationary):
    outcomes = run_builtin("deepfilternet", stationary)
    assert_improves_and_aligned(outcomes, stationary)
    assert delays(outcomes) == {"1440 samples at 48000 Hz"}


def test_deepfilternet_starts_each_clip_fresh_and_loads_the_model_in_prepare(stationary):
    """The same clip twice gives the same output (no state carried over), and the
    model loading that a fresh state costs happens in prepare(), outside the timer."""
    audio = resample(stationary[0].load().noisy[:16000], 16000, deepfilternet.SAMPLE_RATE)
    engine = deepfilternet.build({})
    try:
        first = engine.process(audio)  # the state built with the engine
        start = time.process_time()
        engine.prepare()
        loading = time.process_time() - start
        start = time.process_time()
        second = engine.process(audio)
        processing = time.process_time() - start
    finally:
        engine.close()
    assert len(first) == len(audio) and np.any(first)
    np.testing.assert_array_equal(first, second)
    # Loading takes 0.35-0.55 s of CPU; a second of audio about 0.2 s.
    assert loading > 0.2 and processing < loading, (loading, processing)
