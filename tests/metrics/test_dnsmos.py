"""DNSMOS P.835 (speechmos's ONNX model): real runs on espeak speech, checked
against the package's own functions, plus the window arithmetic on a fake session."""
from __future__ import annotations

import hashlib
import importlib
import subprocess
import sys
import types
from importlib import metadata

import numpy as np
import pytest

from nsbench.plugins.errors import MetricUndefined

from tests.helpers.paths import REPO_ROOT
from tests.helpers.speech import SR, inputs


dnsmos = importlib.import_module("nsbench.builtin.metrics.dnsmos")


class FakeSession:
    """Stands in for an onnxruntime session (ours or speechmos's): raw outputs
    that depend on every sample of the window, so a window taken from the wrong
    place or skipped changes the mean; P.808 inputs (mel, 3-D) get a constant."""

    def __init__(self, *args, **kwargs):
        self.windows: list[np.ndarray] = []

    def run(self, output_names, feeds):
        x = feeds["input_1"]
        if x.ndim == 3:
            return [np.array([[3.0]], dtype=np.float32)]
        self.windows.append(x[0].copy())
        raw = [2.0 + 20.0 * x.mean(), 1.0 + x.std(), 3.0 + np.abs(x).max()]
        return [np.array([raw], dtype=np.float32)]


@pytest.fixture
def fake_dnsmos_session(monkeypatch) -> FakeSession:
    fake = FakeSession()
    monkeypatch.setattr(dnsmos, "session", lambda model=dnsmos.P835: fake)
    monkeypatch.setattr(dnsmos, "_last", {})
    return fake


def test_dnsmos_window_plan():
    second = SR
    assert dnsmos.window_starts(dnsmos.WINDOW_SAMPLES) == [0]
    assert dnsmos.window_starts(dnsmos.WINDOW_SAMPLES - 1) == []
    assert dnsmos.window_starts(16 * second) == [k * second for k in range(7)]
    # int((7 + 9.01) * 16000) == 256159: the reference's window 7 is one sample short and
    # skipped, and so are 8 to 23; 24 comes back.
    assert dnsmos.window_starts(17 * second) == [k * second for k in range(7)]
    assert dnsmos.window_starts(40 * second) == [k * second for k in (*range(7), *range(24, 31))]


def test_dnsmos_short_clip_is_looped_and_scored_per_window(fake_dnsmos_session):
    clip = (0.1 * np.random.default_rng(2).standard_normal(4 * SR)).astype(np.float32)
    scores = dnsmos.clip_scores(clip, SR)
    looped = np.tile(clip, 4)  # 4 s -> 8 s -> 16 s: seven windows, one second apart, of which four differ
    every = [looped[k * SR : k * SR + dnsmos.WINDOW_SAMPLES] for k in range(7)]
    windows = fake_dnsmos_session.windows
    assert len(windows) == 4  # windows 4-6 start 4 s after windows 0-2: the same samples, scored once
    for k, window in enumerate(windows):
        np.testing.assert_array_equal(window, every[k])
    np.testing.assert_array_equal(every[4], every[0])
    # The score is still the mean over all seven windows, as speechmos takes it.
    raw = np.array([[2.0 + 20.0 * w.mean(), 1.0 + w.std(), 3.0 + np.abs(w).max()] for w in every], np.float32)
    assert scores.bak == np.mean(np.poly1d(dnsmos.POLY_BAK)(raw[:, 1].astype(np.float64)))


def test_dnsmos_three_metrics_share_one_inference(fake_dnsmos_session, speech):
    x = inputs(speech, speech)
    values = [dnsmos.dnsmos_sig_metric(x)["dnsmos_sig"], dnsmos.dnsmos_bak_metric(x)["dnsmos_bak"],
              dnsmos.dnsmos_ovrl_metric(x)["dnsmos_ovrl"]]
    assert len(fake_dnsmos_session.windows) == 1
    assert values == list(dnsmos.clip_scores(speech, SR))
    changed = speech.copy()
    changed[-1] += 1e-3  # one sample differs: a new clip, a new inference
    dnsmos.dnsmos_bak_metric(inputs(changed, speech))
    assert len(fake_dnsmos_session.windows) == 2
    dnsmos.clip_scores(speech, 8000)  # same samples at another rate: another clip too
    assert len(fake_dnsmos_session.windows) == 3


def test_dnsmos_clips_beyond_full_scale_and_resamples(fake_dnsmos_session):
    soxr = pytest.importorskip("soxr")
    loud = (1.5 * np.sin(2 * np.pi * 440 * np.arange(5 * 48000) / 48000)).astype(np.float32)
    dnsmos.clip_scores(loud, 48000)
    expected = np.clip(soxr.resample(loud, 48000, SR, quality="HQ").astype(np.float32), -1, 1)
    np.testing.assert_array_equal(fake_dnsmos_session.windows[0], np.tile(expected, 2)[: dnsmos.WINDOW_SAMPLES])
    with pytest.raises(MetricUndefined, match="empty output"):
        dnsmos.clip_scores(np.zeros(0, np.float32), SR)


@pytest.fixture
def speechmos_dnsmos(monkeypatch):
    """speechmos.dnsmos with its P.835 path untouched.

    speechmos also computes a librosa mel spectrogram for the P.808 model on every
    window; that librosa call is numba-compiled on first use, which took over a
    minute in a fresh virtualenv here. P.808 plays no part in SIG, BAK or OVRL,
    so the mel spectrogram is replaced by zeros of its shape (900 frames x 120
    bands). Its module also imports librosa and requests (``session``, unused):
    where they are not installed, empty stand-ins let it import, so the tests
    need neither.
    """
    pytest.importorskip("speechmos")
    for name, attributes in (("librosa", {}), ("requests", {"session": None})):
        if importlib.util.find_spec(name) is None:
            monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**attributes))
    module = importlib.import_module("speechmos.dnsmos")
    monkeypatch.setattr(module.DNSMOS, "audio_melspec", lambda self, audio, **kw: np.zeros((900, 120), np.float32))
    monkeypatch.setattr(module, "dnsmos", None)  # speechmos caches its sessions here
    return module


@pytest.mark.parametrize("seconds", [2.4, 4.0, 11.2, 40.0])
def test_dnsmos_arithmetic_equals_speechmos(monkeypatch, fake_dnsmos_session, speechmos_dnsmos, seconds):
    """Segmentation, looping, polynomials and means against speechmos's own code,
    with both sides fed by the same fake network (fast for any length)."""
    monkeypatch.setattr(speechmos_dnsmos.ort, "InferenceSession", FakeSession)
    clip = np.random.default_rng(3).uniform(-0.5, 0.5, int(seconds * SR)).astype(np.float32)
    expected = speechmos_dnsmos.run(clip, SR)
    ours = dnsmos.clip_scores(clip, SR)
    assert (ours.sig, ours.bak, ours.ovrl) == (expected["sig_mos"], expected["bak_mos"], expected["ovrl_mos"])


@pytest.fixture(scope="module")
def dnsmos_scores(speech, noisy) -> dict[str, dnsmos.Scores]:
    pytest.importorskip("speechmos")
    pytest.importorskip("onnxruntime")
    return {"clean": dnsmos.clip_scores(speech, SR), "20 dB": dnsmos.clip_scores(noisy[20.0], SR),
            "0 dB": dnsmos.clip_scores(noisy[0.0], SR)}


def test_dnsmos_equals_speechmos_on_speech(speech, noisy, dnsmos_scores, speechmos_dnsmos):
    """The real network. Our single-threaded session can differ from speechmos's
    multi-threaded one in the last bit of a float32 output: about 3e-8 on a score."""
    for label, clip in (("clean", speech), ("0 dB", noisy[0.0])):
        expected = speechmos_dnsmos.run(clip, SR)
        ours = dnsmos_scores[label]
        assert ours.sig == pytest.approx(expected["sig_mos"], abs=1e-6), label
        assert ours.bak == pytest.approx(expected["bak_mos"], abs=1e-6), label
        assert ours.ovrl == pytest.approx(expected["ovrl_mos"], abs=1e-6), label


def test_dnsmos_bak_drops_when_noise_is_added(dnsmos_scores):
    clean, light, heavy = dnsmos_scores["clean"], dnsmos_scores["20 dB"], dnsmos_scores["0 dB"]
    assert clean.bak > light.bak + 0.3 and light.bak > heavy.bak + 0.3, dnsmos_scores
    assert clean.ovrl > heavy.ovrl + 0.3
    for scores in dnsmos_scores.values():
        assert all(1.0 <= value <= 5.0 for value in scores), scores


def test_dnsmos_runs_without_importing_speechmos_or_librosa():
    pytest.importorskip("speechmos")
    code = (
        "import sys, numpy as np, importlib; "
        "d = importlib.import_module('nsbench.builtin.metrics.dnsmos'); "
        "d.session(); print(d.dnsmos_version()); "
        "print(sorted({'speechmos', 'librosa', 'numba'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    version, loaded = result.stdout.strip().splitlines()
    assert loaded == "[]"
    digest = hashlib.sha256(dnsmos.model_path().read_bytes()).hexdigest()
    assert version == f"speechmos {metadata.version('speechmos')}; sig_bak_ovr.onnx sha256:{digest}"
    assert metadata.version("speechmos") == dnsmos.SPEECHMOS_VERSION


def test_distinct_windows_give_the_every_window_figures_to_the_bit():
    """The real models on a 4 s clip (7 windows, 4 distinct): the scores equal, bit for bit, the mean
    over every window each scored by the network, as before the windows were shared."""
    pytest.importorskip("speechmos")
    pytest.importorskip("onnxruntime")
    clip = (0.1 * np.random.default_rng(5).standard_normal(4 * SR)).astype(np.float32)
    run = dnsmos.session(dnsmos.P835).run
    raw = np.array([run(None, {"input_1": w[np.newaxis]})[0][0] for w in dnsmos.checked_windows(clip)], dtype=np.float64)
    expected = tuple(float(np.polyval(p, raw[:, i]).mean()) for i, p in enumerate((dnsmos.POLY_SIG, dnsmos.POLY_BAK, dnsmos.POLY_OVRL)))
    assert tuple(dnsmos.dnsmos_p835(clip)) == expected
    run808 = dnsmos.session(dnsmos.P808).run
    raw808 = [run808(None, {"input_1": dnsmos.p808_features(w[:-dnsmos.P808_TRIM])[np.newaxis]})[0][0][0]
              for w in dnsmos.checked_windows(clip)]
    assert dnsmos.dnsmos_p808(clip) == float(np.mean(np.asarray(raw808, dtype=np.float64)))
