"""Seeded test signals and MetricInputs for the built-in metrics' tests
(tests/metrics/test_sisdr.py, test_intelligibility.py, test_levels.py, ...)."""
from __future__ import annotations

import math

import numpy as np

from nsbench.plugins.records import MetricInputs

SR = 16000
HALF_DB = 20 * math.log10(0.5)  # -6.0206 dB


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def zero_mean(x: np.ndarray) -> np.ndarray:
    return x - x.mean()


def orthogonal_noise(s: np.ndarray, snr_db: float, seed: int = 1) -> np.ndarray:
    """Zero-mean noise exactly orthogonal to zero-mean ``s`` with |s|^2/|n|^2 = 10^(snr/10)."""
    n = zero_mean(rng(seed).standard_normal(s.size))
    n -= (n @ s) / (s @ s) * s  # stays zero-mean because s is
    return n * math.sqrt((s @ s) / (n @ n) / 10 ** (snr_db / 10))


def inputs(output, clean, noisy, **times) -> MetricInputs:
    return MetricInputs(
        output=np.asarray(output, dtype=np.float32),
        clean=np.asarray(clean, dtype=np.float32),
        noisy=np.asarray(noisy, dtype=np.float32),
        sample_rate=SR,
        **times,
    )


def speechlike(seconds: float, seed: int) -> np.ndarray:
    """Noise with a 4 Hz syllable-rate envelope, so pystoi keeps most frames."""
    t = np.arange(int(seconds * SR)) / SR
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)
    return (0.1 * envelope * rng(seed).standard_normal(t.size)).astype(np.float32)
