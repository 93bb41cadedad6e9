"""PESQ (PyPI pesq): real runs on espeak speech, checked against the package's
own function, plus its failure modes."""
from __future__ import annotations

import importlib
import importlib.util
from importlib import metadata

import numpy as np
import pytest

from nsbench.plugins.errors import MetricUndefined

from tests.helpers.speech import SR, inputs


pesq_metric = importlib.import_module("nsbench.builtin.metrics.pesq_metric")


@pytest.fixture(scope="module")
def pesq_scores(speech, noisy) -> dict[str, list[float]]:
    """Per mode: [clean against itself, then 20, 10, 0 dB of white noise]."""
    pytest.importorskip("pesq")
    return {
        mode: [pesq_metric.pesq_score(speech, x, SR, mode=mode) for x in (speech, *noisy.values())]
        for mode in ("wb", "nb")
    }


def test_pesq_of_clean_speech_against_itself_is_the_maximum(pesq_scores):
    assert pesq_scores["wb"][0] == pytest.approx(4.644, abs=0.001)
    assert pesq_scores["nb"][0] == pytest.approx(4.549, abs=0.001)


@pytest.mark.parametrize("mode", ["wb", "nb"])
def test_pesq_falls_as_white_noise_rises(pesq_scores, mode):
    scores = pesq_scores[mode]
    assert all(a > b for a, b in zip(scores, scores[1:])), scores
    assert scores[-1] < 1.5


def test_pesq_equals_the_package_called_directly(speech, noisy):
    pesq = pytest.importorskip("pesq")
    degraded = noisy[10.0]
    x = inputs(degraded, speech)
    assert pesq_metric.pesq_wb_metric(x) == pesq.pesq(SR, speech, degraded, "wb")
    # Narrow band on a 16 kHz clip is scored at 16 kHz, as torchmetrics and ClearerVoice do.
    assert pesq_metric.pesq_nb_metric(x) == pesq.pesq(SR, speech, degraded, "nb")


def test_pesq_at_8_khz_is_narrow_band_only(speech, noisy):
    pesq = pytest.importorskip("pesq")
    soxr = pytest.importorskip("soxr")
    clean8, degraded8 = (soxr.resample(x, SR, 8000, quality="HQ").astype(np.float32) for x in (speech, noisy[10.0]))
    x = inputs(degraded8, clean8, 8000)
    assert pesq_metric.pesq_nb_metric(x) == pesq.pesq(8000, clean8, degraded8, "nb")
    assert pesq_metric.pesq_nb_metric(x) != pesq_metric.pesq_nb_metric(inputs(noisy[10.0], speech))
    with pytest.raises(MetricUndefined, match="clip is at 8000 Hz: wide-band PESQ needs 16000 Hz"):
        pesq_metric.pesq_wb_metric(x)


def test_pesq_at_48_khz_is_scored_at_16_khz(speech, noisy):
    pesq = pytest.importorskip("pesq")
    soxr = pytest.importorskip("soxr")
    clean48, degraded48 = (soxr.resample(x, SR, 48000, quality="HQ").astype(np.float32) for x in (speech, noisy[10.0]))
    ref16, deg16 = (soxr.resample(x, 48000, SR, quality="HQ").astype(np.float32) for x in (clean48, degraded48))
    x = inputs(degraded48, clean48, 48000)
    assert pesq_metric.pesq_wb_metric(x) == pesq.pesq(SR, ref16, deg16, "wb")
    assert pesq_metric.pesq_nb_metric(x) == pesq.pesq(SR, ref16, deg16, "nb")


def test_pesq_ignores_level_and_delay(speech, pesq_scores):
    # What the 'ignores' column claims: a quieter, 50 ms late copy is a perfect score.
    quieter_later = np.concatenate([np.zeros(800, np.float32), 0.1 * speech[:-800]])
    assert pesq_metric.pesq_score(speech, quieter_later, SR, mode="wb") == pesq_scores["wb"][0]


def test_pesq_failures_are_undefined_with_their_reason(speech):
    pytest.importorskip("pesq")
    silence = np.zeros_like(speech)
    for mode in ("wb", "nb"):
        with pytest.raises(MetricUndefined, match="output is silent"):
            pesq_metric.pesq_score(speech, silence, SR, mode=mode)
        # Not all zeros, but too faint for pesq's float32 level alignment: it returns NaN.
        faint = (1e-30 * np.random.default_rng(1).standard_normal(speech.size)).astype(np.float32)
        with pytest.raises(MetricUndefined, match="output is silent"):
            pesq_metric.pesq_score(speech, faint, SR, mode=mode)
        with pytest.raises(MetricUndefined, match="No utterances detected"):
            pesq_metric.pesq_score(silence, speech, SR, mode=mode)
        with pytest.raises(MetricUndefined, match="shorter than 1/4 s"):
            pesq_metric.pesq_score(speech[1600:5200], speech[1600:5200], SR, mode=mode)  # 0.225 s
    with pytest.raises(MetricUndefined, match="needs 16000 Hz or 8000 Hz, and upsampling cannot add"):
        pesq_metric.pesq_nb_metric(inputs(speech[::4], speech[::4], 4000))


def test_pesq_install_line_pins_the_tested_version():
    pytest.importorskip("pesq")
    # The paper metrics' extra first, the package at the tested pin beside it.
    assert pesq_metric.INSTALL.startswith("pip install 'nsbench[paper]' ")
    assert f"pesq=={metadata.version('pesq')};" in pesq_metric.INSTALL
    assert pesq_metric.pesq_version() == metadata.version("pesq")
