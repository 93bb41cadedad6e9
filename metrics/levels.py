"""Voice level and music attenuation, gated by the clean voice's activity.

As in the nomus evaluation write-up: split the clean voice into 20 ms segments.
A segment is voice-active unless it is more than 40 dB below the loudest 20 ms
segment of that clean voice; otherwise it is voice-silent.

* voice level (dB) = 10 log10(sum over voice-active segments of out^2 /
  same of clean^2). A passthrough at -5 dB SNR reads about +6.2 dB, so read it
  beside the gain.
* music attenuation (dB) = 10 log10(sum over voice-silent segments of out^2 /
  same of input^2). Negative means removed; passthrough is exactly 0. Undefined
  when no segment is voice-silent; on music-only clips (clean all zeros) every
  segment is voice-silent, so it covers the whole clip.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

# The gate (20 ms segments within 40 dB of the loudest) is the core's: the output
# checks' voice_deleted uses it too (nsbench.audio.activity).
from nsbench.adapters import SILENCE_BELOW_DB, Features, segment_length, segment_sums, voice_active_segments  # noqa: F401
from nsbench import MetricInputs, MetricSpec, MetricUndefined, ReferenceAudio, hookimpl
from nsbench import Column

# Same floor and ceiling as SI-SDR: an exactly silent output reads -120, not -inf.
CLAMP_DB = 120.0


def _check_lengths(*arrays: np.ndarray) -> None:
    sizes = {np.asarray(a).size for a in arrays}
    if len(sizes) != 1:
        raise ValueError(f"arrays differ in length: {sorted(sizes)}")


def _clamped_db(numerator: float, denominator: float) -> float:
    if numerator == 0.0:
        return -CLAMP_DB
    return float(np.clip(10.0 * np.log10(numerator / denominator), -CLAMP_DB, CLAMP_DB))


def clean_segments(audio: ReferenceAudio) -> Features:
    """What voice level and music attenuation take from the clean voice and the
    input alone, once per clip for every engine (nsbench.store.reference): the
    voice-active segments, the clean voice's energy in them, and the input's
    energy in the others."""
    _check_lengths(audio.noisy, audio.clean)
    active = voice_active_segments(audio.clean, audio.sample_rate)
    seg = segment_length(audio.sample_rate)
    return {
        "active": active,
        "clean_energy": float(segment_sums(audio.clean, seg)[active].sum()),
        "input_energy": float(segment_sums(audio.noisy, seg)[~active].sum()),
    }


def voice_level_db(output: np.ndarray, clean: np.ndarray, sample_rate: int,
                   reference: Features | None = None) -> float:
    """10 log10(sum over voice-active segments of output^2 / same of clean^2) (nomus write-up).

    Segments are 20 ms of the clean voice; see ``voice_active_segments`` for the
    threshold and the trailing partial segment, which counts like any other.
    Raises MetricUndefined when the clean voice is silent (no active segment).
    An exactly silent output reads -120 dB (clamped like SI-SDR), not -inf.
    ``reference``: ``clean_segments`` of this clip, where the caller shares it.
    """
    _check_lengths(output, clean)
    if reference is None:
        reference = clean_segments(ReferenceAudio(clean, clean, sample_rate))
    active = reference["active"]
    if not active.any():
        raise MetricUndefined("the clean voice is silent: no voice-active segment")
    out_energy = float(segment_sums(output, segment_length(sample_rate))[active].sum())
    return _clamped_db(out_energy, reference["clean_energy"])


def music_attenuation_db(output: np.ndarray, noisy: np.ndarray, clean: np.ndarray, sample_rate: int,
                         reference: Features | None = None) -> float:
    """10 log10(sum over voice-silent segments of output^2 / same of input^2) (nomus write-up).

    Negative means removed; passthrough is exactly 0. Segments are 20 ms of the
    clean voice (see ``voice_active_segments``; the trailing partial segment
    counts like any other, so on a music-only clip the whole clip is covered).
    Raises MetricUndefined when no segment is voice-silent, or when the input is
    exactly silent in all of them (nothing to attenuate). An output exactly
    silent there reads -120 dB (clamped like SI-SDR), not -inf.
    ``reference``: ``clean_segments`` of this clip, where the caller shares it.
    """
    _check_lengths(output, noisy, clean)
    if reference is None:
        reference = clean_segments(ReferenceAudio(clean, noisy, sample_rate))
    silent = ~reference["active"]
    if not silent.any():
        raise MetricUndefined("no voice-silent segment: the voice never pauses for 20 ms")
    input_energy = reference["input_energy"]
    if input_energy == 0.0:
        raise MetricUndefined("the input is silent wherever the voice is: nothing to attenuate")
    out_energy = float(segment_sums(output, segment_length(sample_rate))[silent].sum())
    return _clamped_db(out_energy, input_energy)


def voice_level_metric(inputs: MetricInputs) -> float:
    return voice_level_db(inputs.output, inputs.clean, inputs.sample_rate, inputs.feature(clean_segments))


def music_attenuation_metric(inputs: MetricInputs) -> float:
    return music_attenuation_db(inputs.output, inputs.noisy, inputs.clean, inputs.sample_rate, inputs.feature(clean_segments))


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    register(MetricSpec(
        name="voice_level_db",
        func=voice_level_metric,
        unit="dB",
        higher_is_better=True,
        description=(
            "Output energy over clean-voice energy in the 20 ms segments where the clean voice "
            "is active (within 40 dB of its loudest segment); 0 dB keeps the voice's level, "
            "noise left in raises it (passthrough at -5 dB SNR reads about +6.2)"
        ),
        ignores="what the output contains: residual noise counts as voice; read it beside the gain",
        needs_voice=True,
        columns={"voice_level_db": Column("voice level", 2, 60)},
        voice_drop_role="level",
    ))
    register(MetricSpec(
        name="music_attenuation_db",
        func=music_attenuation_metric,
        unit="dB",
        higher_is_better=False,
        description=(
            "Output energy over input energy in the 20 ms segments where the clean voice is "
            "silent (more than 40 dB below its loudest segment); negative means removed, "
            "passthrough 0; the whole clip on music-only clips; an exactly silent output reads -120"
        ),
        ignores="what happens while the voice is active",
        needs_voice=False,
        columns={"music_attenuation_db": Column("music att.", 2, 50)},
    ))
