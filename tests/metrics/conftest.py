"""Fixtures of the metric tests: one espeak sentence and its noisy copies,
made once per test module (tests/helpers/speech.py)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.speech import CLIP_SAMPLES, SENTENCE, SNRS_DB, with_noise


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    from nsbench.synth.speech import speak

    words = speak(SENTENCE, "en-us+m3")
    clip = np.zeros(CLIP_SAMPLES, dtype=np.float32)
    clip[1600 : 1600 + len(words)] = words[: CLIP_SAMPLES - 1600]
    return clip


@pytest.fixture(scope="module")
def noisy(speech) -> dict[float, np.ndarray]:
    return {snr: with_noise(speech, snr) for snr in SNRS_DB}
