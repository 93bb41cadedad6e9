"""Audio the tests make: WAV files, the folder dataset's layout, and a
speech-like tone in white noise."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import soundfile


def write_wav(path: Path, audio: np.ndarray, rate: int, subtype: str = "FLOAT") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio, rate, subtype=subtype)
    return path


def make_folder_dataset(
    root: Path, count: int = 3, seconds: float | Callable[[int], float] = 2.0, name: str = "utt{index}"
) -> Path:
    """The ``folder`` dataset's layout (root/clean, root/noisy) with ``count``
    pairs from tone_and_noise; ``seconds`` may vary with the clip's index."""
    for index in range(count):
        length = seconds(index) if callable(seconds) else seconds
        clean, noise = tone_and_noise(index, seconds=length)
        write_wav(root / "clean" / f"{name.format(index=index)}.wav", clean, 16000)
        write_wav(root / "noisy" / f"{name.format(index=index)}.wav", clean + noise, 16000)
    return root


def tone_and_noise(seed: int, seconds: float = 2.0, rate: int = 16000) -> tuple[np.ndarray, np.ndarray]:
    """A speech-like test pair: an amplitude-modulated harmonic tone and white noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    clean = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 8)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    clean = (0.1 * clean).astype(np.float32)
    noise = (0.03 * rng.standard_normal(len(t))).astype(np.float32)
    return clean, noise
