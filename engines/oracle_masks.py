"""Oracle masks: what a perfect time-frequency mask would achieve. They read the
clean reference, so they are upper bounds to read engines against, not engines.

Both masks are computed from the clean speech S and the noise N = noisy - clean
on an STFT (512-point Hann at 16 kHz, 75 % overlap) and applied to the noisy
STFT, then resynthesised by overlap-add:

- ideal ratio mask (Wang et al., "On training targets for supervised speech
  separation", IEEE/ACM TASLP 2014, eq. 4 with beta = 1/2):
  sqrt(|S|^2 / (|S|^2 + |N|^2));
- ideal binary mask: 1 where |S| > |N| (local SNR above 0 dB), else 0.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from nsbench import Engine, EngineSpec, hookimpl

SAMPLE_RATE = 16000
FFT_LENGTH = 512  # 32 ms at 16 kHz
OVERLAP = FFT_LENGTH * 3 // 4  # 75 %: a Hann window sums to a constant, so istft is exact
POWER_FLOOR = 1e-20  # keeps the ratio mask defined where both S and N are silent


def ratio_mask(speech: np.ndarray, noise: np.ndarray) -> np.ndarray:
    speech_power, noise_power = np.abs(speech) ** 2, np.abs(noise) ** 2
    return np.sqrt(speech_power / np.maximum(speech_power + noise_power, POWER_FLOOR))


def binary_mask(speech: np.ndarray, noise: np.ndarray) -> np.ndarray:
    return (np.abs(speech) > np.abs(noise)).astype(np.float64)


class OracleMask(Engine):
    def __init__(self, mask: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
        self.mask = mask

    def process(self, audio: np.ndarray, clean: np.ndarray) -> np.ndarray:
        from scipy.signal import istft, stft

        noisy = np.asarray(audio, dtype=np.float64)
        speech = np.asarray(clean, dtype=np.float64)
        settings = {"fs": SAMPLE_RATE, "window": "hann", "nperseg": FFT_LENGTH, "noverlap": OVERLAP}
        _, _, noisy_spectrum = stft(noisy, **settings)
        _, _, speech_spectrum = stft(speech, **settings)
        noise_spectrum = noisy_spectrum - speech_spectrum  # the STFT is linear: this is STFT(noisy - clean)
        _, output = istft(noisy_spectrum * self.mask(speech_spectrum, noise_spectrum), **settings)
        output = output[: len(noisy)]
        return np.pad(output, (0, len(noisy) - len(output))).astype(np.float32)


def build_irm(options: Mapping[str, Any]) -> OracleMask:
    return OracleMask(ratio_mask)


def build_ibm(options: Mapping[str, Any]) -> OracleMask:
    return OracleMask(binary_mask)


@hookimpl
def register_engines(register):
    common = {"sample_rate": SAMPLE_RATE, "delay": 0, "oracle": True}
    register(EngineSpec(name="oracle-irm", factory=build_irm, **common,
                        description="ORACLE (uses the clean reference): ideal ratio mask sqrt(|S|^2/(|S|^2+|N|^2)) "
                        "on a 512-point STFT, 75 % overlap; an upper bound, not an engine"))
    register(EngineSpec(name="oracle-ibm", factory=build_ibm, **common,
                        description="ORACLE (uses the clean reference): ideal binary mask, 1 where |S| > |N| "
                        "(local SNR > 0 dB), on a 512-point STFT, 75 % overlap; an upper bound, not an engine"))
