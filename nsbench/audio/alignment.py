"""Time alignment: how late an output is against a reference, by cross-correlation.

Used to estimate an engine's delay (rnnoise with a user's binary) and to check
that, after compensation, an engine's output is sample-aligned with the clean
speech. A one-frame latency makes a perfect output look broken, so this check
runs wherever a delay is declared or measured.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numpy.fft import irfft, rfft  # not scipy.fft: its import costs 0.2-0.3 s of every run

from nsbench.audio.blocks import BLOCK_SAMPLES, energy, peak

# Search window: ±100 ms covers every engine we know (DFN3: 30 ms) while
# keeping periodic signals from matching a far-away period.
DEFAULT_MAX_LAG_SECONDS = 0.1
# Below this normalised peak the two signals share too little to align.
MIN_CORRELATION = 0.1


def estimate_lag(output: np.ndarray, reference: np.ndarray, max_lag: int) -> int | None:
    """Samples by which ``output`` lags ``reference`` (negative: it leads).

    The peak of |cross-correlation| within ±``max_lag``. Returns None when either
    signal is silent or the normalised peak is under MIN_CORRELATION, so noise
    is never reported as a lag.
    """
    length = min(len(output), len(reference))
    out, ref = output[:length], reference[:length]
    norm = np.sqrt(energy(out) * energy(ref))
    if length == 0 or norm == 0:
        return None
    max_lag = min(max_lag, length - 1)
    window = np.abs(correlation_window(out, ref, max_lag))  # index max_lag is lag 0
    peak = int(np.argmax(window))
    if window[peak] / norm < MIN_CORRELATION:
        return None
    return peak - max_lag


def correlation_window(out: np.ndarray, ref: np.ndarray, max_lag: int) -> np.ndarray:
    """sum(out[n] ref[n - k]) for k in -max_lag..max_lag.

    A circular correlation on a transform of at least length + max_lag points
    equals the linear one for those lags, at half the cost of the full
    correlation. Float32 transforms: the peak's position needs no more, and
    they cost a third (5 ms on a 4-second clip here).

    A clip longer than BLOCK_SAMPLES is correlated a block of ``out`` at a
    time against the stretch of ``ref`` it can reach (the block and max_lag
    on either side), and the blocks' windows are added in float64: the same
    linear correlation, in memory bounded by the block rather than the clip.

    Each signal is correlated scaled by a power of two to a peak near 1, and
    the window scaled back in float64. Exact: a power of two commutes with
    every float32 product and sum, so at ordinary levels the window is the
    same to the bit; and the products neither overflow nor sink into
    subnormals however loud or quiet the audio (an output at 1e37 made NaN of
    the window, and a false lag of that).
    """
    shifts = (peak_exponent(out), peak_exponent(ref))
    if len(out) <= BLOCK_SAMPLES:
        window = whole_window(scaled(out, shifts[0]), scaled(ref, shifts[1]), max_lag)
    else:
        window = blockwise_window(out, ref, max_lag, shifts)
    return np.ldexp(np.asarray(window, dtype=np.float64), sum(shifts))


def peak_exponent(audio: np.ndarray) -> int:
    """e with the peak in [2^(e-1), 2^e); 0 for silence."""
    return math.frexp(peak(audio))[1]


def scaled(audio: np.ndarray, shift: int) -> np.ndarray:
    """``audio`` / 2^shift as float32 (scaled first: a float64 clip beyond float32's range fits after)."""
    return np.ldexp(np.asarray(audio), -shift).astype(np.float32, copy=False)


def whole_window(out: np.ndarray, ref: np.ndarray, max_lag: int) -> np.ndarray:
    size = next_fast_len(len(out) + max_lag)
    spectrum = rfft(out, size) * np.conj(rfft(ref, size))
    circular = irfft(spectrum, size)
    return np.concatenate([circular[size - max_lag :] if max_lag else circular[:0], circular[: max_lag + 1]])


def blockwise_window(out: np.ndarray, ref: np.ndarray, max_lag: int, shifts: tuple[int, int], block: int = 1 << 16) -> np.ndarray:
    """correlation_window summed over blocks of ``block`` samples of ``out``,
    each signal scaled by 2^-shift."""
    length = len(out)
    size = next_fast_len(block + 2 * max_lag)
    stretch = np.zeros(block + 2 * max_lag, dtype=np.float32)
    total = np.zeros(2 * max_lag + 1)
    for start in range(0, length, block):
        part = scaled(out[start : start + block], shifts[0])
        # stretch[m] = ref[start - max_lag + m], zero outside the clip.
        first, last = max(0, start - max_lag), min(length, start + len(part) + max_lag)
        stretch[:] = 0.0
        stretch[first - (start - max_lag) : last - (start - max_lag)] = scaled(ref[first:last], shifts[1])
        # c[j] = sum_n part[n] stretch[n + j]: the lag k = max_lag - j, no wrap-around
        # since n + j < block + 2 max_lag <= size.
        c = irfft(np.conj(rfft(part, size)) * rfft(stretch, size), size)[: 2 * max_lag + 1]
        total += c[::-1]
    return total


@functools.lru_cache(maxsize=256)
def next_fast_len(target: int) -> int:
    """The smallest 5-smooth number (2^a 3^b 5^c) of at least ``target``: a
    size pocketfft transforms fast, as scipy.fft.next_fast_len(real=True) gives."""
    best = 1 << max(0, (target - 1).bit_length())  # a power of two always qualifies
    power5 = 1
    while power5 < best:
        power35 = power5
        while power35 < best:
            size = power35 << max(0, (-(-target // power35) - 1).bit_length())  # times the least power of two reaching target
            best = min(best, size)
            power35 *= 3
        power5 *= 5
    return best
