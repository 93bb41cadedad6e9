"""STOI and ESTOI through pystoi.

STOI: Taal, Hendriks, Heusdens and Jensen, "An Algorithm for Intelligibility
Prediction of Time-Frequency Weighted Noisy Speech", IEEE TASLP 2011.
ESTOI: Jensen and Taal, "An Algorithm for Predicting the Intelligibility of
Speech Masked by Modulated Noise Maskers", IEEE TASLP 2016.

Both are ``pystoi.stoi(clean, processed, fs, extended=False|True)``: it resamples
to 10 kHz, drops frames more than 40 dB below the loudest, and needs at least
30 frames (384 ms) of what remains. Below that it warns and returns 1e-5; that
sentinel is a failure with a reason here, never a score.
"""
from __future__ import annotations

import warnings
from importlib import metadata
from typing import Callable

import numpy as np

from nsbench.hookspecs import hookimpl
from nsbench.types import MetricInputs, MetricSpec, MetricUndefined

PYSTOI_VERSION = "0.4.1"  # the version the tests compare against
INSTALL = f"pip install pystoi=={PYSTOI_VERSION}"

# pystoi's RuntimeWarning text when too few frames survive silent-frame removal.
TOO_FEW_FRAMES_WARNING = "Not enough STFT frames"
TOO_FEW_FRAMES = (
    "fewer than 30 frames (384 ms at 10 kHz) of clean voice left after pystoi "
    "removed silent frames; pystoi returned its 1e-5 sentinel"
)


def stoi(clean: np.ndarray, processed: np.ndarray, sample_rate: int, *, extended: bool = False) -> float:
    """STOI (Taal et al. 2011), or ESTOI (Jensen and Taal 2016) with ``extended=True``.

    Exactly ``pystoi.stoi(clean, processed, sample_rate, extended=extended)`` on
    float64 copies of the arrays (float32 clips widen exactly, so this matches a
    caller that read the WAV files as float64, as Picovoice's benchmark does).
    Raises MetricUndefined when pystoi warns that fewer than 30 frames remain.
    """
    import pystoi  # heavy-ish (scipy); only when the metric runs

    clean64 = np.asarray(clean, dtype=np.float64)
    processed64 = np.asarray(processed, dtype=np.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score = pystoi.stoi(clean64, processed64, sample_rate, extended=extended)
    for warning in caught:
        if issubclass(warning.category, RuntimeWarning) and TOO_FEW_FRAMES_WARNING in str(warning.message):
            raise MetricUndefined(TOO_FEW_FRAMES)
    for warning in caught:  # anything else still reaches the user
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return float(score)


def pystoi_version() -> str:
    try:
        return metadata.version("pystoi")
    except metadata.PackageNotFoundError:
        return ""


def stoi_metric(inputs: MetricInputs) -> float:
    return stoi(inputs.clean, inputs.output, inputs.sample_rate)


def estoi_metric(inputs: MetricInputs) -> float:
    return stoi(inputs.clean, inputs.output, inputs.sample_rate, extended=True)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    register(MetricSpec(
        name="stoi",
        func=stoi_metric,
        unit="0-1",
        higher_is_better=True,
        description="Short-time objective intelligibility (Taal et al. 2011), pystoi.stoi extended=False",
        ignores="quiet passages (frames 40 dB below the loudest are dropped) and overall level",
        requires=("pystoi",),
        install=INSTALL,
        version=pystoi_version,
    ))
    register(MetricSpec(
        name="estoi",
        func=estoi_metric,
        unit="0-1",
        higher_is_better=True,
        description=(
            "Extended STOI (Jensen and Taal 2016), pystoi.stoi extended=True; "
            "better than STOI on modulated maskers such as music"
        ),
        ignores="quiet passages (frames 40 dB below the loudest are dropped) and overall level",
        requires=("pystoi",),
        install=INSTALL,
        version=pystoi_version,
    ))
