"""Conditions that are signal processing rather than a codec: mastering
(limiter, compressor), hard clipping, 8-bit quantisation, the telephone band,
a quiet input; and ``none``, the input as it is.

All are zero-phase or memoryless, so the output stays sample-aligned with the
input. Each says whether it also applies to the clean reference
(``reference``): the band limit and the gain do, so the target is the voice
the engine could keep; the distortions do not, so the engine is scored
against the voice before the damage.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from nsbench.adapters import NO_CONDITION as NONE
from nsbench import ConditionSpec, hookimpl

# ----------------------------------------------------------------- loudness

# Loudness blocks and gates as ITU-R BS.1770-4 (400 ms, 75% overlap, absolute
# gate -70, relative gate -10 dB), without its K-weighting filter: a gated
# RMS in dBFS, so silence and pauses do not lower a clip's loudness.
LOUDNESS_BLOCK_SECONDS = 0.4
LOUDNESS_STEP_SECONDS = 0.1
ABSOLUTE_GATE_DB = -70.0
RELATIVE_GATE_DB = -10.0


def gated_loudness(audio: np.ndarray, rate: int) -> float:
    """Gated RMS level of ``audio`` in dBFS; -inf when it is silent."""
    block, step = int(LOUDNESS_BLOCK_SECONDS * rate), int(LOUDNESS_STEP_SECONDS * rate)
    squares = np.asarray(audio, dtype=np.float64) ** 2
    if len(squares) <= block:
        powers = np.array([squares.mean()]) if len(squares) else np.zeros(1)
    else:
        sums = np.concatenate([[0.0], np.cumsum(squares)])
        starts = np.arange(0, len(squares) - block + 1, step)
        powers = (sums[starts + block] - sums[starts]) / block
    levels = 10 * np.log10(np.maximum(powers, 1e-20))
    kept = powers[levels > ABSOLUTE_GATE_DB]
    if not kept.size:
        return -np.inf
    relative = 10 * np.log10(kept.mean()) + RELATIVE_GATE_DB
    kept = kept[10 * np.log10(kept) > relative]
    return float(10 * np.log10(kept.mean()))


def to_loudness(audio: np.ndarray, rate: int, target_dbfs: float) -> np.ndarray:
    level = gated_loudness(audio, rate)
    if not np.isfinite(level):  # silence stays silence
        return np.asarray(audio, dtype=np.float64)
    return np.asarray(audio, dtype=np.float64) * 10 ** ((target_dbfs - level) / 20)


# ------------------------------------------------------------ gain computer

# The gain is computed at a control rate of one value per millisecond (a
# 1 ms step is far below any attack or release time used here) and
# interpolated to the samples: a Python loop over 4,000 steps instead of
# 64,000 samples for a 4-second clip.
CONTROL_SECONDS = 0.001


def static_gain_db(level_db: np.ndarray, threshold_db: float, ratio: float, knee_db: float) -> np.ndarray:
    """The compressor's static curve as gain (output - input level, dB <= 0),
    with a quadratic soft knee: Giannoulis, Massberg & Reiss, "Digital dynamic
    range compressor design - a tutorial and analysis", JAES 60(6), 2012, eq. 4.
    ``ratio`` = inf is a limiter."""
    slope = 1.0 / ratio - 1.0
    over = level_db - threshold_db
    gain = np.where(2 * over > knee_db, slope * over, 0.0)
    if knee_db > 0:
        inside = np.abs(2 * over) <= knee_db
        gain = np.where(inside, slope * (over + knee_db / 2) ** 2 / (2 * knee_db), gain)
    return gain


def smooth_gain_db(target: np.ndarray, step_seconds: float, attack_seconds: float, release_seconds: float) -> np.ndarray:
    """One-pole smoothing of the gain with separate attack (gain falling) and
    release (gain recovering) time constants: the paper's smooth decoupled
    detector on the gain, eq. 17, with alpha = exp(-step / tau)."""
    attack = np.exp(-step_seconds / attack_seconds) if attack_seconds > 0 else 0.0
    release = np.exp(-step_seconds / release_seconds) if release_seconds > 0 else 0.0
    smoothed = np.empty_like(target)
    state = 0.0
    for index, value in enumerate(target.tolist()):
        alpha = attack if value < state else release
        state = alpha * state + (1 - alpha) * value
        smoothed[index] = state
    return smoothed


def dynamics(
    audio: np.ndarray, sample_rate: int, *, target_dbfs: float, threshold_dbfs: float, ratio: float, knee_db: float,
    attack_ms: float, release_ms: float, lookahead_ms: float, ceiling_dbfs: float, makeup: bool,
) -> np.ndarray:
    """Mastering-style loudness processing, offline:

    1. gain the clip to ``target_dbfs`` gated loudness (gated_loudness);
    2. per 1 ms step, the peak level over the step and the next
       ``lookahead_ms`` (a limiter sees a peak coming, so its gain is down
       when it arrives), through the static curve, then smoothed with
       ``attack_ms`` / ``release_ms``; interpolated to the samples and applied
       to the same samples (no delay: the output stays aligned);
    3. with ``makeup``, back to ``target_dbfs`` loudness after compression;
    4. a hard ceiling at ``ceiling_dbfs`` catches what the smoothing let through.
    """
    signal = to_loudness(audio, sample_rate, target_dbfs)
    step = max(1, int(round(CONTROL_SECONDS * sample_rate)))
    steps = -(-len(signal) // step)
    padded = np.zeros(steps * step)
    padded[: len(signal)] = np.abs(signal)
    peaks = padded.reshape(steps, step).max(axis=1)
    ahead = int(round(lookahead_ms / 1000 / CONTROL_SECONDS))
    if ahead:
        extended = np.concatenate([peaks, np.zeros(ahead)])
        peaks = np.lib.stride_tricks.sliding_window_view(extended, ahead + 1).max(axis=1)
    level_db = 20 * np.log10(np.maximum(peaks, 1e-10))
    gain_db = smooth_gain_db(static_gain_db(level_db, threshold_dbfs, ratio, knee_db), step / sample_rate, attack_ms / 1000, release_ms / 1000)
    centres = (np.arange(steps) + 0.5) * step
    signal = signal * 10 ** (np.interp(np.arange(len(signal)), centres, gain_db) / 20)
    if makeup:
        signal = to_loudness(signal, sample_rate, target_dbfs)
    ceiling = 10 ** (ceiling_dbfs / 20)
    return np.clip(signal, -ceiling, ceiling).astype(np.float32)


# Streaming services normalise to about -14 LUFS; a limiter pushes the mix
# there and holds its peaks at -1 dBFS (true-peak headroom for later encoding).
LIMITER = {"target_dbfs": -14.0, "threshold_dbfs": -1.0, "ratio": float("inf"), "knee_db": 0.0, "attack_ms": 1.0,
           "release_ms": 50.0, "lookahead_ms": 2.0, "ceiling_dbfs": -1.0, "makeup": False}
# A broadcast-style compressor: 4:1 above -24 dBFS with a 6 dB soft knee,
# 10 ms attack, 150 ms release, no look-ahead; then make-up gain to -18 dBFS.
COMPRESSOR = {"target_dbfs": -18.0, "threshold_dbfs": -24.0, "ratio": 4.0, "knee_db": 6.0, "attack_ms": 10.0,
              "release_ms": 150.0, "lookahead_ms": 0.0, "ceiling_dbfs": -1.0, "makeup": True}


# ------------------------------------------------------------- the others


def identity(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    return audio


def hard_clip(audio: np.ndarray, sample_rate: int, below_peak_db: float) -> np.ndarray:
    """Clipped at ``below_peak_db`` under the clip's own peak: as if it had
    been driven that much past full scale, level kept."""
    peak = float(np.max(np.abs(audio))) if len(audio) else 0.0
    limit = peak * 10 ** (-below_peak_db / 20)
    return np.clip(audio, -limit, limit).astype(np.float32)


def quantise(audio: np.ndarray, sample_rate: int, bits: int) -> np.ndarray:
    """Rounded to ``bits``-bit linear PCM (no dither), clipped to its range."""
    scale = 2 ** (bits - 1)
    return (np.clip(np.round(np.asarray(audio, dtype=np.float64) * scale), -scale, scale - 1) / scale).astype(np.float32)


def lowpass(audio: np.ndarray, sample_rate: int, cutoff_hz: float, order: int) -> np.ndarray:
    """A Butterworth low-pass run forwards and backwards (zero phase, so no
    lag; twice the order's slope). Clips whose band ends below the cutoff pass unchanged."""
    if cutoff_hz >= sample_rate / 2 or not len(audio):
        return audio
    from scipy.signal import butter, sosfiltfilt  # ~1 s to import: only where the condition runs

    sections = butter(order, cutoff_hz, btype="low", fs=sample_rate, output="sos")
    if len(audio) <= 3 * (2 * len(sections) + 1):  # sosfiltfilt's padding needs more samples
        raise ValueError(f"{len(audio)} samples are too few to filter")
    return sosfiltfilt(sections, audio).astype(np.float32)


def gain(audio: np.ndarray, sample_rate: int, db: float) -> np.ndarray:
    return (np.asarray(audio, dtype=np.float64) * 10 ** (db / 20)).astype(np.float32)


def spec(name: str, func: Any, description: str, parameters: dict[str, Any], reference: bool = False) -> ConditionSpec:
    return ConditionSpec(name=name, transform=functools.partial(func, **parameters), description=description,
                         parameters=parameters, reference=reference)


@hookimpl
def register_conditions(register):
    register(ConditionSpec(name=NONE, transform=identity, description="the input as it is (the default)"))
    register(spec("limiter", dynamics, "mastering limiter: to -14 dBFS gated loudness, peaks held at -1 dBFS "
                  "(2 ms look-ahead, 1 ms attack, 50 ms release)", LIMITER))
    register(spec("compressor", dynamics, "compressor 4:1 above -24 dBFS, 6 dB knee, 10 ms attack, 150 ms release, "
                  "make-up to -18 dBFS", COMPRESSOR))
    register(spec("clip-3db", hard_clip, "hard clipping 3 dB below the clip's peak", {"below_peak_db": 3.0}))
    register(spec("quantise-8bit", quantise, "8-bit linear PCM, no dither", {"bits": 8}))
    register(spec("lowpass-4k", lowpass, "telephone band: Butterworth low-pass at 4 kHz, zero phase; "
                  "also on the reference", {"cutoff_hz": 4000.0, "order": 8}, reference=True))
    register(spec("gain-minus-20db", gain, "a quiet input, 20 dB down (also the reference: does the engine keep a quiet voice?)",
                  {"db": -20.0}, reference=True))
