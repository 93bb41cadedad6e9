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
# ESTOI normalises each 1/3-octave band row of a 384 ms segment by its spread;
# an output constant over one (a DC offset, say) has none, and pystoi divides by zero.
NOT_A_NUMBER = (
    "pystoi returned NaN: the output does not vary within a 1/3-octave band over a 384 ms "
    "segment (a constant output), and a correlation with a constant is undefined"
)
# pystoi works at 10 kHz on 256-sample frames with a 128-sample hop and needs
# 30 frames after dropping silent ones: a clip of 4096 samples or fewer there
# can never have them (under 257 pystoi raises an AxisError instead of warning).
PYSTOI_RATE = 10000
MAX_TOO_SHORT = 256 + 30 * 128


def samples_at_pystoi_rate(length: int, sample_rate: int) -> int:
    """The length pystoi's resample_poly gives: ceil(length * 10000 / rate)."""
    return -(-length * PYSTOI_RATE // sample_rate)


def stoi(clean: np.ndarray, processed: np.ndarray, sample_rate: int, *, extended: bool = False) -> float:
    """STOI (Taal et al. 2011), or ESTOI (Jensen and Taal 2016) with ``extended=True``.

    Exactly ``pystoi.stoi(clean, processed, sample_rate, extended=extended)`` on
    float64 copies of the arrays (float32 clips widen exactly, so this matches a
    caller that read the WAV files as float64, as Picovoice's benchmark does).
    Raises MetricUndefined when pystoi warns that fewer than 30 frames remain,
    before calling it when the clip is too short to ever have them, and when
    it returns NaN (ESTOI of a constant output).
    """
    import pystoi  # heavy-ish (scipy); only when the metric runs

    clean64 = np.asarray(clean, dtype=np.float64)
    processed64 = np.asarray(processed, dtype=np.float64)
    if samples_at_pystoi_rate(len(clean64), sample_rate) <= MAX_TOO_SHORT:
        raise MetricUndefined(
            f"the clip lasts {1000 * len(clean64) / sample_rate:.1f} ms; STOI needs more than "
            f"{1000 * MAX_TOO_SHORT / PYSTOI_RATE:.1f} ms (30 frames of pystoi's at 10 kHz)"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score = pystoi.stoi(clean64, processed64, sample_rate, extended=extended)
    for warning in caught:
        if issubclass(warning.category, RuntimeWarning) and TOO_FEW_FRAMES_WARNING in str(warning.message):
            raise MetricUndefined(TOO_FEW_FRAMES)
    if not np.isfinite(score):  # its divide-by-zero warnings say nothing more
        raise MetricUndefined(NOT_A_NUMBER)
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
