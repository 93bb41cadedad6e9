"""The stimuli of one trial, made offline: the same excerpt of every
condition, loudness-equalised to ITU-R BS.1770-4 integrated loudness
(pyloudnorm's meter: K-weighting, 400 ms blocks, absolute and relative gates)
at ``TARGET_LUFS``; the whole trial is lowered together if one stimulus would
then peak above ``PEAK_DBFS``, so the conditions stay equally loud.

Equalising loudness hides a voice-level drop: an engine that makes speech
quieter is heard at the same level as the others (nsbench's voice_level_db
metric still reports it).
"""
from __future__ import annotations

import secrets

from dataclasses import dataclass
from pathlib import Path
from typing import Hashable, Mapping, TypeVar

import numpy as np
from scipy import signal

from nsbench.plugins.errors import UserError
from nsbench.store import atomic

TARGET_LUFS = -26.0  # P.808's and BS.1534's common listening level for speech
PEAK_DBFS = -1.0
ANCHOR_HZ = 3500.0  # BS.1534-3's mandatory low anchor; its 7 kHz mid anchor is near the 8 kHz Nyquist of 16 kHz sets
ANCHOR_ORDER = 8  # Butterworth, run forward and back (zero phase: the anchor stays aligned with the reference)
FADE_SECONDS = 0.01  # raised-cosine edges, so an excerpt cut mid-word does not click
MIN_SECONDS = 0.4  # one BS.1770 gating block
LSB = 1 / 32768  # of the 16-bit PCM files written
Name = TypeVar("Name", bound=Hashable)


@dataclass(frozen=True)
class Levelled:
    audio: np.ndarray
    loudness: float  # LUFS before the gain; -inf for silence
    gain_db: float


def low_pass(audio: np.ndarray, rate: int, cutoff: float = ANCHOR_HZ) -> np.ndarray:
    """BS.1534-3's anchor: the reference low-passed at ``cutoff``."""
    if cutoff >= rate / 2:
        return np.asarray(audio, dtype=np.float32).copy()
    sos = signal.butter(ANCHOR_ORDER, cutoff, btype="low", fs=rate, output="sos")
    return signal.sosfiltfilt(sos, audio).astype(np.float32)


def cut(audio: np.ndarray, rate: int, seconds: float) -> np.ndarray:
    """The first ``seconds`` (mono: a multichannel output's first channel), with faded edges."""
    mono = np.asarray(audio, dtype=np.float64)
    mono = mono[0] if mono.ndim > 1 else mono
    part = mono[: int(round(seconds * rate))].copy()
    edge = min(int(FADE_SECONDS * rate), len(part) // 2)
    if edge:
        ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(edge) / edge)
        part[:edge] *= ramp
        part[len(part) - edge :] *= ramp[::-1]
    return part


def integrated_loudness(audio: np.ndarray, rate: int) -> float:
    """BS.1770-4 integrated loudness in LUFS (mono); -inf for silence."""
    try:
        import pyloudnorm  # only where a test is built; in the [listen] extra, not the core
    except ImportError as error:
        raise UserError("nsbench listen needs pyloudnorm (BS.1770 loudness): pip install 'nsbench[listen]'") from error

    if len(audio) < MIN_SECONDS * rate:
        raise ValueError(f"{len(audio) / rate:.2f} s is shorter than one {MIN_SECONDS} s loudness block")
    with np.errstate(divide="ignore"):
        return float(pyloudnorm.Meter(rate).integrated_loudness(np.asarray(audio, dtype=np.float64)))


def equalise(stimuli: Mapping[Name, np.ndarray], rate: int, target: float = TARGET_LUFS,
             peak_dbfs: float = PEAK_DBFS) -> dict[Name, Levelled]:
    """Each stimulus at ``target`` LUFS, then all lowered by one gain if any would peak above ``peak_dbfs``.
    A silent stimulus (no block above the gate) keeps its level: no gain can make it loud."""
    loudness = {name: integrated_loudness(audio, rate) for name, audio in stimuli.items()}
    gains = {name: (target - value if np.isfinite(value) else 0.0) for name, value in loudness.items()}
    peaks = [20 * np.log10(np.max(np.abs(audio))) + gains[name]
             for name, audio in stimuli.items() if np.max(np.abs(audio), initial=0.0) > 0]
    lower = max(0.0, max(peaks, default=peak_dbfs) - peak_dbfs)
    return {name: Levelled((audio * 10 ** ((gains[name] - lower) / 20)).astype(np.float32), loudness[name],
                           gains[name] - lower)
            for name, audio in stimuli.items()}


def write(path: Path, audio: np.ndarray, rate: int) -> None:
    """16-bit PCM WAV with no metadata chunk (nothing in it names the condition),
    quantised with TPDF dither of one LSB (about -98 dBFS RMS): inaudible, and no
    two files alike byte for byte, not even the reference and its hidden copy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    noise = np.random.default_rng()  # fresh entropy: a seed would make two copies alike again
    dither = (noise.random(len(audio)) - noise.random(len(audio))) * LSB
    atomic.write_audio(path, np.clip(audio + dither, -1.0, 1.0), rate, subtype="PCM_16", format="WAV")


def token() -> str:
    """A random name for a file or a trial: nothing in it tells a listener which engine it is."""
    return secrets.token_hex(6)
