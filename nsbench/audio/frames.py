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

from nsbench.audio.blocks import spans
from nsbench.plugins.errors import ClipError

# Full scale of 16-bit PCM: float 1.0 maps to 32768, clipped to 32767.
INT16_SCALE = 32768.0
BYTES_PER_SAMPLE = 2


def to_int16(audio: np.ndarray) -> np.ndarray:
    """Float audio in [-1, 1) to int16: rounded, and clipped rather than wrapped.
    A block at a time: the float64 temporaries stay bounded on a long file."""
    audio = np.asarray(audio)
    samples = np.empty(audio.shape, dtype=np.int16)
    for span in spans(len(audio)):
        scaled = np.multiply(audio[span], INT16_SCALE, dtype=np.float64)
        np.round(scaled, out=scaled)  # in place: a third of the time of fresh arrays
        np.clip(scaled, -INT16_SCALE, INT16_SCALE - 1, out=scaled)
        samples[span] = scaled
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

    return process_in_frames(audio, frame_length, bytes_frames(process_frame))


class FrameStream:
    """``process_in_frames`` a block at a time: the stream an engine with a
    stateful frame API offers (nsbench.run.streaming). Blocks of any size go in;
    each call returns the output of every whole frame completed so far. ``flush``
    zero-pads the last partial frame, exactly as ``process_in_frames`` pads the
    clip's end, and returns the output of the samples still pending: fed in
    order, the blocks give the same samples as the whole clip, to the bit.

    ``pcm16``: the library takes int16 frames (converted here, sample by
    sample, so a block boundary changes nothing); otherwise float32 frames.
    ``on_close``: releases the library's state (called once, by ``close``).
    """

    def __init__(self, frame_length: int, process_frame: Callable[[np.ndarray], np.ndarray | Sequence[int]],
                 pcm16: bool = True, on_close: Callable[[], None] | None = None):
        self.frame_length = frame_length
        self.process_frame = process_frame
        self.dtype = np.int16 if pcm16 else np.float32
        self.pending = np.zeros(0, dtype=self.dtype)
        self.on_close = on_close

    def process(self, block: np.ndarray) -> np.ndarray:
        samples = to_int16(block) if self.dtype is np.int16 else np.asarray(block, dtype=np.float32)
        self.pending = np.concatenate([self.pending, samples])
        whole = len(self.pending) - len(self.pending) % self.frame_length
        frames, self.pending = self.pending[:whole], self.pending[whole:]
        return self._run(frames)

    def flush(self) -> np.ndarray:
        length = len(self.pending)
        if length == 0:
            return np.zeros(0, dtype=np.float32)
        frame = np.zeros(self.frame_length, dtype=self.dtype)
        frame[:length] = self.pending
        self.pending = self.pending[:0]
        return self._run(frame)[:length]

    def close(self) -> None:
        on_close, self.on_close = self.on_close, None
        if on_close is not None:
            on_close()

    def _run(self, frames: np.ndarray) -> np.ndarray:
        output = np.empty_like(frames)
        for start in range(0, len(frames), self.frame_length):
            result = np.asarray(self.process_frame(frames[start : start + self.frame_length]), dtype=self.dtype)
            if result.shape != (self.frame_length,):
                raise ClipError(f"engine returned {result.size} samples for a frame of {self.frame_length}")
            output[start : start + self.frame_length] = result
        return from_int16(output) if self.dtype is np.int16 else output


def bytes_frames(process_frame: Callable[[bytes], bytes]) -> Callable[[np.ndarray], np.ndarray]:
    """A raw-PCM-bytes frame function (native byte order) as one on int16 arrays."""
    return lambda frame: np.frombuffer(process_frame(frame.tobytes()), dtype=np.int16)
