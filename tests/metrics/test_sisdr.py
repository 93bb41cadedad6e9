"""SI-SDR, SI-SDRi and SNR (nsbench.builtin.metrics.sisdr) against analytic values on
seeded signals and against fast_bss_eval."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from nsbench.plugins.errors import MetricUndefined

from tests.helpers.metric_signals import HALF_DB, SR, inputs, orthogonal_noise, rng, zero_mean

sisdr = importlib.import_module("nsbench.builtin.metrics.sisdr")


@pytest.mark.parametrize("snr_db", [-10.0, 0.0, 5.0, 20.0, 40.0])
@pytest.mark.parametrize("zm", [False, True])
def test_si_sdr_equals_constructed_snr(snr_db, zm):
    s = zero_mean(rng(0).standard_normal(SR))
    n = orthogonal_noise(s, snr_db)
    assert sisdr.si_sdr(s + n, s, zero_mean=zm) == pytest.approx(snr_db, abs=0.01)


@pytest.mark.parametrize("gain", [0.1, 7.0])
@pytest.mark.parametrize("zm", [False, True])
def test_si_sdr_is_scale_invariant(gain, zm):
    s = rng(3).standard_normal(SR)
    est = s + 0.3 * rng(4).standard_normal(SR)
    base = sisdr.si_sdr(est, s, zero_mean=zm)
    assert -10 < base < 30
    assert sisdr.si_sdr(gain * est, s, zero_mean=zm) == pytest.approx(base, abs=1e-9)


def test_si_sdr_silence_and_identity():
    s = rng(5).standard_normal(1000)
    silent = np.zeros(1000)
    assert sisdr.si_sdr(s, silent) == -120.0
    assert sisdr.si_sdr(silent, silent) == -120.0  # silence is not perfect reconstruction
    assert sisdr.si_sdr(silent, s) == -120.0
    assert sisdr.si_sdr(s, s) == 120.0
    assert sisdr.si_sdr(s.astype(np.float32), s.astype(np.float32)) == 120.0
    assert sisdr.si_sdr(s, s, zero_mean=True) == 120.0


def test_si_sdr_orthogonal_estimate_is_floor():
    s = zero_mean(rng(6).standard_normal(SR))
    n = orthogonal_noise(s, 0.0)
    assert sisdr.si_sdr(n, s) == -120.0
    assert sisdr.si_sdr(n, s, zero_mean=True) == -120.0


def test_si_sdr_conventions_differ_on_dc_offset_in_estimate():
    # est = s + n + d*1 with s, n zero-mean and orthogonal. Without mean removal the
    # offset is orthogonal to s, so it adds N*d^2 to the noise:
    #   SI-SDR = 10log10(|s|^2 / (|n|^2 + N d^2));  with mean removal: 10log10(|s|^2/|n|^2).
    s = zero_mean(rng(7).standard_normal(SR))
    n = orthogonal_noise(s, 20.0)
    d = 0.5
    est = s + n + d
    expected_plain = 10 * math.log10((s @ s) / (n @ n + s.size * d**2))
    assert sisdr.si_sdr(est, s) == pytest.approx(expected_plain, abs=1e-9)
    assert sisdr.si_sdr(est, s, zero_mean=True) == pytest.approx(20.0, abs=1e-9)
    assert sisdr.si_sdr(est, s, zero_mean=True) - sisdr.si_sdr(est, s) > 10  # zm higher here


def test_si_sdr_conventions_differ_on_shared_dc_offset():
    # ref = s + d*1, est = ref + n (n orthogonal to s and to 1): without mean removal
    # the offset counts as signal: 10log10((|s|^2 + N d^2) / |n|^2) > 10log10(|s|^2/|n|^2).
    s = zero_mean(rng(8).standard_normal(SR))
    n = orthogonal_noise(s, 10.0)
    d = 1.0
    ref = s + d
    expected_plain = 10 * math.log10((s @ s + s.size * d**2) / (n @ n))
    assert sisdr.si_sdr(ref + n, ref) == pytest.approx(expected_plain, abs=1e-9)
    assert sisdr.si_sdr(ref + n, ref, zero_mean=True) == pytest.approx(10.0, abs=1e-9)
    assert expected_plain > 10.0 + 2.0


def test_si_sdr_matches_fast_bss_eval():
    fbe = pytest.importorskip("fast_bss_eval.numpy")
    r = rng(9)
    for _ in range(20):
        ref = r.standard_normal(4000) + r.uniform(-1, 1)
        est = r.uniform(0.05, 3) * ref + r.uniform(0.01, 3) * r.standard_normal(4000) + r.uniform(-1, 1)
        for zm in (False, True):
            expected = float(fbe.si_sdr(ref[None], est[None], zero_mean=zm)[0])
            assert sisdr.si_sdr(est, ref, zero_mean=zm) == pytest.approx(expected, abs=1e-6)


def test_si_sdr_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="4 samples, reference 5"):
        sisdr.si_sdr(np.ones(4), np.ones(5))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_samples_are_an_error_not_a_score(bad):
    s = rng(15).standard_normal(100)
    broken = s.copy()
    broken[50] = bad
    for est, ref in ((broken, s), (s, broken)):
        with pytest.raises(ValueError, match="non-finite"):
            sisdr.si_sdr(est, ref)
        with pytest.raises(ValueError, match="non-finite"):
            sisdr.snr(est, ref)


def test_si_sdri_is_output_minus_input():
    s = zero_mean(rng(10).standard_normal(SR))
    noisy = s + orthogonal_noise(s, 0.0, seed=11)
    output = s + orthogonal_noise(s, 10.0, seed=12)
    x = inputs(output, s, noisy)
    assert sisdr.si_sdr_input_metric(x) == pytest.approx(0.0, abs=0.01)
    assert sisdr.si_sdri_metric(x) == pytest.approx(10.0, abs=0.01)
    assert sisdr.si_sdr_metric(x) - sisdr.si_sdr_input_metric(x) == sisdr.si_sdri_metric(x)


def test_si_sdri_undefined_when_input_is_clean():
    s = rng(13).standard_normal(SR)
    x = inputs(0.5 * s, s, s)
    for func in (sisdr.si_sdr_input_metric, sisdr.si_sdri_metric):
        with pytest.raises(MetricUndefined, match="input equals the clean reference"):
            func(x)
    assert sisdr.si_sdr_metric(x) == 120.0  # the output itself is still scored


def test_snr():
    s = zero_mean(rng(14).standard_normal(SR))
    n = orthogonal_noise(s, 7.0)
    assert sisdr.snr(s + n, s) == pytest.approx(7.0, abs=1e-9)
    assert sisdr.snr(0.5 * s, s) == pytest.approx(-HALF_DB, abs=1e-9)  # gain change is punished
    assert sisdr.snr(np.zeros(SR), s) == 0.0
    assert sisdr.snr(s, s) == 120.0
    assert sisdr.snr(s, np.zeros(SR)) == -120.0
