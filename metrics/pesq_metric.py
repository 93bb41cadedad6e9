"""PESQ, wide-band and narrow-band, through the PyPI ``pesq`` package.

Narrow-band: ITU-T P.862 (2001) with the P.862.1 mapping to MOS-LQO.
Wide-band: ITU-T P.862.2 (2005), at 16 kHz only. ``pesq`` (ludlows/python-pesq)
wraps the ITU reference C code: ``pesq.pesq(fs, ref, deg, mode)``.

Rates. P.862 takes 8 or 16 kHz input for narrow band (it applies its own
telephone-band filter), and the usual toolkits (torchmetrics, ClearerVoice
SpeechScore's NB_PESQ) pass 16 kHz audio straight to ``mode="nb"``. We do the
same, so our nb scores compare with theirs: a clip at 8 or 16 kHz is scored at
its own rate, a clip at any other rate is resampled to 16 kHz (soxr HQ) for
both modes. Resampling 16 kHz clips to 8 kHz first would change nb scores:
0.1 higher on espeak speech with white noise at 20 dB SNR here.

What the algorithm does before it compares: the wrapper divides both signals by
their common peak; the C code then scales each to a fixed power above 300 Hz
and aligns them in time, first over the whole file and then utterance by
utterance. So the score is blind to the output's level and to delays, and it
measures only what remains: noise, distortion, missing or added sound.

Failure modes, each a MetricUndefined with its reason here:

* fewer than 1/4 s of audio: ``BufferTooShortError``;
* no utterance found in the clean reference: ``NoUtterancesError``;
* an output with no power for the level alignment to divide by (all zeros, or
  so faint that float32 underflows): the C code returns NaN, which the
  wrapper's raising path turns into ``ValueError: cannot convert float NaN to
  integer``. We call it with ``on_error=RETURN_VALUES`` so the codes and the
  NaN come back as values; faint noise that does not underflow scores the
  floor (about 1.02), as it should.
"""
from __future__ import annotations

import math
from importlib import metadata
from typing import Callable

import numpy as np

from nsbench.adapters import resample
from nsbench import MetricInputs, MetricSpec, MetricUndefined, hookimpl

PESQ_VERSION = "0.0.4"  # the version the tests compare against
# No wheels on PyPI: pip compiles the ITU C code, so a C compiler is needed.
INSTALL = f"pip install 'nsbench[paper]' (or pesq=={PESQ_VERSION}; it builds from source: needs a C compiler, gcc)"

SCORING_RATE = 16000  # P.862.2 is defined at 16 kHz only; P.862 takes 16 kHz too
NB_ONLY_RATE = 8000  # P.862's other rate, narrow band only

# pesq's PesqError codes, returned as values with on_error=RETURN_VALUES.
BUFFER_TOO_SHORT = -6
NO_UTTERANCES_DETECTED = -7

TOO_SHORT = "clip shorter than 1/4 s: pesq needs at least that (BufferTooShortError)"
NO_UTTERANCES = "pesq detected no utterance in the clean reference (NoUtterancesError: 'No utterances detected')"
SILENT_OUTPUT = (
    "output is silent (all zeros, or too faint for pesq's float32 level alignment): "
    "pesq returned NaN"
)


def pesq_score(clean: np.ndarray, output: np.ndarray, sample_rate: int, *, mode: str) -> float:
    """PESQ MOS-LQO of ``output`` against ``clean``: ``mode="wb"`` (P.862.2)
    or ``"nb"`` (P.862 + P.862.1).

    At 16 kHz (and 8 kHz for nb) the arrays go to ``pesq.pesq`` untouched, so
    the result equals a direct call; other rates are resampled to 16 kHz with
    soxr HQ. Wide band needs content up to 8 kHz: a clip below 16 kHz is
    undefined, never upsampled. Raises MetricUndefined for pesq's expected
    failures (see the module doc).
    """
    import pesq  # compiled extension; only when the metric runs

    if mode not in ("wb", "nb"):
        raise ValueError(f"mode must be 'wb' or 'nb', not {mode!r}")
    if mode == "nb" and sample_rate == NB_ONLY_RATE:
        rate = NB_ONLY_RATE
    elif sample_rate >= SCORING_RATE:
        rate = SCORING_RATE
    else:
        raise MetricUndefined(
            f"clip is at {sample_rate} Hz: {'wide' if mode == 'wb' else 'narrow'}-band PESQ needs "
            f"{SCORING_RATE} Hz{'' if mode == 'wb' else ' or 8000 Hz'}, and upsampling cannot add the missing band"
        )
    reference = resample(np.asarray(clean), sample_rate, rate)
    degraded = resample(np.asarray(output), sample_rate, rate)
    if not np.any(degraded):
        # Known without running pesq: its level alignment would return NaN.
        raise MetricUndefined(SILENT_OUTPUT)
    result = pesq.pesq(rate, reference, degraded, mode, on_error=pesq.PesqError.RETURN_VALUES)
    if result == BUFFER_TOO_SHORT:
        raise MetricUndefined(TOO_SHORT)
    if result == NO_UTTERANCES_DETECTED:
        raise MetricUndefined(NO_UTTERANCES)
    if math.isnan(result):
        raise MetricUndefined(SILENT_OUTPUT)
    if result < 0:  # out of memory, invalid rate, unknown: not an expected property of the clip
        raise RuntimeError(f"pesq failed with error code {result}")
    return float(result)


def pesq_version() -> str:
    try:
        return metadata.version("pesq")
    except metadata.PackageNotFoundError:
        return ""


def wide_band_outcome(inputs: MetricInputs) -> float | str:
    """pesq_wb of the output, or the reason it has none (kept, so asked twice it runs once)."""
    try:
        return pesq_score(inputs.clean, inputs.output, inputs.sample_rate, mode="wb")
    except MetricUndefined as reason:
        return str(reason)


def shared_pesq_wb(inputs: MetricInputs) -> float:
    """Wide-band PESQ of this output, computed once however many metrics ask:
    ``pesq_wb`` and the composite measures (metrics/composite.py) use the one score."""
    outcome = inputs.output_feature(wide_band_outcome)
    if isinstance(outcome, str):
        raise MetricUndefined(outcome)
    return outcome


def pesq_wb_metric(inputs: MetricInputs) -> float:
    return shared_pesq_wb(inputs)


def pesq_nb_metric(inputs: MetricInputs) -> float:
    return pesq_score(inputs.clean, inputs.output, inputs.sample_rate, mode="nb")


IGNORES = (
    "overall level (pesq normalises both signals and aligns their levels) and delays "
    "(it aligns the whole file, then each utterance)"
)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    register(MetricSpec(
        name="pesq_wb",
        func=pesq_wb_metric,
        unit="MOS-LQO 1.04-4.64",
        higher_is_better=True,
        category="intrusive",
        description=(
            "Wide-band PESQ (ITU-T P.862.2) of the output against the clean voice at 16 kHz, "
            "PyPI pesq (ITU C code); clips at other rates resampled to 16 kHz with soxr HQ, "
            "undefined below 16 kHz"
        ),
        ignores=IGNORES,
        requires=("pesq",),
        install=INSTALL,
        version=pesq_version,
        default=False,
    ))
    register(MetricSpec(
        name="pesq_nb",
        func=pesq_nb_metric,
        unit="MOS-LQO 1.02-4.55",
        higher_is_better=True,
        description=(
            "Narrow-band PESQ (ITU-T P.862, P.862.1 mapping) of the output against the clean "
            "voice, PyPI pesq (ITU C code); 16 kHz clips scored at 16 kHz as torchmetrics and "
            "ClearerVoice do, 8 kHz clips at 8 kHz, other rates resampled to 16 kHz (soxr HQ)"
        ),
        ignores=IGNORES + "; everything outside the telephone band (about 300-3400 Hz)",
        requires=("pesq",),
        install=INSTALL,
        version=pesq_version,
        default=False,
    ))
