"""Spectral gating, PyPI ``noisereduce`` (Sainburg et al.), non-stationary mode.

Library defaults throughout, so the numbers compare with anyone else's use of
the package: the noise threshold follows a smoothed running estimate of each
frequency's level (2 s time constant), and the mask is smoothed over 500 Hz and
50 ms. It is non-causal (it sees the whole clip), so its delay is 0.
"""
from __future__ import annotations

import importlib.metadata
from typing import Any, Mapping

import numpy as np

from nsbench import Engine, EngineSpec, hookimpl

SAMPLE_RATE = 16000  # the algorithm runs at any rate; 16 kHz as the demo set


class SpectralGating(Engine):
    def __init__(self) -> None:
        import noisereduce  # imported here: only a run that selects this engine pays for it

        self.reduce_noise = noisereduce.reduce_noise

    def process(self, audio: np.ndarray) -> np.ndarray:
        # float64 in: the library's own dtype; it returns the input's length.
        output = self.reduce_noise(y=np.asarray(audio, dtype=np.float64), sr=SAMPLE_RATE)
        return np.asarray(output, dtype=np.float32)


def build(options: Mapping[str, Any]) -> SpectralGating:
    return SpectralGating()


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="noisereduce",
            factory=build,
            description="spectral gating (noisereduce, non-stationary mode, library defaults); "
            "non-causal: sees the whole clip",
            sample_rate=SAMPLE_RATE,
            delay=0,
            requires=("noisereduce",),
            install="pip install noisereduce==3.0.3",
            version=lambda: importlib.metadata.version("noisereduce"),
        )
    )
