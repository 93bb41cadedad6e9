"""BSS-eval SDR, SIR and SAR (Vincent, Gribonval and Fevotte, IEEE TASLP
2006) of the output as an estimate of the speech, through ``fast_bss_eval``
(Scheibler 2022), as URGENT 2025's ``sdr_metric`` calls it: a 512-tap
distortion filter, no mean removal, no permutation, SDR clamped at 50 dB.

Two references, the speech and the noise (the noisy input minus the clean
voice): the output's projection on the speech's delays is the target, on both
references' delays the target plus interference, and the rest is artefacts.
SIR and SAR need that second reference (with the speech alone every error is
an artefact and SIR is the clamp); SDR does not depend on it, and equals
URGENT's one-reference SDR.

NumPy 2 reads ``np.linalg.solve(a, b)`` with a 1-D-per-system ``b`` of shape
(..., M) as a stack of matrices, so ``fast_bss_eval.bss_eval_sources(...,
compute_permutation=False)`` 0.1.4 raises on every call ("mismatch in its core
dimension"). Its pairwise form (every reference against every estimate, what
``compute_permutation=True`` uses) passes ``b`` as a matrix and runs: this
module calls that form, ``square_cosine_metrics(..., pairwise=True)``, and reads
the pair (speech, output), the value the non-pairwise call would give; the
coherences become decibels here with fast_bss_eval's clamp rule.
"""
from __future__ import annotations

import functools
import math
from importlib import metadata
from typing import Any, Callable, Mapping

import numpy as np

from nsbench import MetricContext, MetricInputs, MetricSpec, MetricUndefined, hookimpl

FAST_BSS_EVAL_VERSION = "0.1.4"  # the version whose internals this module calls
INSTALL = f"pip install 'nsbench[paper]' (or fast-bss-eval=={FAST_BSS_EVAL_VERSION})"
FILTER_LENGTH = 512  # fast_bss_eval's default, URGENT's
DEFAULT_CLAMP_DB = 50.0  # URGENT 2025's clamp_db
CLAMP_FLAG = "bss_clamp_db"

NO_NOISE = "the input is the clean voice: no noise reference, so no interference to tell from artefacts"
SILENT = "the clean voice or the output is digital silence: no projection to measure"
TOO_SHORT = f"clip shorter than the {FILTER_LENGTH}-tap distortion filter"
DEPENDENT = ("the references' delayed copies are linearly dependent (the noise is a filtered copy of the "
             "speech, or periodic): the projection has no unique solution")


def clamped_db(coherence: float, clamp_db: float) -> float:
    """fast_bss_eval's ``_coherence_to_neg_sdr``, negated: ``10 log10(c / (1 - c))``
    with c kept where the result lies within +-clamp_db (inf: no clamp)."""
    ratio = 10.0 ** (-clamp_db / 10.0)
    eps = ratio / (1.0 + ratio)
    coherence = min(max(coherence, eps), 1 - eps)
    # The clamp's own rounding leaves up to ~1e-11 dB beyond it: cut to the bound.
    return min(clamp_db, max(-clamp_db, 10.0 * math.log10(coherence / (1 - coherence))))


def near_unit_peak(signal: np.ndarray) -> np.ndarray:
    """The signal times the power of two that brings its peak near 1: exact,
    so fast_bss_eval's normalisation gives the same bits, but a signal whose
    norm is below its 1e-6 floor (which would not be normalised) is."""
    peak = float(np.max(np.abs(signal)))
    return signal * 2.0 ** -round(math.log2(peak)) if peak > 0 else signal


def bss_eval(clean: np.ndarray, noisy: np.ndarray, output: np.ndarray, clamp_db: float) -> dict[str, float]:
    """SDR, SIR and SAR in dB of ``output`` against the references (clean, noisy - clean), float64."""
    from fast_bss_eval.numpy.metrics import square_cosine_metrics  # only when the metric runs

    clean = np.asarray(clean, np.float64)
    references = np.stack([near_unit_peak(clean), near_unit_peak(np.asarray(noisy, np.float64) - clean)])
    estimate = near_unit_peak(np.asarray(output, np.float64))[None, :]
    try:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            coherence_sdr, coherence_sar = square_cosine_metrics(references, estimate, filter_length=FILTER_LENGTH, pairwise=True)
    except np.linalg.LinAlgError:
        raise MetricUndefined(DEPENDENT) from None
    sdr, sar = float(coherence_sdr[0, 0]), float(coherence_sar[0, 0])
    return {"bss_sdr": clamped_db(sdr, clamp_db), "bss_sir": clamped_db(sdr / sar, clamp_db), "bss_sar": clamped_db(sar, clamp_db)}


def shared_bss_eval(inputs: MetricInputs, clamp_db: float) -> dict[str, float] | str:
    """The three values of this output, or why it has none: once for all three metrics."""
    if len(inputs.output) < FILTER_LENGTH:
        return TOO_SHORT
    if not np.any(inputs.clean) or not np.any(inputs.output):
        return SILENT
    if np.array_equal(inputs.noisy, inputs.clean):
        return NO_NOISE
    try:
        values = bss_eval(inputs.clean, inputs.noisy, inputs.output, clamp_db)
    except MetricUndefined as reason:
        return str(reason)
    return values if all(math.isfinite(v) for v in values.values()) else SILENT


def bss_metric(name: str, inputs: MetricInputs) -> float:
    outcome = inputs.output_feature(shared_bss_eval, float(inputs.options.get("clamp_db", DEFAULT_CLAMP_DB)))
    if isinstance(outcome, str):
        raise MetricUndefined(outcome)
    return outcome[name]


def clamp_options(flags: Mapping[str, Any], context: MetricContext) -> dict[str, Any]:
    """--bss-clamp-db, once per run: in the cache key and the provenance."""
    clamp_db = float(flags.get(CLAMP_FLAG, DEFAULT_CLAMP_DB))
    return {"clamp_db": clamp_db, "fingerprint": f"clamp_db={clamp_db!r}", "provenance": {"clamp_db": clamp_db}}


def fast_bss_eval_version() -> str:
    try:
        return metadata.version("fast-bss-eval")
    except metadata.PackageNotFoundError:
        return ""


def clamp_argument(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--bss-clamp-db", type=clamp_argument, default=DEFAULT_CLAMP_DB, metavar="DB",
        help=f"bound of bss_sdr, bss_sir and bss_sar in dB (default {DEFAULT_CLAMP_DB:g}, URGENT 2025's; inf: none)",
    )


COMMON = ("fast_bss_eval 512-tap BSS-eval as URGENT 2025's sdr_metric, references the speech and the noise "
          "(noisy minus clean), clamped at --bss-clamp-db")
DESCRIPTIONS = {
    "bss_sdr": f"BSS-eval signal-to-distortion ratio of the output as the speech: {COMMON}",
    "bss_sir": f"BSS-eval signal-to-interference ratio: the noise left in the output; {COMMON}",
    "bss_sar": f"BSS-eval signal-to-artefacts ratio: what is neither speech nor noise; {COMMON}",
}


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    for name, description in DESCRIPTIONS.items():
        register(MetricSpec(
            name=name, func=functools.partial(bss_metric, name), unit="dB", higher_is_better=True,
            description=description,
            ignores="level changes and any filtering of up to 512 taps (32 ms at 16 kHz), which count as the target",
            requires=("fast_bss_eval",), install=INSTALL, version=fast_bss_eval_version, default=False,
            options=clamp_options,
            # URGENT ranks the SDR; SIR and SAR are its two parts, which trade against each other.
            category="intrusive" if name == "bss_sdr" else "",
        ))
