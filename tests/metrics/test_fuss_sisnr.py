"""FUSS SI-SNR (nsbench.builtin.metrics.fuss_sisnr) against an independent
implementation of the published formula written here."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nsbench.builtin.metrics import fuss_sisnr
from nsbench.plugins.errors import MetricUndefined
from nsbench.plugins.records import MetricInputs

from tests.helpers.dataset_layouts import FUSS_RATE


EPS = 1e-8


def independent_si_snr(reference: np.ndarray, estimate: np.ndarray) -> float:
    """REFERENCE section 1, written out: rho = <y, yhat> / (|y| |yhat| + eps)."""
    rho = np.dot(reference, estimate) / (np.linalg.norm(reference) * np.linalg.norm(estimate) + EPS)
    return 10 * math.log10((rho**2 + EPS) / (1 - rho**2 + EPS))


def independent_fuss(references: np.ndarray, estimates: np.ndarray) -> dict:
    references = [np.asarray(r, dtype=np.float64) for r in references]
    estimates = [np.asarray(e, dtype=np.float64) for e in estimates]
    mixture = sum(references)
    best, best_total = None, -math.inf
    for permutation in itertools.permutations(range(len(references))):
        total = 0.0
        for j in range(len(references)):
            total += independent_si_snr(references[j], estimates[permutation[j]])
        if total > best_total:
            best, best_total = permutation, total
    matched = [estimates[i] for i in best]
    ref_power = [float(np.mean(r**2)) for r in references]
    ref_active = [math.sqrt(p) > 1e-8 for p in ref_power]
    quietest = min(p for p, active in zip(ref_power, ref_active) if active)
    est_active = [float(np.mean(e**2)) > 0.01 * quietest for e in matched]
    pairs = [j for j in range(len(references)) if ref_active[j] and est_active[j]]
    sisnr = [independent_si_snr(references[j], matched[j]) for j in pairs]
    sisnri = [independent_si_snr(references[j], matched[j]) - independent_si_snr(references[j], mixture) for j in pairs]
    return {
        "permutation": best,
        "pairs": len(pairs),
        "sisnr": sum(sisnr) / len(sisnr) if pairs else None,
        "sisnri": sum(sisnri) / len(sisnri) if pairs else None,
        "sisnri_pairs": sisnri,
        "under": sum(est_active) < sum(ref_active),
        "over": sum(est_active) > sum(ref_active),
    }


def signals(count: int, n: int = 4000, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(0.3 / (k + 1)) * rng.standard_normal(n) for k in range(count)]


def fuss_inputs(references, estimates) -> MetricInputs:
    references = np.asarray(references, dtype=np.float32)
    estimates = np.asarray(estimates, dtype=np.float32)
    noisy = references.sum(axis=0)
    return MetricInputs(output=estimates, clean=np.zeros_like(noisy), noisy=noisy, sample_rate=FUSS_RATE,
                        reference_sources=references, output_sources=estimates)


def check_against_independent(references, estimates) -> dict:
    metric_inputs = fuss_inputs(references, estimates)
    expected = independent_fuss(metric_inputs.reference_sources, metric_inputs.output_sources)
    scores = fuss_sisnr.fuss_scores(metric_inputs.reference_sources, metric_inputs.output_sources, metric_inputs.noisy)
    assert scores.permutation == expected["permutation"]
    assert fuss_sisnr.fuss_scored_pairs_metric(metric_inputs) == expected["pairs"]
    assert fuss_sisnr.fuss_under_separated_metric(metric_inputs) == float(expected["under"])
    assert fuss_sisnr.fuss_over_separated_metric(metric_inputs) == float(expected["over"])
    if expected["pairs"]:
        assert float(fuss_sisnr.fuss_sisnr_metric(metric_inputs)) == pytest.approx(expected["sisnr"], abs=1e-4)
        improvement = fuss_sisnr.fuss_sisnri_metric(metric_inputs)
        assert float(improvement) == pytest.approx(expected["sisnri"], abs=1e-4)
        # The items the cells pool: one per scored pair, with their spread.
        assert improvement.count == expected["pairs"]
        assert improvement.variance == pytest.approx(float(np.var(expected["sisnri_pairs"])), rel=1e-4, abs=1e-3)
    return expected


def test_fuss_si_snr_of_a_known_snr():
    reference, noise = signals(2)
    noise *= np.linalg.norm(reference) / np.linalg.norm(noise) * 10 ** (-10 / 20)
    noise -= np.dot(noise, reference) / np.dot(reference, reference) * reference  # orthogonal: SI-SNR exactly 10 dB
    noise *= np.linalg.norm(reference) / np.linalg.norm(noise) * 10 ** (-10 / 20)
    assert fuss_sisnr.si_snr(3 * (reference + noise), reference) == pytest.approx(10.0, abs=1e-6)
    # The eps ceiling, whatever the level: the published code divides each signal by its
    # norm first. (Written as rho = <y, yhat> / (|y| |yhat| + eps), a quiet exact copy
    # would read lower, so near the ceiling we follow the code, not that shorthand.)
    assert fuss_sisnr.si_snr(reference, reference) == pytest.approx(80.0, abs=1e-6)
    assert fuss_sisnr.si_snr(1e-4 * reference, 1e-4 * reference) == pytest.approx(80.0, abs=1e-6)
    assert independent_si_snr(1e-4 * reference, 1e-4 * reference) < 70
    assert fuss_sisnr.si_snr(np.zeros(100), np.ones(100)) == pytest.approx(-80.0, abs=1e-6)  # and floor


def test_fuss_swapped_outputs_are_matched_back():
    r0, r1, n0, n1 = signals(4, seed=2)
    zero = np.zeros_like(r0)
    expected = check_against_independent([r0, r1, zero, zero], [r1 + 0.1 * n1, r0 + 0.05 * n0, zero, zero])
    assert expected["permutation"][:2] == (1, 0) and expected["pairs"] == 2
    assert not expected["under"] and not expected["over"]


def test_fuss_inactive_reference_is_not_scored_and_an_extra_output_is_over_separation():
    r0, r2, n0, n2, extra = signals(5, seed=3)
    zero = np.zeros_like(r0)
    expected = check_against_independent([r0, zero, r2, zero], [r2 + 0.1 * n2, 0.5 * extra, r0 + 0.1 * n0, zero])
    assert expected["pairs"] == 2 and expected["over"]


def test_fuss_estimate_25_db_below_the_quietest_reference_does_not_count():
    r0, r1, n0 = signals(3, seed=4)
    zero = np.zeros_like(r0)
    references = [r0, r1, zero, zero]
    faint = check_against_independent(references, [r0 + 0.1 * n0, r1 * 10 ** (-25 / 20), zero, zero])
    assert faint["pairs"] == 1 and faint["under"]
    # Only the loud pair is scored, though the faint estimate alone would reach +80 dB.
    loud_pair = independent_si_snr(r0, r0 + 0.1 * n0)
    assert float(fuss_sisnr.fuss_sisnr_metric(fuss_inputs(references, [r0 + 0.1 * n0, r1 * 10 ** (-25 / 20), zero, zero]))) == \
        pytest.approx(loud_pair, abs=1e-4)
    within = check_against_independent(references, [r0 + 0.1 * n0, (r1 + 0.01 * n0) * 10 ** (-15 / 20), zero, zero])
    assert within["pairs"] == 2 and not within["under"]


def test_fuss_under_separated_output_merges_two_sources():
    r0, r1, r2, noise = signals(4, seed=5)
    zero = np.zeros_like(r0)
    expected = check_against_independent([r0, r1, r2, zero], [r0 + r1, r2 + 0.01 * noise, zero, zero])
    assert expected["under"] and expected["pairs"] == 2


def test_fuss_fewer_outputs_than_references_are_padded_with_silence():
    r0, r1, n0 = signals(3, seed=6)
    zero = np.zeros_like(r0)
    references = np.asarray([r0, r1, zero, zero], dtype=np.float32)
    two = np.asarray([r0 + 0.1 * n0, r1], dtype=np.float32)
    padded = np.concatenate([two, np.zeros((2, len(r0)), dtype=np.float32)])
    assert fuss_sisnr.fuss_sisnr_metric(fuss_inputs(references, two)) == \
        fuss_sisnr.fuss_sisnr_metric(fuss_inputs(references, padded))
    with pytest.raises(MetricUndefined, match="no active reference source"):
        fuss_sisnr.fuss_sisnr_metric(fuss_inputs(np.zeros((4, 100)), np.ones((4, 100))))
