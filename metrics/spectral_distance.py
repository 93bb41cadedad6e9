"""Log-spectral distance (``lsd``) as URGENT 2025 defines it
(urgent-challenge/urgent2025_challenge, ``evaluation_metrics/
calculate_intrusive_se_metrics.py``, ``lsd_metric``):

1. the output is scaled by ``<ref, out> / (<out, out> + eps)``, its best gain
   towards the clean voice (so the level does not count);
2. both go through librosa's default STFT, 32 ms frames every 16 ms
   (centred, periodic Hann; nsbench.adapters.centred_magnitudes);
3. per frame ``sqrt(mean_f log(|R|^2 / (|O| + eps)^2 + eps)^2)``, natural
   log, eps = 1e-8; the mean over frames.

Computed at the clip's own rate, in float64: URGENT reads float32 files, so
librosa computes its STFT in single precision there (docs/metrics.md says
how far that moves the value).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from nsbench import MetricInputs, MetricSpec, MetricUndefined, hookimpl
from nsbench.adapters import centred_magnitudes

FFT_SECONDS, HOP_SECONDS = 0.032, 0.016
EPS = 1.0e-08
NORM_ORDER = 2


def log_spectral_distance(clean: np.ndarray, output: np.ndarray, rate: int) -> float:
    """URGENT 2025's LSD of ``output`` against ``clean`` (lower is better, 0 for equal signals)."""
    clean, output = np.asarray(clean, np.float64), np.asarray(output, np.float64)
    output = output * (np.dot(clean, output) / (np.dot(output, output) + EPS))
    n_fft, hop = int(rate * FFT_SECONDS), int(rate * HOP_SECONDS)
    reference, estimate = centred_magnitudes(clean, n_fft, hop), centred_magnitudes(output, n_fft, hop)
    frames = np.log(np.square(reference) / np.square(estimate + EPS) + EPS) ** NORM_ORDER
    return float(np.mean(np.mean(frames, axis=1) ** (1 / NORM_ORDER)))


def lsd_metric(inputs: MetricInputs) -> float:
    if not np.any(inputs.output):
        # URGENT's scaling then multiplies by 0: every output bin is 0 and each
        # frame scores log(|R|^2 / eps^2): a number, but one of the floor.
        raise MetricUndefined("output is silent: the log-spectral distance only measures eps there")
    return log_spectral_distance(inputs.clean, inputs.output, inputs.sample_rate)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    register(MetricSpec(
        name="lsd",
        func=lsd_metric,
        unit="",
        higher_is_better=False,
        category="intrusive",
        description=(
            "Log-spectral distance as URGENT 2025 (calculate_intrusive_se_metrics.py): output scaled to its best gain, "
            "librosa STFT 32 ms / 16 ms, per frame the RMS over bins of ln(|R|^2 / (|O| + 1e-8)^2 + 1e-8), "
            "mean over frames; at the clip's rate"
        ),
        ignores="overall level (the output is scaled to its best gain first; outputs near 1e-8 excepted) and phase",
        default=False,
    ))
