"""Classic engines (noisereduce, WebRTC, Speex, NSNet2) run for real on the demo-tts
set's stationary cells; the oracle masks must beat all of them."""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.engine_checks import assert_improves_and_aligned, mean_gain, registry, run_builtin
from nsbench.audio.alignment import estimate_lag
from nsbench.builtin.engines.speex_ns import SpeexNoiseSuppression


REAL_ENGINES = ("noisereduce", "webrtc", "speex", "nsnet2")


ORACLES = ("oracle-irm", "oracle-ibm")


# WebRTC always high-passes at ~100 Hz. On the demo voices (fundamentals near
# 100 Hz) that filter alone costs 1-2 dB of SI-SDRi on white noise before any
# suppression, so at white/5 dB level 2 nets only 0.33-0.72 dB (measured). The
# bar is lowered for it, not the reference changed: against a high-passed
# reference its suppression alone still nets only 0.37 dB at pink/5 dB, and the
# filter is part of what a user of this engine gets.
MIN_GAIN_DB = {"webrtc": 0.25}


@pytest.fixture(scope="module")
def runs(sources):
    """Each engine runs once on the stationary clips; tests share the outcomes."""
    done = {}

    def run(name):
        if name not in done:
            record = registry().engines.get(name)
            if not record.available:
                pytest.skip(f"{name} unavailable: {record.spec.install}")
            done[name] = run_builtin(name, sources)
        return done[name]

    return run


@pytest.mark.parametrize("name", REAL_ENGINES)
def test_engine_improves_and_is_aligned(name, runs, sources):
    assert_improves_and_aligned(runs(name), sources, min_gain_db=MIN_GAIN_DB.get(name, 0.5))


def test_oracles_score_above_every_engine(runs, sources):
    tested = {}
    for name in REAL_ENGINES:
        if registry().engines.get(name).available:
            tested[name] = mean_gain(runs(name))
    assert len(tested) >= 3, f"too few engines to compare: {sorted(tested)}"
    for oracle in ORACLES:
        assert_improves_and_aligned(runs(oracle), sources)
        assert mean_gain(runs(oracle)) > max(tested.values()), f"{oracle}: {mean_gain(runs(oracle)):.2f} dB vs {tested}"


@pytest.mark.parametrize("name", ORACLES)
def test_oracles_use_the_clean_reference(name):
    engine = registry().engines.get(name).spec.factory({})
    noisy = np.random.default_rng(1).standard_normal(16000).astype(np.float32) * 0.1
    # Clean equal to the input: no noise, the mask is 1, the STFT round trip is exact.
    np.testing.assert_allclose(engine.process(noisy, clean=noisy), noisy, atol=1e-6)
    # Clean silent: everything is noise, the mask is 0.
    assert np.max(np.abs(engine.process(noisy, clean=np.zeros_like(noisy)))) < 1e-6


def test_webrtc_level_zero_has_no_delay(sources):
    # Without suppression only the high-pass acts, and it adds no lag: declaring
    # 96 there would shift the output 6 ms early.
    for outcome, source in zip(run_builtin("webrtc", sources[:2], {"webrtc_ns_level": 0}), sources[:2]):
        assert not outcome.record.failed, outcome.record.error
        assert estimate_lag(outcome.output, source.load().clean, 1600) == 0


def test_speex_refuses_a_frame_of_the_wrong_size():
    # The C code reads 320 bytes whatever it is handed; the guard must stop a
    # short frame before it gets there.
    frame = SpeexNoiseSuppression().frame_processor()
    for size in (318, 322, 0):
        with pytest.raises(ValueError, match=f"exactly 320 bytes, got {size}"):
            frame(bytes(size))
    assert len(frame(bytes(320))) == 320
