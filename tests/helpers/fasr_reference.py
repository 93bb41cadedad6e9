"""The clips tests/programs/make_dtln_expected.py and make_hush_expected.py run
through the fasr wheels' own Python wrappers, and what of each output they
store: one definition for those scripts (run in a throwaway virtualenv that
has fasr, not nsbench's) and for the tests that check the adapters reproduce
the wrappers. So it imports numpy, soundfile and the standard library only.

Each case is the first 3 s of a voice from the repository's demo recordings
(datasets/demo_audio, as soundfile reads the FLAC) plus the first 3 s of a
noise recording scaled to an SNR over those 3 s, in float32.
"""
from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import soundfile

DEMO_AUDIO = Path(__file__).resolve().parents[2] / "datasets" / "demo_audio"
RATE = 16000
LENGTH = 3 * RATE
CASES = (  # (voice, noise, SNR in dB)
    ("speech/ls196_M_122150-0000.flac", "noise/engine_boat_hum.flac", 0),
    ("speech/ls4680_F_16026-0000.flac", "noise/cafe_restaurant_ambience.flac", 5),
    ("speech/ls2136_M_5140-0000.flac", "babble/ls4340_F_15220-0000.flac", 5),  # a talker behind the voice
)
SAMPLE_COUNT = 32  # output samples stored, evenly spaced after the first half second
RMS_BLOCK = RATE // 10  # the output's RMS is stored per 100 ms: the whole clip, coarsely


def recording(name: str) -> np.ndarray:
    audio, rate = soundfile.read(DEMO_AUDIO / name, dtype="float32")
    assert rate == RATE and audio.ndim == 1 and audio.size >= LENGTH, (name, rate, audio.shape)
    return audio[:LENGTH]


def mixture(voice: str, noise: str, snr_db: float) -> np.ndarray:
    """The voice plus the noise scaled (in float64, applied in float32) to ``snr_db`` over the clip."""
    speech, background = recording(voice), recording(noise)
    power = np.mean(np.square(speech, dtype=np.float64)) / np.mean(np.square(background, dtype=np.float64))
    gain = np.float32(np.sqrt(power / 10 ** (snr_db / 10)))
    return speech + gain * background


def sha256(audio: np.ndarray) -> str:
    """The digest of float32 little-endian samples."""
    return hashlib.sha256(np.ascontiguousarray(audio, dtype="<f4").tobytes()).hexdigest()


def sample_indices(length: int) -> list[int]:
    return [int(i) for i in np.linspace(RATE // 2, length - 1, SAMPLE_COUNT)]


def block_rms(audio: np.ndarray) -> list[float]:
    blocks = np.asarray(audio, dtype=np.float64)[: len(audio) // RMS_BLOCK * RMS_BLOCK].reshape(-1, RMS_BLOCK)
    return [float(value) for value in np.sqrt(np.mean(np.square(blocks), axis=1))]


def file_sha256(name: str) -> str:
    return hashlib.sha256((DEMO_AUDIO / name).read_bytes()).hexdigest()


def case_record(voice: str, noise: str, snr_db: float, output: np.ndarray) -> dict[str, Any]:
    """What the expectations file holds of one case: its inputs, by name and digest, and the output."""
    output = np.asarray(output, dtype=np.float32)
    return {
        "voice": voice, "voice_sha256": file_sha256(voice),
        "noise": noise, "noise_sha256": file_sha256(noise), "snr_db": snr_db,
        "input_sha256": sha256(mixture(voice, noise, snr_db)),
        "output_length": int(output.size), "output_sha256": sha256(output),
        "samples": {str(i): float(output[i]) for i in sample_indices(output.size)},
        "block_rms": block_rms(output),
    }


def write_expectations(path: Path, made_by: str, packages: Sequence[str], enhance: Callable[[np.ndarray], np.ndarray]) -> None:
    """Runs ``enhance`` (a wrapper's: float32 audio at RATE in, out) on every case and writes
    what the tests check: how it was made, with which package versions, and the cases."""
    cases = [case_record(voice, noise, snr_db, enhance(mixture(voice, noise, snr_db))) for voice, noise, snr_db in CASES]
    versions = {name: metadata.version(name) for name in packages}
    path.write_text(json.dumps({"made_by": made_by, "versions": versions, "rate": RATE, "cases": cases}, indent=1) + "\n")
    print(f"wrote {path}")


def remade_input(case: dict[str, Any]) -> np.ndarray:
    """A stored case's input, remade here; the same recordings and the same float32 samples, or the check would mean nothing."""
    assert file_sha256(case["voice"]) == case["voice_sha256"] and file_sha256(case["noise"]) == case["noise_sha256"], case["voice"]
    audio = mixture(case["voice"], case["noise"], case["snr_db"])
    assert sha256(audio) == case["input_sha256"], f"{case['voice']}: the remade input differs from the one the wrapper had"
    return audio


def assert_close_to_stored(output: np.ndarray, case: dict[str, Any], atol: float) -> None:
    """The stored samples within ``atol``, the per-100-ms RMS within ``atol`` too, the same length."""
    assert output.dtype == np.float32 and output.size == case["output_length"], (output.dtype, output.size)
    indices = [int(i) for i in case["samples"]]
    np.testing.assert_allclose(output[indices], list(case["samples"].values()), rtol=0, atol=atol)
    np.testing.assert_allclose(block_rms(output), case["block_rms"], rtol=0, atol=atol)
