"""Short-time Fourier magnitudes as librosa 0.11 computes them by default, in
numpy: the one STFT the report's spectrograms (nsbench.report.spectrograms)
and DNSMOS's P.808 features (metrics/dnsmos.py) share.

librosa's ``stft(y, n_fft, hop_length)`` centres the frames (``n_fft // 2``
zeros on each side), windows them with a periodic Hann window and takes
``rfft``. Importing librosa for it cost 1.9 s of CPU once numba's on-disk cache
is warm, and 26 s the first run after an install (bench/bench_spectrograms.py),
more than the images themselves; the tests check this against librosa.
"""
from __future__ import annotations

import numpy as np


def periodic_hann(length: int) -> np.ndarray:
    """scipy's ``get_window("hann", length)`` (fftbins=True), as librosa uses it."""
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)


def centred_magnitudes(samples: np.ndarray, n_fft: int, hop: int) -> np.ndarray:
    """(frames, n_fft // 2 + 1) float64 |STFT| of a 1-D signal, frames first."""
    samples = np.asarray(samples, dtype=np.float64)
    half = n_fft // 2
    padded = np.concatenate([np.zeros(half), samples, np.zeros(half)])
    count = 1 + (len(padded) - n_fft) // hop if len(padded) >= n_fft else 0  # librosa refuses a shorter one
    index = np.arange(count)[:, None] * hop + np.arange(n_fft)[None, :]
    return np.abs(np.fft.rfft(padded[index] * periodic_hann(n_fft), axis=1))
