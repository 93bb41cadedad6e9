"""DeepFilterNet3 on the demo-tts set's stationary cells."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from nsbench.audio.files import resample
from nsbench.builtin.engines import deepfilternet

from tests.helpers.engine_checks import assert_improves_and_aligned, delays, run_builtin


def test_deepfilternet_improves_and_is_aligned(stationary):
    outcomes = run_builtin("deepfilternet", stationary)
    assert_improves_and_aligned(outcomes, stationary)
    assert delays(outcomes) == {"1440 samples at 48000 Hz"}


def test_deepfilternet_starts_each_clip_fresh_as_a_state_from_df_create(stationary):
    """Each clip runs on a forked copy of a never-fed state: its output is bit for
    bit what a state fresh from df_create gives, whatever clip ran before."""
    clip = stationary[0].load().noisy
    first = resample(clip[:16000], 16000, deepfilternet.SAMPLE_RATE)
    other = resample(clip[16000:40000], 16000, deepfilternet.SAMPLE_RATE)
    engine = deepfilternet.build({})
    try:
        outputs = []
        for audio in (first, other, first):
            engine.prepare()
            outputs.append(engine.process(audio))
        fresh = [engine.on_new_state(audio) for audio in (first, other)]
    finally:
        engine.close()
    assert len(outputs[0]) == len(first) and np.any(outputs[0])
    np.testing.assert_array_equal(outputs[0], fresh[0])
    np.testing.assert_array_equal(outputs[1], fresh[1])
    np.testing.assert_array_equal(outputs[2], fresh[0])


def test_deepfilternet_says_so_when_its_forked_copy_dies(stationary):
    """A real fault: the prepared copy killed before it gets the clip."""
    audio = resample(stationary[0].load().noisy[:16000], 16000, deepfilternet.SAMPLE_RATE)
    engine = deepfilternet.build({})
    try:
        engine.prepare()
        os.kill(engine._copy.pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="fresh state failed"):
            engine.process(audio)
        assert len(engine.process(audio)) == len(audio)  # the next clip gets a new copy
    finally:
        engine.close()


def test_deepfilternet_close_reaps_an_unused_copy():
    engine = deepfilternet.build({})
    engine.prepare()
    pid = engine._copy.pid
    engine.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_deepfilternet_builds_reuse_the_processs_template(stationary):
    """The never-fed template outlives an engine: a second build (a rebuilt
    engine, a forked worker) loads no model, and still starts each clip fresh."""
    audio = resample(stationary[0].load().noisy[:16000], 16000, deepfilternet.SAMPLE_RATE)
    first = deepfilternet.build({})
    first.process(audio)
    first.close()
    second = deepfilternet.build({})
    try:
        assert second._template == first._template
        np.testing.assert_array_equal(second.process(audio), second.on_new_state(audio))
    finally:
        second.close()
