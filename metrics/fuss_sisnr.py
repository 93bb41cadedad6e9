"""Permutation-invariant SI-SNR as the FUSS / DCASE 2020 task 4 evaluation scores it.

Wisdom et al., "What's all the FUSS about free universal sound separation
data?", ICASSP 2021; google-research/sound-separation
``models/dcase2020_fuss_baseline/evaluate_lib.py`` and ``train/metrics.py``:

* SI-SNR (``signal_to_noise_ratio_gain_invariant``): each signal is divided by
  its norm (floored at 1e-8), ``rho`` is the cosine of the two,
  ``SI-SNR = 10 log10((rho^2 + eps) / (1 - rho^2 + eps))`` with eps = 1e-8, so
  it lies in about [-80, +80] dB. Where ``1 - rho^2 < 0.01`` the residual power
  is computed directly, ``|y/|y| - rho yhat/|yhat||^2``, as the published code
  does for accuracy. Computed here in float64.
* Estimates are matched to references by the permutation maximising the total
  SI-SNR over all slots (ties: the first in ``itertools.permutations`` order,
  as the published argmin).
* A reference is active when its RMS > 1e-8. An estimate is active when its
  power (mean square) > 0.01 x the power of the quietest active reference
  (within 20 dB of it). Only (reference, matched estimate) pairs where both are
  active are scored.
* SI-SNRi = SI-SNR(estimate) - SI-SNR(mixture as the estimate), per pair, the
  mixture being the sum of the references.
* Under-separation: fewer active estimates than active references; over: more.

Aggregation, as the published script reports it: per clip, the scored pairs
are the items of a PooledValue (their mean, count and variance), and
``fuss_sisnr`` and ``fuss_sisnri`` declare ``Pooling("pairs")``, so a cell's
``mean`` and ``std`` are over every scored pair of its clips, pooled by the
number of active references: ``evaluate_lib.py`` lines 186-189 extend one list
per source count with the scored pairs of each example, and lines 96-105
(``_report_score_stats``) print ``np.mean`` and ``np.std`` (population, ddof 0)
of the list, or of the lists of counts 2, 3 and 4 joined (the "2-4" row, lines
234-235; line numbers at google-research/sound-separation commit 678e737).
``clip_mean`` beside it is the mean of per-clip means, which equals the pooled
mean only where every clip scores the same number of pairs. The under- and
over-separation rates are per example (lines 183-185, 236-238): plain
per-clip metrics.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from nsbench import SEPARATION, MetricInputs, MetricSpec, MetricUndefined, PooledValue, Pooling, hookimpl

EPS = 1e-8  # train/metrics.py: epsilon of the SNR ratio
NORM_FLOOR = 1e-16  # train/metrics.py: the squared norm is floored here before dividing
DIRECT_BELOW = 0.01  # train/metrics.py: below this 1 - rho^2 is recomputed directly
ACTIVE_REF_RMS = 1e-8  # evaluate_lib._weights_for_nonzero_refs
ACTIVE_SEP_RATIO = 0.01  # evaluate_lib._weights_for_active_seps: 20 dB below the quietest active reference
# Beyond this many slots, itertools.permutations gets slow; the Hungarian
# algorithm finds the same maximum (ties may then resolve differently).
MAX_SLOTS_FOR_PERMUTATIONS = 7

NO_REFERENCE = "no active reference source"
NO_PAIR = "no active estimate matched to an active reference"


def si_snr(estimate: np.ndarray, reference: np.ndarray) -> float:
    """FUSS SI-SNR in dB of one estimate against one reference (see module docstring)."""
    est = np.asarray(estimate, dtype=np.float64).ravel()
    ref = np.asarray(reference, dtype=np.float64).ravel()
    unit_est = est / np.sqrt(max(float(np.dot(est, est)), NORM_FLOOR))
    unit_ref = ref / np.sqrt(max(float(np.dot(ref, ref)), NORM_FLOOR))
    rho = float(np.dot(unit_est, unit_ref))
    signal = rho * rho
    noise = 1.0 - signal
    if noise < DIRECT_BELOW:
        residual = unit_est - rho * unit_ref
        noise = float(np.dot(residual, residual))
    return float(10.0 * np.log10((signal + EPS) / (noise + EPS)))


@dataclass(frozen=True)
class FussScores:
    """One clip's outcome. Arrays are per reference slot, estimates already matched."""

    sisnr: np.ndarray
    sisnr_mixture: np.ndarray
    active_refs: np.ndarray
    active_estimates: np.ndarray
    permutation: tuple[int, ...]  # permutation[j]: the estimate matched to reference j

    @property
    def pairs(self) -> np.ndarray:
        return self.active_refs & self.active_estimates

    @property
    def under_separated(self) -> bool:
        return int(self.active_estimates.sum()) < int(self.active_refs.sum())

    @property
    def over_separated(self) -> bool:
        return int(self.active_estimates.sum()) > int(self.active_refs.sum())


def _padded(rows: np.ndarray, count: int) -> np.ndarray:
    extra = np.zeros((count - rows.shape[0], rows.shape[1]), dtype=np.float64)
    return np.concatenate([rows.astype(np.float64), extra])


def best_permutation(scores: np.ndarray) -> tuple[int, ...]:
    """``scores[i, j]``: SI-SNR of estimate i against reference j. Returns p with
    p[j] the estimate for reference j, maximising the total."""
    slots = scores.shape[0]
    if slots > MAX_SLOTS_FOR_PERMUTATIONS:
        # scipy.optimize costs ~0.5 s to import: only where a FUSS clip is scored,
        # not on every start-up (all metric modules load to register)
        from scipy.optimize import linear_sum_assignment

        estimates, references = linear_sum_assignment(scores, maximize=True)
        return tuple(int(i) for i in estimates[np.argsort(references)])
    columns = np.arange(slots)
    best, best_total = None, -np.inf
    for permutation in itertools.permutations(range(slots)):
        total = float(scores[list(permutation), columns].sum())
        if total > best_total:  # strict: the first maximum wins, as argmin in the published code
            best, best_total = permutation, total
    return tuple(best)


def fuss_scores(references: np.ndarray, estimates: np.ndarray, mixture: np.ndarray | None = None) -> FussScores:
    """Match ``estimates`` (E, n) to ``references`` (S, n) and score them as the
    FUSS evaluation does. The smaller set is padded with silent rows (FUSS pads
    references to 4); ``mixture`` defaults to the sum of the references."""
    references = np.atleast_2d(np.asarray(references, dtype=np.float64))
    estimates = np.atleast_2d(np.asarray(estimates, dtype=np.float64))
    if references.shape[1] != estimates.shape[1]:
        raise ValueError(f"estimates have {estimates.shape[1]} samples, references {references.shape[1]}")
    if not (np.all(np.isfinite(references)) and np.all(np.isfinite(estimates))):
        raise ValueError("estimates or references have non-finite samples")
    mix = references.sum(axis=0) if mixture is None else np.asarray(mixture, dtype=np.float64)
    slots = max(len(references), len(estimates))
    references, estimates = _padded(references, slots), _padded(estimates, slots)
    matrix = np.array([[si_snr(est, ref) for ref in references] for est in estimates])
    permutation = best_permutation(matrix)
    matched = estimates[list(permutation)]
    ref_power = np.mean(references**2, axis=1)
    active_refs = np.sqrt(ref_power) > ACTIVE_REF_RMS
    if not active_refs.any():
        raise MetricUndefined(NO_REFERENCE)
    active_estimates = np.mean(matched**2, axis=1) > ACTIVE_SEP_RATIO * ref_power[active_refs].min()
    return FussScores(
        sisnr=matrix[list(permutation), np.arange(slots)],
        sisnr_mixture=np.array([si_snr(mix, ref) for ref in references]),
        active_refs=active_refs,
        active_estimates=active_estimates,
        permutation=permutation,
    )


def _clip_scores(inputs: MetricInputs) -> FussScores:
    if inputs.reference_sources is None or inputs.output_sources is None:
        raise MetricUndefined("not a separation clip")
    return fuss_scores(inputs.reference_sources, inputs.output_sources, inputs.noisy)


def _scored_pairs(values: np.ndarray, scores: FussScores) -> PooledValue:
    """The clip's scored pairs as the items the cells pool (see the module docstring)."""
    if not scores.pairs.any():
        raise MetricUndefined(NO_PAIR)
    scored = values[scores.pairs]
    return PooledValue(mean=float(scored.mean()), count=int(scored.size), variance=float(scored.var()))


def fuss_sisnr_metric(inputs: MetricInputs) -> PooledValue:
    scores = _clip_scores(inputs)
    return _scored_pairs(scores.sisnr, scores)


def fuss_sisnri_metric(inputs: MetricInputs) -> PooledValue:
    scores = _clip_scores(inputs)
    return _scored_pairs(scores.sisnr - scores.sisnr_mixture, scores)


def fuss_scored_pairs_metric(inputs: MetricInputs) -> float:
    return float(_clip_scores(inputs).pairs.sum())


def fuss_under_separated_metric(inputs: MetricInputs) -> float:
    return float(_clip_scores(inputs).under_separated)


def fuss_over_separated_metric(inputs: MetricInputs) -> float:
    return float(_clip_scores(inputs).over_separated)


PERMUTED_SCALE_BLIND = (
    "level and the order of the outputs (best permutation); estimates more than 20 dB below "
    "the quietest active reference are not scored, only counted for under-separation"
)
# evaluate_lib.py pools the scored pairs of a source count (lines 186-189) and
# reports their mean and std (lines 96-105).
PAIRS = Pooling(items="pairs", description="pooled over scored pairs, as evaluate_lib.py")


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    common = dict(needs_voice=False, tasks=(SEPARATION,))
    register(MetricSpec(
        name="fuss_sisnr",
        func=fuss_sisnr_metric,
        unit="dB",
        higher_is_better=True,
        description=(
            "FUSS permutation-invariant SI-SNR (Wisdom et al. 2021, evaluate_lib.py): mean over "
            "pairs where the reference (RMS > 1e-8) and its matched estimate (power > 0.01 x the "
            "quietest active reference) are active; eps 1e-8, range about +-80 dB. The FUSS "
            "figure for 1-source mixtures; cell mean and std pooled over scored pairs, as evaluate_lib.py"
        ),
        ignores=PERMUTED_SCALE_BLIND,
        pooling=PAIRS,
        **common,
    ))
    register(MetricSpec(
        name="fuss_sisnri",
        func=fuss_sisnri_metric,
        unit="dB",
        higher_is_better=True,
        description=(
            "FUSS SI-SNR improvement: per scored pair SI-SNR(estimate) - SI-SNR(mixture), mixture = "
            "sum of the references; the FUSS figure for 2, 3 and 4-source mixtures; cell mean and std "
            "pooled over scored pairs, as evaluate_lib.py"
        ),
        ignores=PERMUTED_SCALE_BLIND + "; how separable the mixture already was",
        pooling=PAIRS,
        **common,
    ))
    register(MetricSpec(
        name="fuss_scored_pairs",
        func=fuss_scored_pairs_metric,
        unit="pairs",
        higher_is_better=True,
        description="number of (active reference, active estimate) pairs scored on the clip",
        ignores="the quality of the pairs",
        **common,
    ))
    register(MetricSpec(
        name="fuss_under_separated",
        func=fuss_under_separated_metric,
        unit="rate",
        higher_is_better=False,
        description="1 when fewer estimates are active than references, else 0; the cell mean is the FUSS under-separation rate",
        ignores="separation quality; which sources were merged",
        **common,
    ))
    register(MetricSpec(
        name="fuss_over_separated",
        func=fuss_over_separated_metric,
        unit="rate",
        higher_is_better=False,
        description="1 when more estimates are active than references, else 0; the cell mean is the FUSS over-separation rate",
        ignores="separation quality; what the extra outputs contain",
        **common,
    ))
