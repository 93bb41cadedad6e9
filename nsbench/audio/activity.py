"""Where the clean voice is active: its 20 ms segments within 40 dB of its
loudest (the nomus write-up's gate). The voice level and music attenuation
metrics (``metrics/levels.py``) and the output checks' ``voice_deleted``
(``nsbench.audio.checks``) share it, so it lives in the core: a check never
imports a plugin module.
"""
from __future__ import annotations

import numpy as np

from nsbench.audio.blocks import BLOCK_SAMPLES, spans

SEGMENT_SECONDS = 0.020
# "More than 40 dB below the loudest segment" is voice-silent; exactly 40 dB is active.
SILENCE_BELOW_DB = 40.0


def segment_length(sample_rate: int) -> int:
    """Samples in one 20 ms segment (320 at 16 kHz, 960 at 48 kHz, 882 at 44.1 kHz)."""
    return max(1, int(round(SEGMENT_SECONDS * sample_rate)))


def segment_sums(x: np.ndarray, seg: int, y: np.ndarray | None = None) -> np.ndarray:
    """Sum of x*y (of x squared without ``y``) per segment, float64; the
    trailing partial segment is the last entry.

    Multiplied in float64 a block of whole segments at a time (about a million
    samples), so an hour needs a few MB; each segment's sum is the same
    reduction as over the whole clip at once, so the values are unchanged.
    """
    samples = np.asarray(x).ravel()
    other = samples if y is None else np.asarray(y).ravel()
    block = max(1, BLOCK_SAMPLES // seg) * seg
    sums = [np.add.reduceat(products(samples[span], other[span], y is None), np.arange(0, span.stop - span.start, seg))
            for span in spans(samples.size, block)]
    return np.concatenate(sums) if sums else np.zeros(0)


def products(x: np.ndarray, y: np.ndarray, square: bool) -> np.ndarray:
    if square:
        return np.square(np.asarray(x, dtype=np.float64))
    return np.asarray(x, dtype=np.float64) * np.asarray(y, dtype=np.float64)


def voice_active_segments(clean: np.ndarray, sample_rate: int) -> np.ndarray:
    """One bool per 20 ms segment of ``clean``: True where voice-active.

    A segment is voice-silent when its mean power is more than 40 dB below the
    loudest full 20 ms segment's mean power (nomus write-up). The trailing
    partial segment (when the length is not a multiple of 20 ms) is kept as a
    segment of its own, classified by its mean power so its shortness does not
    make it look quiet; it is not a candidate for the loudest segment unless the
    clip is shorter than 20 ms. An all-zero clean voice has no active segment.
    """
    seg = segment_length(sample_rate)
    sums = segment_sums(clean, seg)
    n = np.asarray(clean).size
    lengths = np.full(sums.size, seg, dtype=np.float64)
    if sums.size and n % seg:
        lengths[-1] = n % seg
    powers = sums / lengths
    full = n // seg
    loudest = float(powers[:full].max()) if full else float(powers.max(initial=0.0))
    if loudest == 0.0:
        return np.zeros(sums.size, dtype=bool)
    # In the linear domain, so "exactly 40 dB below" compares without log rounding.
    return powers * 10.0 ** (SILENCE_BELOW_DB / 10.0) >= loudest
