"""Whole-clip sums in bounded memory: float64 blocks of float32 clips.

Metrics and checks that reduce a clip to a few sums (energies, dot products,
counts) used to widen whole clips to float64, several at a time: eight times
the clip's float32 size for SI-SDR, so gigabytes on an hour of audio. They now
walk the clip in blocks of ``BLOCK_SAMPLES`` and add the blocks' sums.

A clip of at most ``BLOCK_SAMPLES`` samples (65 s at 16 kHz, 21 s at 48 kHz)
is one block, computed exactly as before, so every score of such a clip is
unchanged to the bit. On a longer clip the sums are added in another order:
relative differences of order 1e-16 in each sum (1e-12 dB on an SI-SDR).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

BLOCK_SAMPLES = 1 << 20  # 8 MB per float64 copy of a block


def spans(length: int, size: int = BLOCK_SAMPLES) -> Iterator[slice]:
    """Consecutive slices covering ``range(length)``; none for an empty clip."""
    for start in range(0, length, size):
        yield slice(start, min(start + size, length))


def float64_blocks(*arrays: np.ndarray, size: int = BLOCK_SAMPLES) -> Iterator[tuple[np.ndarray, ...]]:
    """The same span of each (equally long, 1-D) array, as float64."""
    for span in spans(len(arrays[0]), size):
        yield tuple(np.asarray(array[span], dtype=np.float64) for array in arrays)


def energy(audio: np.ndarray) -> float:
    """sum(x^2) in float64."""
    samples = np.asarray(audio).ravel()
    return sum((float(np.dot(block, block)) for (block,) in float64_blocks(samples)), 0.0)


def arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """``np.array_equal`` without a clip-long boolean array."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    a, b = a.ravel(), b.ravel()
    return all(np.array_equal(a[span], b[span]) for span in spans(a.size))


def peak(audio: np.ndarray) -> float:
    """max |x| (0 for no samples), a block at a time."""
    samples = np.asarray(audio).ravel()
    return max((float(np.max(np.abs(samples[span]))) for span in spans(samples.size)), default=0.0)


def count_where(audio: np.ndarray, predicate) -> int:
    """``np.count_nonzero(predicate(audio))`` a block at a time."""
    samples = np.asarray(audio).ravel()
    return sum(int(np.count_nonzero(predicate(samples[span]))) for span in spans(samples.size))
