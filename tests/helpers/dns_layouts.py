"""Fixtures in the dns2020 and voicebank sets' exact published layouts, shared
by the adapters' tests and tests/datasets/test_official_aggregates.py.

The DNS fixture uses the 150 real noisy file names of the DNS 2020 synthetic
no_reverb test set (tests/data/dns2020_noisy_names.txt), with short audio.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import soundfile


NAMES_FILE = Path(__file__).resolve().parents[1] / "data" / "dns2020_noisy_names.txt"


NOISY_NAMES = NAMES_FILE.read_text().split()


PICOVOICE_PATTERN = re.compile(r"clnsp\d+_(.+)_snr\d+_tl-\d+_fileid_(\d+)\.wav")


RATE = 16000


VB_RATE = 48000


def speechlike(seed: int, samples: int, rate: int = RATE) -> np.ndarray:
    """A harmonic tone, amplitude-modulated, so frames differ in power."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / rate
    f0 = 100 + 20 * rng.random()
    tone = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6))
    return 0.1 * tone * (0.55 + 0.45 * np.sin(2 * np.pi * 3 * t))


def write_int16(path: Path, audio: np.ndarray, rate: int = RATE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio, rate, subtype="PCM_16")


def file_id(name: str) -> str:
    return re.search(r"fileid_(\d+)\.wav$", name).group(1)


def file_snr(name: str) -> int:
    return int(re.search(r"_snr(\d+)_", name).group(1))


def make_dns(root: Path, names: list[str] = NOISY_NAMES, seconds: float = 0.5) -> Path:
    """clean/clean_fileid_<ID>.wav and noisy/<name>, int16 16 kHz, noise at the
    SNR the name states (over the whole clip)."""
    samples = int(seconds * RATE)
    for name in names:
        ident = int(file_id(name))
        clean = speechlike(ident, samples)
        noise = np.random.default_rng(1000 + ident).standard_normal(samples)
        noise *= np.sqrt(np.sum(clean**2) / np.sum(noise**2) / 10 ** (file_snr(name) / 10))
        write_int16(root / "clean" / f"clean_fileid_{ident}.wav", clean)
        write_int16(root / "noisy" / name, clean + noise)
    return root


VB_LOG = {"p232_001": ("living", "2.5"), "p232_002": ("bus", "7.5"), "p257_001": ("living", "2.5"), "p257_434": ("cafe", "17.5")}


def make_voicebank(root: Path, with_log: bool = True, seconds: float = 0.5) -> Path:
    for index, name in enumerate(VB_LOG):
        clean = speechlike(index, int(seconds * VB_RATE), VB_RATE)
        noise = 0.01 * np.random.default_rng(index).standard_normal(len(clean))
        write_int16(root / "clean_testset_wav" / f"{name}.wav", clean, VB_RATE)
        write_int16(root / "noisy_testset_wav" / f"{name}.wav", clean + noise, VB_RATE)
    if with_log:
        log = "".join(f"{name} {noise} {snr}\n" for name, (noise, snr) in VB_LOG.items())
        (root / "logfiles").mkdir()
        (root / "logfiles" / "log_testset.txt").write_text(log)
    return root
