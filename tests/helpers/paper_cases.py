"""The audio the paper metrics are checked on against their reference code
(tests/programs/make_paper_metrics_expected.py writes the references' values,
tests/metrics/test_paper_metrics.py compares): the repository's own
recordings (datasets/demo_audio), mixed at VoiceBank-DEMAND's SNRs, and what
real engines make of them.

Each case is (clean, output, noisy) at 16 kHz, float32: the noisy input
itself (the paper tables' first row), Speex's and WebRTC's outputs through
the harness (delay removed), and one mixture whose clean voice starts and
ends in digital silence, as the demo set's clips do (frames without an LPC
model: the references' LLR is NaN there, and their CSIG and COVL read 1).
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np

from nsbench.adapters import mix_at_snr, read_audio
from nsbench.plugins.records import Clip, ClipSource

from tests.helpers.engine_checks import run_builtin
from tests.helpers.paths import REPO_ROOT

BUNDLE = REPO_ROOT / "datasets" / "demo_audio"
RATE = 16000
SECONDS = 3.0
SILENCE_SECONDS = 0.5
# (name, speech recording, noise recording, SNR dB, digital silence around the voice)
MIXTURES = (
    ("f5778_cafe_2.5", "speech/ls5778_F_12761-0000.flac", "noise/cafe_restaurant_ambience.flac", 2.5, False),
    ("m196_traffic_7.5", "speech/ls196_M_122150-0000.flac", "noise/traffic_street_city.flac", 7.5, False),
    ("f4137_boat_12.5", "speech/ls4137_F_11701-0000.flac", "noise/engine_boat_hum.flac", 12.5, False),
    ("m78_singing_17.5", "speech/ls78_M_368-0000.flac", "music/vocadito_10_solo_singing.flac", 17.5, False),
    ("f8238_rain_5_padded", "speech/ls8238_F_274553-0000.flac", "noise/rain.flac", 5.0, True),
)
ENGINES = ("speex", "webrtc")


@dataclass(frozen=True)
class Case:
    name: str
    clean: np.ndarray
    output: np.ndarray
    noisy: np.ndarray

    def digest(self) -> str:
        """The case's samples, so a stored value is compared only with the audio it was made from."""
        hasher = hashlib.sha256()
        for array in (self.clean, self.output, self.noisy):
            hasher.update(np.ascontiguousarray(array, np.float32).tobytes())
        return hasher.hexdigest()


def recording(path: str, samples: int) -> np.ndarray:
    audio, rate, _ = read_audio(BUNDLE / path)
    assert rate == RATE, (path, rate)
    return audio[:samples]


def mixture_clip(name: str) -> Clip:
    _, speech, noise, snr, padded = next(mixture for mixture in MIXTURES if mixture[0] == name)
    samples = int(SECONDS * RATE)
    clean = recording(speech, samples)
    if padded:
        silence = np.zeros(int(SILENCE_SECONDS * RATE), np.float32)
        clean = np.concatenate([silence, clean[: samples - 2 * len(silence)], silence])
    noisy, _ = mix_at_snr(clean, recording(noise, samples), snr)
    return Clip(clip_id=name, noisy=noisy.astype(np.float32), clean=clean, sample_rate=RATE)


@functools.lru_cache(maxsize=1)
def cases() -> tuple[Case, ...]:
    """Every case, in a fixed order: per mixture the noisy input, then each engine's output."""
    sources = [ClipSource(name, functools.partial(mixture_clip, name)) for name, *_ in MIXTURES]
    clips = [source.load() for source in sources]
    found = [Case(f"{clip.clip_id}/noisy", clip.clean, clip.noisy, clip.noisy) for clip in clips]
    for engine in ENGINES:
        for clip, outcome in zip(clips, run_builtin(engine, sources)):
            assert not outcome.record.failed, outcome.record.error
            found.append(Case(f"{clip.clip_id}/{engine}", clip.clean, outcome.output.astype(np.float32), clip.noisy))
    return tuple(sorted(found, key=lambda case: case.name))
