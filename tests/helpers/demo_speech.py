"""How much speech a demo voice holds, by Silero VAD (metrics/speech_gated):
MIN_SPEECH_SECONDS' measure, which the demo bundle's builder
(bench/make_demo_bundle.py) and the tests apply. Kept out of
datasets/demo.py: a built-in dataset imports only ``nsbench`` and
``nsbench.adapters`` (tests/plugins/test_public_api.py), never a metric, and
mixing never measures."""
from __future__ import annotations

import numpy as np

from nsbench.builtin.datasets.demo import SAMPLE_RATE, longest_voice_samples, shortest_voice_samples, without_rumble


def speech_chunks(voice: np.ndarray) -> tuple[np.ndarray, float]:
    """(one bool per chunk of a 16 kHz voice, True where Silero VAD takes it
    for speech; the chunk's seconds). Imported here, not at the top: the
    detector runs in onnxruntime, an extra."""
    from nsbench.builtin.metrics import speech_gated

    chunks = speech_gated.speech_probabilities(voice) >= speech_gated.SPEECH_THRESHOLD
    return chunks, speech_gated.CHUNK / speech_gated.VAD_RATE


def speech_seconds(voice: np.ndarray) -> float:
    """Seconds of speech in a 16 kHz voice (a clip's clean reference)."""
    chunks, chunk_seconds = speech_chunks(voice)
    return float(np.count_nonzero(chunks)) * chunk_seconds


def sparsest_speech_seconds(recording: np.ndarray) -> float:
    """The least speech a clip can take from a target recording: the fewest
    speech chunks in any run of chunks as long as shortest_voice_samples(),
    high-passed as ``voice`` mixes it. 0 for a recording shorter than
    longest_voice_samples(), which no clip can take."""
    if len(recording) < longest_voice_samples():
        return 0.0
    chunks, chunk_seconds = speech_chunks(without_rumble(recording))
    window = int(shortest_voice_samples() / (chunk_seconds * SAMPLE_RATE))
    return float(np.convolve(chunks, np.ones(window, dtype=int), "valid").min()) * chunk_seconds
