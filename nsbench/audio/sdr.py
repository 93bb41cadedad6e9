"""SI-SDR and plain SNR: the maths the SI-SDR metrics (``metrics/sisdr.py``)
and the output checks (``nsbench.audio.checks``) share, kept in the core so that a
check never imports a plugin module. Definitions and conventions: the metric
module's docstring and docs/metrics.md.
"""
from __future__ import annotations

import numpy as np

from nsbench.audio.blocks import float64_blocks
from nsbench.plugins.records import Features

# Scores are clamped to [-CLAMP_DB, CLAMP_DB]. A silent reference, or an estimate
# with no component along the reference, gets the floor, never the ceiling.
CLAMP_DB = 120.0

def _ratio_db(signal_energy: float, error_energy: float) -> float:
    """10 log10(signal / error) clamped; no signal is the floor, no error the ceiling."""
    if signal_energy <= 0.0:
        return -CLAMP_DB
    if error_energy <= 0.0:
        return CLAMP_DB
    return float(np.clip(10.0 * np.log10(signal_energy / error_energy), -CLAMP_DB, CLAMP_DB))


def _as_pair(estimate: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat views (no float64 copies: the sums below widen a block at a time)."""
    est = np.asarray(estimate).ravel()
    ref = np.asarray(reference).ravel()
    if est.shape != ref.shape:
        raise ValueError(f"estimate has {est.size} samples, reference {ref.size}")
    return est, ref


def _check_finite(*energies: float) -> None:
    # A NaN or inf sample makes its energy non-finite; cheaper than scanning the arrays.
    if not all(np.isfinite(energies)):
        raise ValueError("estimate or reference has non-finite samples")


def _mean(samples: np.ndarray) -> float:
    """The float64 mean, a block at a time (np.mean's own value for one block)."""
    return sum((float(block.sum()) for (block,) in float64_blocks(samples)), 0.0) / samples.size


def si_sdr(estimate: np.ndarray, reference: np.ndarray, *, zero_mean: bool = False,
           reference_side: Features | None = None) -> float:
    """Scale-invariant SDR in dB (Le Roux et al. 2019, eq. 1-2), computed in float64.

    ``zero_mean=True`` subtracts each signal's mean first (textbook, asteroid);
    the default does not (torchmetrics ``zero_mean=False``, earthspecies/biodenoising).
    Clamped to [-120, 120]. A silent reference, a silent estimate, or an estimate
    orthogonal to the reference scores -120 (silence is not perfect
    reconstruction); an estimate equal to the reference up to a positive or
    negative gain scores +120.

    The sums run over float64 blocks of the signals (nsbench.audio.blocks), so an
    hour costs no more memory than a minute; a clip of up to a block is summed
    exactly as a whole.

    ``reference_side``: ``reference_energy(reference, zero_mean)``, where the
    caller shares it across engines; else computed here (the same sums).
    """
    est, ref = _as_pair(estimate, reference)
    if reference_side is None:
        reference_side = reference_energy(ref, zero_mean)
    ref_mean, ref_energy = reference_side["mean"], reference_side["energy"]
    est_mean = _mean(est) if zero_mean and est.size else 0.0
    est_energy = cross = 0.0
    for e, r in float64_blocks(est, ref):
        if zero_mean:
            e, r = e - est_mean, r - ref_mean
        est_energy += float(np.dot(e, e))
        cross += float(np.dot(e, r))
    _check_finite(ref_energy, est_energy)
    if ref_energy == 0.0:
        return -CLAMP_DB
    alpha = cross / ref_energy
    noise_energy = 0.0
    for e, r in float64_blocks(est, ref):
        if zero_mean:
            e, r = e - est_mean, r - ref_mean
        noise = e - alpha * r
        noise_energy += float(np.dot(noise, noise))
    # |target|^2 = alpha^2 |ref|^2, without building the target array.
    return _ratio_db(alpha * alpha * ref_energy, noise_energy)


def reference_energy(reference: np.ndarray, zero_mean: bool) -> Features:
    """The reference's side of ``si_sdr``: its mean (0 without mean removal) and
    its energy, summed over the same float64 blocks."""
    ref = np.asarray(reference).ravel()
    ref_mean = _mean(ref) if zero_mean and ref.size else 0.0
    energy = 0.0
    for (r,) in float64_blocks(ref):
        if zero_mean:
            r = r - ref_mean
        energy += float(np.dot(r, r))
    return {"mean": ref_mean, "energy": energy}


def snr(estimate: np.ndarray, reference: np.ndarray) -> float:
    """Plain SNR in dB: 10 log10(|ref|^2 / |ref - est|^2), computed in float64.

    No scale invariance: a gain change counts as error. Same formula as the Music
    Demixing challenge's per-stem SDR (Solovyev et al. 2023), with no epsilon.
    Clamped to [-120, 120]; a silent reference scores -120, an identical
    estimate +120, a silent estimate 0. Summed over float64 blocks, as si_sdr.
    """
    est, ref = _as_pair(estimate, reference)
    ref_energy = error_energy = 0.0
    for e, r in float64_blocks(est, ref):
        error = r - e
        ref_energy += float(np.dot(r, r))
        error_energy += float(np.dot(error, error))
    _check_finite(ref_energy, error_energy)
    return _ratio_db(ref_energy, error_energy)
