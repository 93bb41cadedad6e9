"""The framing code the frame-based engines share (nsbench.audio.frames)."""
from __future__ import annotations

import numpy as np
import pytest

from nsbench.audio.frames import from_int16, process_in_frames, to_int16
from nsbench.plugins.errors import ClipError


def test_int16_conversion_rounds_and_clips():
    audio = np.array([0.0, 1.0, -1.0, 1.7, -1.7, 0.6 / 32768, -0.6 / 32768, 0.5], dtype=np.float32)
    np.testing.assert_array_equal(to_int16(audio), [0, 32767, -32768, 32767, -32768, 1, -1, 16384])
    np.testing.assert_array_equal(from_int16(np.array([-32768, 16384], dtype=np.int16)), [-1.0, 0.5])


def test_int16_conversion_of_a_long_clip_goes_by_blocks_with_the_same_result():
    from nsbench.audio.blocks import BLOCK_SAMPLES

    audio = (1.2 * np.random.default_rng(0).uniform(-1, 1, 2 * BLOCK_SAMPLES + 123)).astype(np.float32)
    whole = np.clip(np.round(audio.astype(np.float64) * 32768), -32768, 32767).astype(np.int16)
    np.testing.assert_array_equal(to_int16(audio), whole)


def test_frames_are_whole_and_the_output_keeps_the_input_length():
    audio = np.random.default_rng(2).uniform(-0.5, 0.5, 1000).astype(np.float32)
    seen = []

    def identity(frame):
        seen.append(frame.copy())
        return frame

    output = process_in_frames(audio, 160, identity)
    assert [len(frame) for frame in seen] == [160] * 7  # ceil(1000 / 160)
    assert not np.any(seen[-1][1000 - 960 :])  # the padding is zeros
    assert output.dtype == np.float32 and len(output) == 1000
    np.testing.assert_allclose(output, audio, atol=1 / 32768)


def test_a_frame_returned_short_fails_the_clip():
    with pytest.raises(ClipError, match="159 samples for a frame of 160"):
        process_in_frames(np.zeros(320, dtype=np.float32), 160, lambda frame: frame[:-1])
