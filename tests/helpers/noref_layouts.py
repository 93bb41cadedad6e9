"""Fixtures in the dns2020-real and dns2020-blind sets' exact published layouts.

The full fixtures use the real file names from ../shared/dns2020_real_names.txt
and ../shared/dns2020_blind_names.txt (skipped without ../shared); a smaller
fixture of names written in each test file, the awkward ones among them, runs
everywhere. Every file holds real 16 kHz audio: a harmonic, amplitude-modulated
tone with noise, written as 16-bit WAV as the set is.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile


SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"


RATE = 16000


def shared_names(name: str) -> list[str]:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"needs ../shared/{name}")
    return path.read_text().split()


def recording(seed: int, seconds: float = 0.25) -> np.ndarray:
    """A voice-like tone in noise, different per file."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    f0 = 100 + 80 * rng.random()
    tone = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6))
    return 0.1 * tone * (0.55 + 0.45 * np.sin(2 * np.pi * 3 * t)) + 0.02 * rng.standard_normal(len(t))


def make_folder(root: Path, names: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for seed, name in enumerate(names):
        soundfile.write(str(root / name), recording(seed), RATE, subtype="PCM_16")
    return root
