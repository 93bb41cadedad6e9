"""An engine shipped as a package. After `pip install examples/plugin_package`,
`nsbench --engine gentle-gate` finds it through the `nsbench` entry point."""
import numpy as np

import nsbench

__version__ = "0.1.0"
SAMPLE_RATE = 16000


class GentleGate(nsbench.Engine):
    """Halves 10 ms blocks whose level is under a fixed threshold."""

    threshold = 10 ** (-50 / 20)

    def process(self, audio: np.ndarray) -> np.ndarray:
        out = audio.copy()
        block = SAMPLE_RATE // 100
        for start in range(0, len(audio), block):
            piece = out[start : start + block]
            if np.sqrt(np.mean(piece**2)) < self.threshold:
                piece *= 0.5
        return out


@nsbench.hookimpl
def register_engines(register):
    register(nsbench.EngineSpec(name="gentle-gate", factory=lambda options: GentleGate(),
                                description="example package plugin: a gentle noise gate", sample_rate=SAMPLE_RATE, delay=0,
                                version=__version__))
