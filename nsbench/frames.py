"""Frame-by-frame engines: 16-bit conversion and fixed-size framing, in one place.

Streaming libraries (WebRTC NS, Speex, Koala) take int16 frames of a fixed
length. Every adapter needs the same steps: float to int16 with clipping, zero
padding to whole frames, one call per frame, and the output trimmed back to the
input's length. A mistake here (no clipping, truncation instead of rounding, a
short last frame handed to C code) would differ between engines, so it lives
here once.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from nsbench.blocks import spans
from nsbench.types import ClipError

# Full scale of 16-bit PCM: float 1.0 maps to 32768, clipped to 32767.
INT16_SCALE = 32768.0
BYTES_PER_SAMPLE = 2


def to_int16(audio: np.ndarray) -> np.ndarray:
    """Float audio in [-1, 1) to int16: rounded, and clipped rather than wrapped.
    A block at a time: the float64 temporaries stay bounded on a long file."""
    audio = np.asarray(audio)
    samples = np.empty(audio.shape, dtype=np.int16)
    for span in spans(len(audio)):
        scaled = np.round(np.asarray(audio[span], dtype=np.float64) * INT16_SCALE)
        samples[span] = np.clip(scaled, -INT16_SCALE, INT16_SCALE - 1)
    return samples


def from_int16(samples: np.ndarray | Sequence[int]) -> np.ndarray:
    """int16 samples to float32 in [-1, 1)."""
    return (np.asarray(samples, dtype=np.float32) / np.float32(INT16_SCALE)).astype(np.float32)


def process_in_frames(
    audio: np.ndarray,
    frame_length: int,
    process_frame: Callable[[np.ndarray], np.ndarray | Sequence[int]],
) -> np.ndarray:
    """Run ``process_frame`` on consecutive int16 frames of exactly
    ``frame_length`` samples; returns float32 audio of the input's length.

    The input is zero-padded at the end to whole frames (the engine's state
    carries on across frames, so padding goes only at the end). Each frame's
    output must have ``frame_length`` samples, or the clip fails: a streaming
    library that returns less has dropped audio, and the alignment would be lost.
    """
    samples = to_int16(audio)
    count = -(-len(samples) // frame_length)  # ceil: the last partial frame is padded
    padded = np.zeros(count * frame_length, dtype=np.int16)
    padded[: len(samples)] = samples
    output = np.empty_like(padded)
    for start in range(0, len(padded), frame_length):
        result = np.asarray(process_frame(padded[start : start + frame_length]), dtype=np.int16)
        if result.shape != (frame_length,):
            raise ClipError(f"engine returned {result.size} samples for a frame of {frame_length}")
        output[start : start + frame_length] = result
    return from_int16(output[: len(samples)])


def process_bytes_in_frames(
    audio: np.ndarray, frame_length: int, process_frame: Callable[[bytes], bytes]
) -> np.ndarray:
    """``process_in_frames`` for libraries that take and return raw 16-bit PCM
    bytes (native byte order, ``2 * frame_length`` bytes per call)."""

    def on_bytes(frame: np.ndarray) -> np.ndarray:
        return np.frombuffer(process_frame(frame.tobytes()), dtype=np.int16)

    return process_in_frames(audio, frame_length, on_bytes)
