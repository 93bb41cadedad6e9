"""Writes tests/data/silero_vad_expected.json: Silero VAD's speech probabilities
made by the silero-vad package's own wrapper, for tests/metrics/test_noref_panel.py.

nsbench runs the model without torch; this script runs the package's own
Python code (``load_silero_vad(onnx=True)``, ``OnnxWrapper.audio_forward``,
``get_speech_timestamps``), which needs torch, so it runs in a virtualenv of
its own that has torch (not nsbench's):

    python -m venv /tmp/silero-torch
    /tmp/silero-torch/bin/pip install torch==2.13.0+cpu numpy==2.4.6 onnxruntime==1.32.0 soundfile==0.14.0 packaging
    /tmp/silero-torch/bin/pip install --no-deps silero-vad==6.2.3
    /tmp/silero-torch/bin/python tests/programs/make_silero_expected.py ../shared/audio

Each case is a real recording of ../shared/audio/speech (16 kHz), as read by
soundfile, alone or with white noise at 0 dB SNR from numpy's default_rng(seed)
(the test remakes the same mix; numpy's generator is stable across machines).
"""
from __future__ import annotations

import hashlib
import json
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import soundfile
import torch
from silero_vad import get_speech_timestamps, load_silero_vad

CASES = (
    ("speech/cmu_arctic_aew_a0001_M.wav", None),
    ("speech/cmu_arctic_axb_a0004_F.wav", None),
    ("speech/libri3_heather_barnett_F.wav", None),
    ("speech/cmu_arctic_aew_a0001_M.wav", 0),
    ("speech/libri3_heather_barnett_F.wav", 1),
)
OUTPUT = Path(__file__).resolve().parents[1] / "data" / "silero_vad_expected.json"


def white_at_0_db(speech: np.ndarray, seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).standard_normal(speech.size).astype(np.float32)
    noise *= np.float32(np.sqrt(np.mean(np.square(speech, dtype=np.float64)) / np.mean(np.square(noise, dtype=np.float64))))
    return speech + noise


def main(shared_audio: Path) -> None:
    model = load_silero_vad(onnx=True)
    cases = []
    for name, seed in CASES:
        path = shared_audio / name
        audio, rate = soundfile.read(path, dtype="float32")
        assert rate == 16000, (name, rate)
        if seed is not None:
            audio = white_at_0_db(audio, seed)
        tensor = torch.from_numpy(audio)
        probabilities = model.audio_forward(tensor, 16000)[0].numpy()
        stamps = get_speech_timestamps(tensor, model, sampling_rate=16000)
        cases.append({
            "file": name,
            "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "white_noise_0db_seed": seed,
            "probabilities": [float(p) for p in probabilities],
            "speech_timestamps": [[int(s["start"]), int(s["end"])] for s in stamps],
        })
    OUTPUT.write_text(json.dumps({
        "made_by": "tests/programs/make_silero_expected.py: silero-vad's own OnnxWrapper.audio_forward and "
                   "get_speech_timestamps, run with torch in a separate virtualenv",
        "versions": {name: metadata.version(name) for name in ("silero-vad", "torch", "onnxruntime", "numpy")},
        "cases": cases,
    }, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
