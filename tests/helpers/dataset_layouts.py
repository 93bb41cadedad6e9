"""Fixtures in the datasets' published layouts, shared by the adapters' tests
and tests/datasets/test_official_aggregates.py.

MUSDB18-HQ ``{train,test}/<Artist - Title>/{mixture,drums,bass,other,vocals}.wav``
(44.1 kHz stereo 16-bit); Biodenoising ``biodenoising_validation/{16000,48000}/{clean,noisy,noise}/``
with ``{clean,noisy,noise}.json`` (``[[path, samples], ...]``, the authors' absolute
paths) and ``{rate}_snr_experiments/{-5,0,5,10}/``; FUSS ``ssdata_reverb/<split>_example_list.txt``
(tab-separated, mixture first) with ``<split>/exampleNNNN.wav`` and
``exampleNNNN_sources/{background0,foreground0..2}_sound.wav``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile

from nsbench.builtin.datasets import biodenoising


MUSDB_RATE = 44100


TRACKS = ("Al James - Schoolboy Facination", "The Easton Ellises (Baumi) - SDRNR")


FUSS_RATE = 16000


def tone(freq: float, seconds: float, rate: int, amplitude: float = 1.0) -> np.ndarray:
    t = np.arange(int(round(seconds * rate))) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


def write(path: Path, audio: np.ndarray, rate: int, subtype: str = "PCM_16") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio, rate, subtype=subtype)
    return path


def results(folder: Path, engine: str) -> tuple[dict, list[dict]]:
    summary = json.loads((folder / f"{engine}.json").read_text())
    rows = [json.loads(line) for line in (folder / f"{engine}.clips.jsonl").read_text().splitlines()]
    return summary, rows


def cell(summary: dict, **labels: str) -> dict:
    return next(c for c in summary["cells"] if c["cell"] == labels)


def stereo(mono: np.ndarray) -> np.ndarray:
    """Left and right differ, so the downmix (their mean) is checked."""
    return np.stack([mono, 0.6 * mono], axis=1)


def make_musdb(root: Path, split: str = "test", seconds: float = 2.5) -> Path:
    """Two tracks. In the first the singer stops after 1 s, leaving bleed 45 dB
    below the voice (above -60 dBFS, so only the relative rule makes it silent)."""
    rate, n = MUSDB_RATE, int(seconds * MUSDB_RATE)
    rng = np.random.default_rng(7)
    for index, name in enumerate(TRACKS):
        folder = root / split / name
        voice = tone(220 + 30 * index, seconds, rate, 0.4) * (0.6 + 0.4 * tone(3, seconds, rate))
        if index == 0:
            voice[rate:] *= 10 ** (-45 / 20)
        stems = {
            "drums": 0.05 * rng.standard_normal(n) * (tone(2, seconds, rate) > 0.9),
            "bass": tone(55, seconds, rate, 0.1),
            "other": tone(660, seconds, rate, 0.05),
            "vocals": voice,
        }
        for stem, audio in stems.items():
            write(folder / f"{stem}.wav", stereo(audio), rate)
        write(folder / "mixture.wav", stereo(sum(stems.values())), rate)
    return root


def musdb_options(root: Path, **extra) -> dict:
    return {"data_folder": str(root), "musdb_split": "test", "musdb_excerpt_seconds": 1.0, "musdb_rate": MUSDB_RATE, **extra}


FAKE_AUTHOR_ROOT = "/home/marius/data/biodenoising_validation"


def write_bio_set(folder: Path, items: dict[str, tuple[float, float]], rate: int, seconds: float = 1.0) -> None:
    """name -> (clean amplitude, noise amplitude): a 440 Hz call and a 1 kHz hum,
    whole cycles over the clip so they are exactly orthogonal."""
    for role in biodenoising.ROLES:
        (folder / role).mkdir(parents=True, exist_ok=True)
    lists = {role: [] for role in biodenoising.ROLES}
    for name, (clean_amp, noise_amp) in items.items():
        clean, noise = tone(440, seconds, rate, clean_amp), tone(1000, seconds, rate, noise_amp)
        for role, audio in (("clean", clean), ("noisy", clean + noise), ("noise", noise)):
            write(folder / role / name, audio, rate, subtype="FLOAT")
            # The published lists hold the authors' absolute paths.
            lists[role].append([f"{FAKE_AUTHOR_ROOT}/{folder.name}/{role}/{name}", len(audio)])
    for role, entries in lists.items():
        (folder / f"{role}.json").write_text(json.dumps(entries))


SNR_ITEMS = {  # input SNRs 0, 5 and 20 dB (equal-length tones: power ratio = amplitude ratio squared)
    "robin_0001.wav": (0.1, 0.1),
    "cleaner_warbler_02.wav": (0.1, 0.1 * 10 ** (-5 / 20)),
    "humpback_03.wav": (0.1, 0.1 * 10 ** (-20 / 20)),
}


def bio_options(folder: Path, **extra) -> dict:
    return {"data_folder": str(folder), "biodenoising_rate": 16000, "biodenoising_snr_experiments": False, **extra}


FUSS_EXAMPLES = {  # example -> listed sources (amplitude 0 = an all-zero file)
    "example0000": (0.3,),
    "example0001": (0.3, 0.2),
    "example0002": (0.3, 0.2, 0.1),
    "example0003": (0.3, 0.2, 0.1, 0.05),
    "example0004": (0.3, 0.0, 0.1),  # listed 3, active 2
    "example0005": (0.0,),  # all silent: skipped, as evaluate_lib.py does
}


def source_names(count: int) -> list[str]:
    return ["background0_sound.wav"] + [f"foreground{i}_sound.wav" for i in range(count - 1)]


def make_fuss(root: Path, split: str = "eval", seconds: float = 0.5) -> Path:
    rng = np.random.default_rng(5)
    lines = []
    for example, amplitudes in FUSS_EXAMPLES.items():
        fields = [f"{split}/{example}.wav"]
        total = 0
        for name, amplitude in zip(source_names(len(amplitudes)), amplitudes):
            audio = amplitude * rng.uniform(-1, 1, int(seconds * FUSS_RATE)) * (0.5 + 0.5 * tone(3, seconds, FUSS_RATE))
            write(root / split / f"{example}_sources" / name, audio, FUSS_RATE)
            fields.append(f"{split}/{example}_sources/{name}")
            total = total + audio
        write(root / split / f"{example}.wav", total, FUSS_RATE)
        lines.append("\t".join(fields))
    (root / f"{split}_example_list.txt").write_text("\n".join(lines) + "\n")
    return root


def fuss_options(root: Path, **extra) -> dict:
    return {"data_folder": str(root), "fuss_split": "eval", **extra}
