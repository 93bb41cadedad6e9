"""Per-clip checks that a mean hides: the output's residual lag against the
clean voice, and degenerate outputs (a collapsed model, silence, clipping,
a voice turned down or deleted).

Each check is a cheap pure function of one clip's arrays or scores, run by
the run loop beside the metrics (outside the timer); ``summary`` aggregates
them per engine, naming the clips.
"""
from __future__ import annotations

import argparse
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.audio import blocks
from nsbench.audio.activity import SILENCE_BELOW_DB, segment_length, segment_sums, voice_active_segments
from nsbench.audio.alignment import DEFAULT_MAX_LAG_SECONDS, estimate_lag
from nsbench.audio.blocks import arrays_equal
from nsbench.audio.sdr import si_sdr
from nsbench.plugins.records import Clip

# SI-SDR of the output against the *input* at or above this: the output is the
# input up to a gain (float32 rounding alone leaves it above 100 dB).
IDENTICAL_DB = 60.0
# Between this and IDENTICAL_DB: the output differs from the input by less
# than 0.01% of its energy, far less than the noise it should have removed.
BARELY_CHANGED_DB = 40.0
# The two checks above apply only where the input's own SI-SDR is below this:
# the noise is then at least 1% of the voice's energy, so an engine that
# removes it must change the input by more than BARELY_CHANGED_DB allows.
NOISY_INPUT_BELOW_DB = 20.0
# Output energy more than this below the clean voice's: silent. Not checked
# on clips with no voice, where silence is the right answer.
SILENT_BELOW_VOICE_DB = 60.0
# A sample at or above this magnitude is clipped (0.999: a limiter at full
# scale); more than CLIPPED_SHARE of the samples so, and more than in the
# input, flags the clip.
CLIPPED_LEVEL = 0.999
CLIPPED_SHARE = 0.001
# A voice level drop beyond this (dB) while the gain (SI-SDRi) is positive:
# the engine removed noise by turning the voice down too. --voice-drop-db.
VOICE_DROP_DB = 1.0
# What the output keeps of the clean voice, on the voice's active 20 ms segments
# (voice_level_db's: within 40 dB of its loudest), more than this below the voice:
# deleted. The same 40 dB below which the level metrics call a segment
# voice-silent, so what is left would count as silence there. Measured as the
# gain of the clean voice in the output (least squares), not as the output's
# level, which counts the noise left: RNNoise's output on a demo clip whose
# voice it removed read 18 dB below the voice, its voice 61 dB below.
VOICE_DELETED_BELOW_DB = SILENCE_BELOW_DB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--voice-drop-db", type=float, default=VOICE_DROP_DB, metavar="DB",
                        help=f"flag clips whose voice level drops by more than DB while SI-SDRi is positive (default {VOICE_DROP_DB:g})")


def flag_descriptions(voice_drop_db: float = VOICE_DROP_DB) -> dict[str, str]:
    """Flag name -> what it means, in report order."""
    return {**FLAGS, "voice_level_drop": voice_drop_text(voice_drop_db)}


def voice_drop_text(voice_drop_db: float) -> str:
    return f"voice level below {-voice_drop_db:g} dB while SI-SDRi is positive: the voice was turned down"


FLAGS = {
    "identical_to_input": f"output equals the input up to a gain (SI-SDR against the input >= {IDENTICAL_DB:g} dB): a collapsed model",
    "barely_changed": (
        f"output differs from the input by less than {BARELY_CHANGED_DB:g} dB (SI-SDR against the input) "
        f"on a noisy clip (input SI-SDR < {NOISY_INPUT_BELOW_DB:g} dB): too little change to be doing anything"
    ),
    "silent": f"output is silent: more than {SILENT_BELOW_VOICE_DB:g} dB below the clean voice",
    "clipped": f"more than {CLIPPED_SHARE:.1%} of output samples at |x| >= {CLIPPED_LEVEL}, and more than in the input",
    "nan_inf": "output holds NaN or Inf samples (the clip failed)",
    "voice_level_drop": voice_drop_text(VOICE_DROP_DB),
    "voice_deleted": (
        f"what the output keeps of the voice is more than {VOICE_DELETED_BELOW_DB:g} dB below the clean voice "
        f"where it speaks (the clean voice's gain in the output): the voice was removed"
    ),
}
NO_CORRELATION = "output silent or unrelated to the clean voice (normalised correlation below 0.1 within ±100 ms)"
# The lag check has no form without the clean voice (against the input it
# would find the engine's own delay, which the harness removed already).
NO_REFERENCE_LAG = "no reference: not checked"
# Without a reference, silence is judged against the input: an output this far
# below the input's energy is silent.
SILENT_BELOW_INPUT_DB = SILENT_BELOW_VOICE_DB
# What the no-reference forms of the checks judge, for the reports.
NO_REFERENCE_CHECKS = (
    f"on clips without a clean reference: identical_to_input is judged against the input as always; "
    f"silent is the output more than {SILENT_BELOW_INPUT_DB:g} dB below the input; barely_changed is not "
    f"checked (nothing says how noisy the input is); the residual lag is not checked"
)


def residual_lag(output: np.ndarray, clip: Clip) -> tuple[int | None, str]:
    """Samples (at the clip's rate) by which the output, its declared delay
    already removed, lags the clean voice; (None, why) when it was sought and
    not found; (None, "") where it does not apply (no voice, separation clip)."""
    if clip.is_separation or not clip.has_voice:
        return None, ""
    if clip.clean is None:
        return None, NO_REFERENCE_LAG
    max_lag = round(DEFAULT_MAX_LAG_SECONDS * clip.sample_rate)
    lag = estimate_lag(output, clip.clean, max_lag)
    if lag:  # a lag is confirmed in the speech band, where a low band's extra phase cannot fake it
        in_band = estimate_lag(speech_band(output, clip.sample_rate), speech_band(clip.clean, clip.sample_rate), max_lag)
        lag = lag if in_band is None else in_band
    return (lag, "") if lag is not None else (None, NO_CORRELATION)


# A codec is not a pure delay: AMR-NB lags 79-80 samples (16 kHz) above 500 Hz
# but 105-107 below 250 Hz (bench/bench_amr_delay.py), so on a male voice with
# much energy there the broadband peak read 15-22 samples late after the 79.2
# removed. The telephone band holds the voice on every clip and no such phase.
SPEECH_BAND_HZ = (300.0, 3400.0)


def speech_band(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """``audio`` with everything outside SPEECH_BAND_HZ removed (a zero-phase
    mask of its spectrum: no lag of its own)."""
    spectrum = np.fft.rfft(np.asarray(audio, dtype=np.float64))
    frequencies = np.fft.rfftfreq(len(audio), 1 / sample_rate)
    spectrum[(frequencies < SPEECH_BAND_HZ[0]) | (frequencies > SPEECH_BAND_HZ[1])] = 0
    return np.fft.irfft(spectrum, len(audio)).astype(np.float32)


def output_flags(output: np.ndarray, clip: Clip, lag: int | None = None) -> list[str]:
    """The array-based flags of one clip, in FLAGS order (``lag``: residual_lag's, which voice_deleted allows for)."""
    if clip.is_separation:
        return []
    if clip.clean is None:
        return no_reference_flags(output, clip)
    flags = []
    noisy_input = not arrays_equal(clip.noisy, clip.clean)
    if noisy_input and si_sdr(clip.noisy, clip.clean) < NOISY_INPUT_BELOW_DB:
        similarity = si_sdr(output, clip.noisy)
        if similarity >= IDENTICAL_DB:
            flags.append("identical_to_input")
        elif similarity >= BARELY_CHANGED_DB:
            flags.append("barely_changed")
    silent = clip.has_voice and energy(output) < energy(clip.clean) * 10 ** (-SILENT_BELOW_VOICE_DB / 10)
    if silent:
        flags.append("silent")
    clipped = clipped_samples(output)
    if clipped > CLIPPED_SHARE * output.size and clipped > clipped_samples(clip.noisy):
        flags.append("clipped")
    if clip.has_voice and not silent and voice_kept_db(output, clip.clean, clip.sample_rate, lag or 0) < -VOICE_DELETED_BELOW_DB:
        flags.append("voice_deleted")  # silent says more, where it holds
    return flags


def voice_kept_db(output: np.ndarray, clean: np.ndarray, sample_rate: int, lag: int = 0) -> float:
    """20 log10 |g|, g the least-squares gain of the clean voice in the output
    over the voice's active segments (0 dB: all of it kept, at its level; the
    sign does not matter, as for SI-SDR). ``lag``: samples the output lags
    the clean voice by, taken back first. -inf where nothing of it is left."""
    if lag > 0:
        output, clean = output[lag:], clean[: len(clean) - lag]
    elif lag < 0:
        output, clean = output[: len(output) + lag], clean[-lag:]
    seg = segment_length(sample_rate)
    active = voice_active_segments(clean, sample_rate)
    voice = float(segment_sums(clean, seg)[active].sum())
    if voice <= 0:
        return np.inf  # no voice to keep: nothing to judge
    shared = abs(float(segment_sums(output, seg, clean)[active].sum()))
    return 20 * np.log10(shared / voice) if shared > 0 else -np.inf


def no_reference_flags(output: np.ndarray, clip: Clip) -> list[str]:
    """The flags a clip without a clean reference can have (NO_REFERENCE_CHECKS)."""
    flags = []
    if energy(clip.noisy) > 0 and si_sdr(output, clip.noisy) >= IDENTICAL_DB:
        flags.append("identical_to_input")
    if energy(output) < energy(clip.noisy) * 10 ** (-SILENT_BELOW_INPUT_DB / 10):
        flags.append("silent")
    clipped = clipped_samples(output)
    if clipped > CLIPPED_SHARE * output.size and clipped > clipped_samples(clip.noisy):
        flags.append("clipped")
    return flags


def score_flags(scores: Mapping[str, float], metrics: Sequence[Any], voice_drop_db: float = VOICE_DROP_DB) -> list[str]:
    """Flags read from the clip's scores: voice_level_drop where the metric
    whose ``voice_drop_role`` is "level" fell below -voice_drop_db while the
    "improvement" one is positive (checked only where both were computed)."""
    role = {metric.voice_drop_role: metric.name for metric in metrics if metric.voice_drop_role}
    level, improvement = scores.get(role.get("level", ""), 0.0), scores.get(role.get("improvement", ""), 0.0)
    if level < -voice_drop_db and improvement > 0.0:
        return ["voice_level_drop"]
    return []


def energy(audio: np.ndarray) -> float:
    return blocks.energy(audio)


def clipped_samples(audio: np.ndarray) -> int:
    return blocks.count_where(audio, lambda part: np.abs(part) >= CLIPPED_LEVEL)
