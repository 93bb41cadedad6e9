"""Your own model as Python code, two ways.

    python benchmark.py --engine python:examples.python_model:denoise
    python benchmark.py --engine python:examples.python_model:Denoiser
"""
import numpy as np
from scipy.signal import istft, stft


def denoise(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """A function of a float32 array and its rate, returning the same length."""
    _, _, spectrum = stft(audio, fs=sample_rate, nperseg=512)
    magnitude = np.abs(spectrum)
    floor = np.median(magnitude, axis=1, keepdims=True)  # a crude noise estimate
    mask = magnitude**2 / (magnitude**2 + floor**2)  # Wiener-like gain
    _, out = istft(spectrum * mask, fs=sample_rate, nperseg=512)
    return out[: len(audio)].astype(np.float32)


class Denoiser:
    """A class: built once per run, ``process`` per clip, ``close`` at the end."""

    sample_rate = 16000
    delay = 0

    def process(self, audio: np.ndarray) -> np.ndarray:
        return denoise(audio, self.sample_rate)

    def close(self) -> None:
        pass
