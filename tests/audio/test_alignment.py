"""Lag estimation by cross-correlation, on constructed shifts."""
from __future__ import annotations

import numpy as np
import pytest

from nsbench.audio.alignment import estimate_lag

from tests.helpers.audio import tone_and_noise


def shifted(audio: np.ndarray, lag: int) -> np.ndarray:
    if lag >= 0:
        return np.concatenate([np.zeros(lag, audio.dtype), audio[: len(audio) - lag]])
    return np.concatenate([audio[-lag:], np.zeros(-lag, audio.dtype)])


@pytest.mark.parametrize("lag", [0, 1, 37, 160, 480, -3, -96])
def test_a_planted_shift_is_found_exactly(lag):
    clean, noise = tone_and_noise(1)
    speechlike = clean + noise
    assert estimate_lag(shifted(speechlike, lag), speechlike, max_lag=1600) == lag


def test_the_lag_is_found_through_added_noise():
    clean, noise = tone_and_noise(2)
    assert estimate_lag(shifted(clean, 320) + 3 * noise, clean, max_lag=1600) == 320


def test_silence_and_unrelated_signals_give_no_lag():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(16000), rng.standard_normal(16000)
    assert estimate_lag(np.zeros(16000), a, max_lag=1600) is None
    assert estimate_lag(a, b, max_lag=1600) is None


def test_next_fast_len_gives_scipys_real_transform_sizes():
    """alignment uses numpy.fft (scipy.fft costs 0.2-0.3 s to import) with its
    own next_fast_len: the 5-smooth sizes scipy.fft.next_fast_len(real=True) gives."""
    from scipy.fft import next_fast_len as scipy_next_fast_len

    from nsbench.audio.alignment import next_fast_len

    targets = [*range(1, 3000), 64001, 161601, 480000, 480001]
    assert [next_fast_len(n) for n in targets] == [scipy_next_fast_len(n, real=True) for n in targets]
