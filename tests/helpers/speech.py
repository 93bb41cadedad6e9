"""Real speech (espeak) for the metric tests, and noisy copies of it."""
from __future__ import annotations

import numpy as np

from nsbench.plugins.records import MetricInputs


SR = 16000


SENTENCE = "The birch canoe slid on the smooth planks."


# 2.4 s: looped once to 4.8 s, again to 9.6 s, which holds exactly one DNSMOS window,
# so each real DNSMOS call here costs one network run.
CLIP_SAMPLES = int(2.4 * SR)


SNRS_DB = (20.0, 10.0, 0.0)


def inputs(output: np.ndarray, clean: np.ndarray, rate: int = SR) -> MetricInputs:
    return MetricInputs(output=output, clean=clean, noisy=output, sample_rate=rate)


def with_noise(clean: np.ndarray, snr_db: float, seed: int = 0) -> np.ndarray:
    noise = np.random.default_rng(seed).standard_normal(clean.size)
    noise *= np.sqrt(np.sum(clean.astype(np.float64) ** 2) / np.sum(noise**2) / 10 ** (snr_db / 10))
    return (clean + noise).astype(np.float32)
