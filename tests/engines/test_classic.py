"""Classic engines (noisereduce, WebRTC, Speex, NSNet2) run for real on the demo-tts
set's stationary cells; the oracle masks must beat all of them; the shared
framing code; Koala's paths without a working AccessKey."""
from __future__ import annotations

import importlib.machinery
import json
import sys
import threading
import time
import types

import numpy as np
import pytest

from tests.helpers.engine_checks import assert_improves_and_aligned, mean_gain, run_builtin, stationary_sources
from nsbench.audio.alignment import estimate_lag
from nsbench.builtin.engines import koala
from nsbench.builtin.engines.speex_ns import SpeexNoiseSuppression
from nsbench.cli import main
from nsbench.audio.frames import from_int16, process_in_frames, to_int16
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.types import ClipError, UserError

REAL_ENGINES = ("noisereduce", "webrtc", "speex", "nsnet2")
ORACLES = ("oracle-irm", "oracle-ibm")
# WebRTC always high-passes at ~100 Hz. On the demo voices (fundamentals near
# 100 Hz) that filter alone costs 1-2 dB of SI-SDRi on white noise before any
# suppression, so at white/5 dB level 2 nets only 0.33-0.72 dB (measured). The
# bar is lowered for it, not the reference changed: against a high-passed
# reference its suppression alone still nets only 0.37 dB at pink/5 dB, and the
# filter is part of what a user of this engine gets.
MIN_GAIN_DB = {"webrtc": 0.25}
PVKOALA_INSTALLED = build_registry(get_plugin_manager(load_entry_points=False)).engines.get("koala").available
needs_pvkoala = pytest.mark.skipif(not PVKOALA_INSTALLED, reason=f"pvkoala not installed ({koala.INSTALL})")


def registry():
    return build_registry(get_plugin_manager(load_entry_points=False))


@pytest.fixture(scope="module")
def sources(demo_tts_sources):
    return stationary_sources(demo_tts_sources)


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


# --------------------------------------------------------------------------- real engines


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


# --------------------------------------------------------------------------- framing


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


# --------------------------------------------------------------------------- Koala


def demo_argv(results, *extra):
    return ["--limit", "2", "--metric", "si_sdr", "--results-folder", str(results), "--quiet", *extra]


def test_koala_without_pvkoala_is_listed_unavailable_with_its_install_line(monkeypatch, capsys):
    # None in sys.modules is how Python marks a module as absent: find_spec
    # returns None and import fails. It hides pvkoala where it is installed.
    monkeypatch.setitem(sys.modules, "pvkoala", None)
    record = registry().engines.get("koala")
    assert not record.available and record.spec.install == "pip install pvkoala==3.0.1"
    assert main(["--list", "engines"]) == 0
    line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("koala "))
    assert "unavailable: pip install pvkoala==3.0.1" in line
    assert main(["--engine", "koala", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        "nsbench: error: engine 'koala' is unavailable: missing pvkoala. Install: pip install pvkoala==3.0.1"
    )


def test_koala_is_not_in_a_default_run():
    assert not registry().engines.get("koala").spec.default


def run_with_koala(tmp_path, capsys, *extra):
    """A CLI run of koala and speex; returns (stderr lines about koala, results folder)."""
    # Every result written, then exit 4: koala was asked for by name and did not run.
    assert main(demo_argv(tmp_path, "--engine", "koala", "--engine", "speex", *extra)) == 4
    err = capsys.readouterr().err
    assert "Traceback" not in err
    folder = tmp_path / "demo"
    assert json.loads((folder / "speex.json").read_text())["clips"] == 2  # the other engine still ran
    assert not (folder / "koala.json").exists()
    return [line for line in err.splitlines() if line.startswith("nsbench: koala")], folder


@needs_pvkoala
def test_koala_without_a_key_is_one_line_and_the_run_goes_on(tmp_path, capsys, monkeypatch, demo_sources):
    monkeypatch.delenv(koala.KEY_VARIABLE, raising=False)
    lines, folder = run_with_koala(tmp_path, capsys)
    assert lines == ["nsbench: koala skipped: koala needs --picovoice-access-key KEY (or $PICOVOICE_ACCESS_KEY); "
                     "get a key at https://console.picovoice.ai/ (it is checked online)"]
    assert "--picovoice-access-key" in (folder / "report.md").read_text()


@needs_pvkoala
def test_koala_with_a_bogus_key_fails_fast_in_one_line_without_the_key(tmp_path, capsys, demo_sources):
    # pvkoala checks the key's format locally and refuses it before any network access.
    key = "bogus-nsbench-test-key"
    start = time.perf_counter()
    lines, folder = run_with_koala(tmp_path, capsys, "--picovoice-access-key", key)
    assert time.perf_counter() - start < 30
    assert len(lines) == 1
    assert lines[0].startswith("nsbench: koala skipped: koala could not start: KoalaInvalidArgumentError")
    assert key not in lines[0] and key not in (folder / "report.md").read_text()


def fake_pvkoala(create) -> types.ModuleType:
    module = types.ModuleType("pvkoala")
    module.__spec__ = importlib.machinery.ModuleSpec("pvkoala", None)
    module.create = create
    module.KoalaError = type("KoalaError", (Exception,), {})
    return module


def test_koala_create_that_hangs_is_abandoned_with_one_line(monkeypatch):
    # A stand-in for pvkoala: offline, a real key is refused locally before any
    # network call, so a licence server that never answers cannot be provoked here.
    release = threading.Event()
    monkeypatch.setitem(sys.modules, "pvkoala", fake_pvkoala(lambda access_key: release.wait(10)))
    monkeypatch.setattr(koala, "CREATE_TIMEOUT_SECONDS", 0.2)
    try:
        with pytest.raises(UserError, match=r"pvkoala\.create did not return within 0.2 s"):
            koala.build({"picovoice_access_key": "key"})
    finally:
        release.set()


class DelayLine:
    """Stands in for a created Koala: output = input delayed by delay_sample."""

    sample_rate, frame_length, delay_sample = 16000, 256, 300

    def __init__(self):
        self.state, self.resets, self.deleted = [], 0, False

    def reset(self):
        self.state, self.resets = [0] * self.delay_sample, self.resets + 1

    def process(self, pcm):
        assert len(pcm) == self.frame_length and all(type(x) is int for x in pcm)
        self.state += pcm
        out, self.state = self.state[: self.frame_length], self.state[self.frame_length :]
        return out

    def delete(self):
        self.deleted = True


def test_koala_frames_and_delay_reach_the_clean_alignment(monkeypatch, sources):
    # Koala cannot run offline; a delay line with its interface checks our side:
    # frames of frame_length, reset per clip, delay_sample removed, delete on close.
    handle = DelayLine()
    monkeypatch.setitem(sys.modules, "pvkoala", fake_pvkoala(lambda access_key: handle))
    outcomes = run_builtin("koala", sources[:2], {"picovoice_access_key": "key"})
    for outcome, source in zip(outcomes, sources[:2]):
        assert not outcome.record.failed, outcome.record.error
        np.testing.assert_allclose(outcome.output, source.load().noisy, atol=1 / 32768)
    assert handle.resets == 2 and handle.deleted
