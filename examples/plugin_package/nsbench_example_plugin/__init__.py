"""An engine shipped as a package. After `pip install examples/plugin_package`,
`python benchmark.py --engine gentle-gate` finds it through the `nsbench` entry point."""
import numpy as np

from nsbench.hookspecs import hookimpl
from nsbench.types import EngineSpec

__version__ = "0.1.0"


class GentleGate:
    """Halves 10 ms blocks whose level is under a fixed threshold."""

    sample_rate = 16000
    delay = 0
    threshold = 10 ** (-50 / 20)

    def process(self, audio: np.ndarray) -> np.ndarray:
        out = audio.copy()
        block = self.sample_rate // 100
        for start in range(0, len(audio), block):
            piece = out[start : start + block]
            if np.sqrt(np.mean(piece**2)) < self.threshold:
                piece *= 0.5
        return out

    def close(self) -> None:
        pass


@hookimpl
def register_engines(register):
    register(EngineSpec(name="gentle-gate", factory=lambda options: GentleGate(),
                        description="example package plugin: a gentle noise gate", sample_rate=16000, delay=0,
                        version=__version__))
