"""Speex preprocessor noise suppression, PyPI ``pyspeex-noise`` (16 kHz, 10 ms
int16 frames).

Suppression at -30 dB (the library's usual setting), automatic gain off: in
pyspeex-noise 2.0.1 any auto gain above 0 mutes the output. Output lags input
by exactly 160 samples (one frame) at 16 kHz.
"""
from __future__ import annotations

import importlib.metadata
from typing import Any, Callable, Mapping

import numpy as np

from nsbench.adapters import BYTES_PER_SAMPLE, FrameStream, bytes_frames, process_bytes_in_frames
from nsbench import Engine, EngineSpec, hookimpl

SAMPLE_RATE = 16000
FRAME_LENGTH = 160
FRAME_BYTES = FRAME_LENGTH * BYTES_PER_SAMPLE
DELAY = 160
NOISE_SUPPRESSION_DB = -30
AUTO_GAIN_OFF = 0  # anything above 0 mutes the output in 2.0.1


def guarded(process_10ms: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    """The C code reads 320 bytes whatever it is given (a shorter buffer is read
    past its end), so the length is checked before every call."""

    def call(frame: bytes) -> bytes:
        if len(frame) != FRAME_BYTES:
            raise ValueError(f"speex needs frames of exactly {FRAME_BYTES} bytes, got {len(frame)}")
        return process_10ms(frame)

    return call


class SpeexNoiseSuppression(Engine):
    def __init__(self) -> None:
        from pyspeex_noise import AudioProcessor

        self.make_processor = AudioProcessor

    def frame_processor(self) -> Callable[[bytes], bytes]:
        """A fresh, length-checked processor: one per clip, so no state carries over."""
        return guarded(self.make_processor(AUTO_GAIN_OFF, NOISE_SUPPRESSION_DB).process_10ms)

    def process(self, audio: np.ndarray) -> np.ndarray:
        return process_bytes_in_frames(audio, FRAME_LENGTH, self.frame_processor())

    def stream(self) -> FrameStream:
        return FrameStream(FRAME_LENGTH, bytes_frames(self.frame_processor()))


def build(options: Mapping[str, Any]) -> SpeexNoiseSuppression:
    return SpeexNoiseSuppression()


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="speex",
            factory=build,
            description="Speex preprocessor noise suppression (pyspeex-noise), -30 dB, AGC off",
            sample_rate=SAMPLE_RATE,
            delay=DELAY,
            requires=("pyspeex_noise",),
            install="pip install pyspeex-noise==2.0.1",
            version=lambda: importlib.metadata.version("pyspeex-noise"),
        )
    )
