"""The numbers papers print on VoiceBank-DEMAND: the composite measures CSIG,
CBAK and COVL (Hu and Loizou, IEEE TASLP 2008), their parts (segmental SNR,
LLR, WSS), the frequency-weighted segmental SNR and the cepstral distance,
and the named set ``vbd-row``: PESQ (wide band), CSIG, CBAK, COVL, SSNR, STOI.

The regressions are Loizou's ``composite.m``, each clipped to [1, 5]::

    CSIG = 3.093 - 1.029 LLR + 0.603 PESQ - 0.009 WSS
    CBAK = 1.634 + 0.478 PESQ - 0.007 WSS + 0.063 segSNR
    COVL = 1.594 + 0.805 PESQ - 0.512 LLR - 0.007 WSS

with wide-band PESQ (P.862.2) inside, 95 % trimmed means of LLR and WSS and
segSNR over frames clipped to [-10, 35] dB, as CMGAN's
``src/tools/compute_metrics.py`` computes them (the measures: metrics/loizou.py).
The PESQ is ``pesq_wb``'s score of the same output, computed once for both.

Flavours (``--composite-flavour``), because the script's ``wss()`` divides its
input by 32768 before flooring band energies at -100 dB, so the composite
depends on the samples' scale:

* ``vbd`` (default): the samples on the int16 scale, as the script reads WAV
  files: the papers' row. Its noisy-input mean on VoiceBank-DEMAND is SEGAN's
  1.97 / 3.35 / 2.44 / 2.63 / 1.68, and at 16 kHz pysepm's ``composite``
  gives the same.
* ``float``: the same script fed samples in [-1, 1], as CMGAN's own
  ``evaluation.py`` and many later repositories do (CSIG up to 0.24 higher).

Rates: a clip at 16 kHz is scored as it is; above, it is resampled to 16 kHz
(soxr HQ) as ``pesq_wb`` is; below, at its own rate (Loizou's code takes 8 kHz
with a 10th-order LPC), where CSIG, CBAK and COVL are undefined with
``pesq_wb``.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from nsbench import MetricContext, MetricInputs, MetricSetSpec, MetricSpec, MetricUndefined, hookimpl
from nsbench.adapters import resample
from nsbench.builtin.metrics import loizou
from nsbench.builtin.metrics.pesq_metric import INSTALL as PESQ_INSTALL
from nsbench.builtin.metrics.pesq_metric import pesq_version, shared_pesq_wb

SCORING_RATE = 16000
INT16_SCALE = 32768.0


@dataclass(frozen=True)
class Flavour:
    name: str
    scale: float  # what samples in [-1, 1] are multiplied by before the script sees them
    about: str


FLAVOURS = {
    "vbd": Flavour("vbd", INT16_SCALE, "CMGAN's compute_metrics.py (the port of Loizou's composite.m) on int16-scaled "
                   "samples, as it reads WAV files: the papers' VoiceBank-DEMAND row"),
    "float": Flavour("float", 1.0, "CMGAN's compute_metrics.py fed float samples in [-1, 1], as CMGAN's "
                     "evaluation.py and later repositories do (its wss() then floors band energies 90 dB higher)"),
}
DEFAULT_FLAVOUR = "vbd"
FLAVOUR_FLAG = "composite_flavour"

# Loizou's composite.m: (constant, LLR, PESQ, WSS, segSNR) weights.
REGRESSIONS = {
    "csig": (3.093, -1.029, 0.603, -0.009, 0.0),
    "cbak": (1.634, 0.0, 0.478, -0.007, 0.063),
    "covl": (1.594, -0.512, 0.805, -0.007, 0.0),
}
TOO_SHORT = ("clip shorter than 37.5 ms (a 30 ms frame and a 7.5 ms hop, as the references count frames): "
             "the segmental measures have no frame to score")
NO_LPC = ("no frame has an LPC model: the clean voice or the output is digital silence throughout "
          "(the references return NaN)")


# ----------------------------------------------------------------- the audio as scored


def flavour_of(inputs: MetricInputs) -> Flavour:
    return FLAVOURS[inputs.options.get("flavour", DEFAULT_FLAVOUR)]


def scoring_rate(rate: int) -> int:
    return min(rate, SCORING_RATE)


def scored(audio: np.ndarray, rate: int, scale: float) -> np.ndarray:
    """float64 at the scoring rate, times ``scale`` (exact: a power of two)."""
    return np.asarray(resample(audio, rate, scoring_rate(rate)), dtype=np.float64) * scale


def script_parts(inputs: MetricInputs, flavour: str) -> dict[str, float]:
    """The script's segSNR, trimmed LLR and trimmed WSS of this output: once
    per output however many of ssnr, llr, wss, csig, cbak, covl ask."""
    scale, rate = FLAVOURS[flavour].scale, scoring_rate(inputs.sample_rate)
    return loizou.composite_parts(scored(inputs.clean, inputs.sample_rate, scale), scored(inputs.output, inputs.sample_rate, scale), rate)


def part(inputs: MetricInputs, name: str) -> float:
    parts = inputs.output_feature(script_parts, flavour_of(inputs).name)
    if math.isnan(parts[name]):
        raise MetricUndefined(TOO_SHORT if parts["frames"] < 1 else NO_LPC)
    return parts[name]


def pysepm_pair(inputs: MetricInputs) -> tuple[np.ndarray, np.ndarray, int]:
    """fwsegsnr and cd follow pysepm, whose own tests feed int16 samples; both
    are ratios, so the scale only moves its 2.2e-16 guards."""
    return (scored(inputs.clean, inputs.sample_rate, INT16_SCALE), scored(inputs.output, inputs.sample_rate, INT16_SCALE),
            scoring_rate(inputs.sample_rate))


# ----------------------------------------------------------------- metric functions


def composite(name: str, parts: Mapping[str, float], pesq: float) -> float:
    """One of CSIG, CBAK, COVL from its parts, clipped to [1, 5]."""
    constant, llr, quality, wss, ssnr = REGRESSIONS[name]
    value = constant + llr * parts["llr"] + quality * pesq + wss * parts["wss"] + ssnr * parts["ssnr"]
    return min(5.0, max(1.0, value))


def composite_metric(name: str, inputs: MetricInputs) -> float:
    pesq = shared_pesq_wb(inputs)  # first: its reason (a silent output) is the one to give
    return composite(name, {key: part(inputs, key) for key in ("llr", "wss", "ssnr")}, pesq)


def part_metric(name: str, inputs: MetricInputs) -> float:
    return part(inputs, name)


def fwsegsnr_metric(inputs: MetricInputs) -> float:
    value = loizou.fw_segmental_snr(*pysepm_pair(inputs))
    if math.isnan(value):
        raise MetricUndefined(TOO_SHORT)
    return value


def cd_metric(inputs: MetricInputs) -> float:
    value = loizou.cepstral_distance(*pysepm_pair(inputs))
    if math.isnan(value):
        raise MetricUndefined(TOO_SHORT)
    return value


def flavour_options(flags: Mapping[str, Any], context: MetricContext) -> dict[str, Any]:
    """--composite-flavour, once per run: in the cache key and the results' provenance."""
    flavour = FLAVOURS[flags.get(FLAVOUR_FLAG) or DEFAULT_FLAVOUR]
    return {"flavour": flavour.name, "fingerprint": f"composite-flavour={flavour.name}",
            "provenance": {"composite_flavour": flavour.name, "about": flavour.about}}


# ----------------------------------------------------------------- registration

SCRIPT = "as CMGAN's compute_metrics.py (--composite-flavour)"
LEVEL_BLIND = "overall level"
SPECS = (
    # name, function, unit, higher is better, description, ignores
    ("ssnr", functools.partial(part_metric, "ssnr"), "dB", True,
     "Segmental SNR (composite.m's segSNR): mean over 30 ms frames of the frame SNR clipped to [-10, 35] dB, " + SCRIPT,
     "how far below -10 dB or above 35 dB a frame is (silent and near-perfect frames count at the clip)"),
    ("llr", functools.partial(part_metric, "llr"), "", False,
     "Log-likelihood ratio of the 16th-order LPC envelopes (8 kHz: 10th), 95 % trimmed mean, not clipped at 2, "
     "the composite's own (pysepm's llr() clips frames at 2); " + SCRIPT,
     LEVEL_BLIND + " and all the LPC envelope does not hold (harmonics, phase)"),
    ("wss", functools.partial(part_metric, "wss"), "", False,
     "Weighted-slope spectral distance (Klatt 1982) over 25 critical bands, 95 % trimmed mean; " + SCRIPT
     + ", whose -100 dB floor depends on the samples' scale",
     LEVEL_BLIND + " above the -100 dB floor, and all but the slopes of the band energies"),
    ("fwsegsnr", fwsegsnr_metric, "dB", True,
     "Frequency-weighted segmental SNR over 25 critical bands, frames clipped to [-10, 35] dB, as pysepm's fwSNRseg "
     "(Loizou's fwseg.m)",
     LEVEL_BLIND + ": each frame's spectrum is normalised"),
    ("cd", cd_metric, "dB", False,
     "Cepstral distance of the LPC cepstra, frames capped at 10, 95 % trimmed mean, as pysepm's cepstrum_distance",
     LEVEL_BLIND + " and all the LPC envelope does not hold"),
)
COMPOSITES = (
    ("csig", "Composite signal distortion (CSIG, Hu and Loizou 2008), predicted MOS of the speech"),
    ("cbak", "Composite background intrusiveness (CBAK), predicted MOS of the background"),
    ("covl", "Composite overall quality (COVL), predicted MOS overall"),
)
ROW_SOURCE = ("SEGAN (Pascual et al. 2017, arXiv 1703.09452), noisy input 1.97 / 3.35 / 2.44 / 2.63 / 1.68, "
              "STOI 0.92, copied into most VoiceBank-DEMAND tables since")


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--composite-flavour", choices=tuple(FLAVOURS), default=DEFAULT_FLAVOUR,
        help="samples' scale for ssnr, llr, wss, csig, cbak, covl: vbd, int16 as the papers' VoiceBank-DEMAND "
             "row (default); float, [-1, 1] as CMGAN's evaluation.py",
    )


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    for name, func, unit, higher, description, ignores in SPECS:
        keyed = name in ("ssnr", "llr", "wss")
        register(MetricSpec(name=name, func=func, unit=unit, higher_is_better=higher, description=description,
                            ignores=ignores, default=False, options=flavour_options if keyed else None,
                            category="intrusive"))
    for name, description in COMPOSITES:
        register(MetricSpec(
            name=name, func=functools.partial(composite_metric, name), unit="MOS 1-5", higher_is_better=True,
            category="intrusive",
            description=f"{description}: composite.m's regression of LLR, WSS, segSNR and pesq_wb's score, "
                        f"clipped to [1, 5], {SCRIPT}",
            ignores="overall level and delay (as its parts); a regression fitted to listeners' ratings, "
                    "not a listening test",
            requires=("pesq",), install=PESQ_INSTALL, version=pesq_version, default=False, options=flavour_options,
        ))


@hookimpl
def register_metric_sets(register: Callable[[MetricSetSpec], None]) -> None:
    register(MetricSetSpec(
        name="vbd-row",
        metrics=("pesq_wb", "csig", "cbak", "covl", "ssnr", "stoi"),
        description="the VoiceBank-DEMAND paper row (PESQ wide band, CSIG, CBAK, COVL, SSNR, STOI)",
        columns=("PESQ", "CSIG", "CBAK", "COVL", "SSNR", "STOI"),
        decimals=2,
        source=ROW_SOURCE,
    ))
