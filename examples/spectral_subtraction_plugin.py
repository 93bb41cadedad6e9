"""An nsbench engine plugin in about twenty lines: spectral subtraction.

Run it:  python benchmark.py --plugin examples/spectral_subtraction_plugin.py --engine spectral-subtraction
"""
import numpy as np
from scipy.signal import istft, stft

import nsbench


class SpectralSubtraction(nsbench.Engine):
    def process(self, audio: np.ndarray) -> np.ndarray:
        _, _, spectrum = stft(audio, nperseg=512)
        power = np.abs(spectrum) ** 2
        # The noise floor: per frequency, the 10th percentile of power over time.
        noise = np.percentile(power, 10, axis=1, keepdims=True)
        gain = np.sqrt(np.clip(1 - noise / np.maximum(power, 1e-12), 0.05, 1))
        _, out = istft(spectrum * gain, nperseg=512)
        return out[: len(audio)].astype(np.float32)  # same length as the input


@nsbench.hookimpl
def register_engines(register):
    # The rate the harness resamples into and out of, and the samples the output
    # lags its input (the harness removes them): declared here, once.
    register(nsbench.EngineSpec(name="spectral-subtraction", factory=lambda options: SpectralSubtraction(),
                                description="example plugin: spectral subtraction", sample_rate=16000, delay=0))
