"""SI-SDR, its improvement over the input, and plain SNR.

SI-SDR follows Le Roux, Wisdom, Erdogan and Hershey, "SDR - half-baked or well
done?", ICASSP 2019, eq. (1)-(2)::

    alpha  = <est, ref> / <ref, ref>
    target = alpha * ref
    noise  = est - target
    SI-SDR = 10 log10(|target|^2 / |noise|^2)

Two conventions are in use and reports must say which one they show:

* without mean removal (``zero_mean=False``, our default ``si_sdr``): torchmetrics'
  default, earthspecies/biodenoising ``evaluate.py``, VERSA ``si_snr``,
  ClearerVoice SpeechScore;
* with mean removal (``zero_mean=True``, ``si_sdr_zm``): the textbook definition,
  asteroid.

Plain SNR lives here rather than in ``levels``: it is the same whole-clip
energy ratio as SI-SDR minus the optimal scaling, shares its clamp and its
"silence is not perfect reconstruction" rule, and is read beside it (SI-SDR
forgives a gain change, SNR does not). ``levels`` is segment-wise and
voice-activity gated, which SNR is not.
"""
from __future__ import annotations

from typing import Callable

from nsbench import MetricInputs, MetricSpec, MetricUndefined, ReferenceAudio, hookimpl
# The maths live in the core (nsbench.adapters), shared with the output
# checks; imported here under their old names, which tests and plugins use.
from nsbench.adapters import CLAMP_DB, Features, arrays_equal, reference_energy, si_sdr, snr  # noqa: F401
from nsbench import Column

INPUT_IS_CLEAN = "input equals the clean reference: no improvement to measure"


# ----------------------------------------------------------------- metric functions


def clean_energy(audio: ReferenceAudio, zero_mean: bool) -> Features:
    """Shared by every engine of a run (nsbench.store.reference)."""
    return reference_energy(audio.clean, zero_mean)


def input_si_sdr(audio: ReferenceAudio) -> Features:
    """The passthrough's SI-SDR, the same for every engine: computed once per clip."""
    if arrays_equal(audio.noisy, audio.clean):
        return {"undefined": True}
    return {"value": si_sdr(audio.noisy, audio.clean)}


def _own_si_sdr(inputs: MetricInputs, zero_mean: bool = False) -> float:
    return si_sdr(inputs.output, inputs.clean, zero_mean=zero_mean, reference_side=inputs.feature(clean_energy, zero_mean))


def _input_si_sdr(inputs: MetricInputs) -> float:
    # With no noise the input scores +120 (clamped), so any "improvement" would
    # only measure the clamp.
    shared = inputs.feature(input_si_sdr)
    if "undefined" in shared:
        raise MetricUndefined(INPUT_IS_CLEAN)
    return shared["value"]


def si_sdr_metric(inputs: MetricInputs) -> float:
    return _own_si_sdr(inputs)


def si_sdr_zm_metric(inputs: MetricInputs) -> float:
    return _own_si_sdr(inputs, zero_mean=True)


def si_sdr_input_metric(inputs: MetricInputs) -> float:
    return _input_si_sdr(inputs)


def si_sdri_metric(inputs: MetricInputs) -> float:
    input_score = _input_si_sdr(inputs)
    return _own_si_sdr(inputs) - input_score


def snr_metric(inputs: MetricInputs) -> float:
    return snr(inputs.output, inputs.clean)


SCALE_BLIND = "overall level: scale-invariant, a voice turned down scores the same"


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    register(MetricSpec(
        name="si_sdr",
        func=si_sdr_metric,
        unit="dB",
        higher_is_better=True,
        description=(
            "Scale-invariant SDR of the output against the clean voice (Le Roux et al. 2019), "
            "without mean removal, as torchmetrics zero_mean=False and earthspecies/biodenoising; "
            "clamped to [-120, 120], silence scores -120"
        ),
        ignores=SCALE_BLIND,
        columns={"si_sdr": Column("SI-SDR out", 2, 20)},
    ))
    register(MetricSpec(
        name="si_sdr_zm",
        func=si_sdr_zm_metric,
        unit="dB",
        higher_is_better=True,
        description=(
            "Scale-invariant SDR with mean removal (textbook definition, asteroid); "
            "clamped to [-120, 120], silence scores -120"
        ),
        ignores=SCALE_BLIND + "; DC offsets are removed before scoring",
    ))
    register(MetricSpec(
        name="si_sdr_input",
        func=si_sdr_input_metric,
        unit="dB",
        higher_is_better=True,
        description=(
            "SI-SDR of the unprocessed noisy input against the clean voice, without mean "
            "removal (same convention as si_sdr); undefined when the input is the clean voice"
        ),
        ignores="the engine: it scores the input, the baseline for si_sdri",
        columns={"si_sdr_input": Column("SI-SDR in", 2, 10, plotted=False)},
    ))
    register(MetricSpec(
        name="si_sdri",
        func=si_sdri_metric,
        unit="dB",
        higher_is_better=True,
        # The SI-SDR figure that ranks: on the same clips it ranks exactly as si_sdr
        # (and si_sdr_zm), but it leaves out the clips whose input is the clean voice,
        # where the passthrough's si_sdr is the +120 dB clamp and would outrank every engine.
        category="intrusive",
        description=(
            "SI-SDR improvement: si_sdr(output) - si_sdr(noisy input), per clip, without mean "
            "removal; undefined when the input is the clean voice"
        ),
        ignores=SCALE_BLIND + "; how good the input already was",
        columns={"si_sdri": Column("SI-SDRi", 2, 30)},
        headline_by_default=True,
        voice_drop_role="improvement",
    ))
    register(MetricSpec(
        name="snr",
        func=snr_metric,
        unit="dB",
        higher_is_better=True,
        description=(
            "Plain SNR 10log10(|clean|^2 / |clean - output|^2), not scale-invariant "
            "(MDX per-stem SDR); clamped to [-120, 120]"
        ),
        ignores="which errors are audible: a gain change costs as much as noise of the same energy",
    ))
