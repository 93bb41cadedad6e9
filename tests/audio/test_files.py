"""Reading audio files (nsbench.audio.files)."""
from __future__ import annotations

import numpy as np

from nsbench.audio.files import read_audio

from tests.helpers.dataset_layouts import write


def test_read_audio_reads_only_the_requested_frames(tmp_path):
    audio = np.random.default_rng(0).uniform(-0.5, 0.5, size=(1000, 2)).astype(np.float32)
    path = write(tmp_path / "a.wav", audio, 8000, subtype="FLOAT")
    whole, rate, notes = read_audio(path)
    part, part_rate, part_notes = read_audio(path, start=300, frames=250)
    assert rate == part_rate == 8000 and len(whole) == 1000 and len(part) == 250
    np.testing.assert_array_equal(part, whole[300:550])
    np.testing.assert_array_equal(part, audio[300:550].mean(axis=1, dtype=np.float32))
    assert notes == part_notes == ["a.wav: 2 channels downmixed to mono"]
    np.testing.assert_array_equal(read_audio(path, start=900)[0], whole[900:])
