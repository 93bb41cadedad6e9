"""The classic intrusive measures of Loizou's *Speech Enhancement: Theory and
Practice* (2nd ed., ch. 11), as the Python ports the papers' numbers come
from compute them, vectorised over frames.

Two ports, each followed where it is the reference (docs/metrics.md says which
metric follows which):

* CMGAN's ``src/tools/compute_metrics.py`` (ruizhecao96/CMGAN), the port of
  Loizou's ``composite.m`` that SEGAN, MetricGAN+ and CMGAN circulate: the
  segmental SNR, the log-likelihood ratio and the weighted-slope spectral
  distance behind CSIG, CBAK and COVL (``composite_parts``).
* pysepm's ``qualityMeasures.py`` (schmiph2/pysepm), which CMGAN lacks: the
  frequency-weighted segmental SNR and the cepstral distance
  (``fw_segmental_snr``, ``cepstral_distance``).

Every measure cuts 30 ms frames with a 7.5 ms hop under Loizou's Hann window
``0.5 (1 - cos(2 pi n / (N + 1)))``, n = 1..N. Where the references loop over
frames in Python (or numba), these functions run each step on all frames at
once, in the same order of operations, so the values agree to rounding
(tests/metrics/test_loizou.py holds them to the references' own values).

Input scale matters in one place: CMGAN's ``wss()`` divides its frames by
32768 before it floors the band energies at 1e-10 (-100 dB), i.e. it assumes
int16-scaled samples; fed samples in [-1, 1] its floor sits 90 dB higher and
the measure changes. ``band_energies_db`` divides by 32768 as it does; the caller
chooses the scale (metrics/composite.py's flavours). The other measures are
ratios and do not depend on it, bar the 2.2e-16 guards of the references.
"""
from __future__ import annotations

import functools
import math

import numpy as np

FRAME_MS = 30
HOP_FRACTION = 4  # a hop of a quarter frame, 75 % overlap
MIN_SNR_DB, MAX_SNR_DB = -10.0, 35.0  # the segmental SNRs' clip, per frame
EPS = float(np.spacing(1))  # 2.2e-16, the references' guard (np.spacing(1) = np.finfo(float).eps)
WSS_SCALE = 32768.0  # CMGAN's wss() divides by it: it takes int16-scaled samples
WSS_FLOOR = 1e-10  # band energies floored at -100 dB
KMAX, KLOCMAX = 20.0, 1.0  # Klatt's weights (ICASSP 1982, p. 1280)
TRIM = 0.95  # LLR, WSS and CD keep the lowest 95 % of their frames
CEPSTRUM_CAP = 10.0  # pysepm's cap on a frame's cepstral distance
FW_GAMMA = 0.2  # the frequency weights' exponent in fwSNRseg

# Critical bands (Hz): centres and bandwidths of Loizou's wss.m and fwseg.m.
BAND_CENTRES = np.array([
    50.0, 120.0, 190.0, 260.0, 330.0, 400.0, 470.0, 540.0, 617.372, 703.378, 798.717, 904.128, 1020.38,
    1148.30, 1288.72, 1442.54, 1610.70, 1794.16, 1993.93, 2211.08, 2446.71, 2701.97, 2978.04, 3276.17, 3597.63])
BAND_WIDTHS = np.array([
    70.0, 70.0, 70.0, 70.0, 70.0, 70.0, 70.0, 77.3724, 86.0056, 95.3398, 105.411, 116.256, 127.914, 140.423,
    153.823, 168.154, 183.457, 199.776, 217.153, 235.631, 255.255, 276.072, 298.126, 321.465, 346.136])


# ----------------------------------------------------------------- frames


def frame_length(rate: int) -> int:
    return int(np.round(FRAME_MS * rate / 1000))  # as the references write it


def hop_length(rate: int) -> int:
    return frame_length(rate) // HOP_FRACTION


def loizou_window(length: int) -> np.ndarray:
    return 0.5 * (1 - np.cos(2 * math.pi * np.arange(1, length + 1) / (length + 1)))


def frame_count(samples: int, rate: int) -> int:
    """Frames of wss(), snr() and pysepm's measures: ``int(L / hop - N / hop)``."""
    return max(int(samples / hop_length(rate) - frame_length(rate) / hop_length(rate)), 0)


def llr_frame_count(samples: int, rate: int) -> int:
    """Frames of CMGAN's llr(): ``int((L - N) / hop)``, the same count but for rounding."""
    return max(int((samples - frame_length(rate)) / hop_length(rate)), 0)


def windowed_frames(signal: np.ndarray, rate: int, count: int) -> np.ndarray:
    """(count, N) float64: the frames starting every hop from sample 0, windowed."""
    length, hop = frame_length(rate), hop_length(rate)
    signal = np.ascontiguousarray(signal, dtype=np.float64)
    view = np.lib.stride_tricks.as_strided(signal, (count, length), (hop * signal.strides[0], signal.strides[0]), writeable=False)
    return view * loizou_window(length)


def trimmed_mean(values: np.ndarray, keep: float = TRIM) -> float:
    """The mean of the lowest ``round(n * keep)`` values, as ``composite.m``.

    A frame with no value (NaN: digital silence leaves no LPC model) sorts
    last, as np.sort puts NaN, so the trim drops it first: the references'
    result wherever it has one. Where such frames outnumber the trimmed
    share, the references return NaN; here the mean is over the frames that
    have a value (and NaN only when none has)."""
    kept = round(values.size * keep)  # Python's round, as the references'
    finite = np.sort(values[np.isfinite(values)])
    return float(np.mean(finite[:kept])) if finite.size else math.nan


# ----------------------------------------------------------------- segmental SNR (CMGAN's snr())


def segmental_snr(clean_frames: np.ndarray, processed_frames: np.ndarray) -> float:
    """Mean over frames of ``10 log10(E_s / (E_n + eps) + eps)``, each frame
    clipped to [-10, 35] dB; NaN without a frame."""
    if not len(clean_frames):
        return math.nan
    error = clean_frames - processed_frames
    signal, noise = np.einsum("ij,ij->i", clean_frames, clean_frames), np.einsum("ij,ij->i", error, error)
    frames = 10 * np.log10(signal / (noise + EPS) + EPS)
    return float(np.mean(np.clip(frames, MIN_SNR_DB, MAX_SNR_DB)))


# ----------------------------------------------------------------- LPC, LLR and cepstral distance


def lpc_order(rate: int) -> int:
    return 10 if rate < 10000 else 16


def autocorrelation(frames: np.ndarray, order: int) -> np.ndarray:
    """(frames, order + 1): ``R[k] = sum x[n] x[n + k]`` per frame."""
    length = frames.shape[1]
    return np.stack([np.einsum("ij,ij->i", frames[:, : length - k], frames[:, k:]) for k in range(order + 1)], axis=1)


@functools.lru_cache(maxsize=8)
def lag_cosines(n_fft: int, order: int) -> np.ndarray:
    """(n_fft / 2 + 1, order + 1): the inverse real DFT's first lags, so that
    ``power @ lag_cosines`` is the autocorrelation of a frame whose zero-padded
    power spectrum (n_fft >= twice the frame) is ``power``."""
    bins = np.arange(n_fft // 2 + 1)
    weights = np.where((bins == 0) | (bins == n_fft // 2), 1.0, 2.0) / n_fft
    cosines = weights[:, None] * np.cos(2 * np.pi * np.outer(bins, np.arange(order + 1)) / n_fft)
    cosines.flags.writeable = False
    return cosines


def levinson(lags: np.ndarray, order: int) -> np.ndarray:
    """(frames, order + 1) prediction polynomials ``[1, -a]`` from the lags by
    Levinson-Durbin, step for step as ``lpcoeff`` (CMGAN, pysepm) on each
    frame; a frame without power gives NaN (0 / 0), as there."""
    frames = lags.shape[0]
    a = np.ones((frames, order))
    error = lags[:, 0].copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(order):
            past = a[:, :i].copy()
            sum_term = np.einsum("ij,ij->i", past, lags[:, i:0:-1])
            reflection = (lags[:, i + 1] - sum_term) / error
            a[:, i] = reflection
            if i:
                a[:, :i] = past - past[:, ::-1] * reflection[:, None]
            error = (1 - reflection * reflection) * error
    return np.concatenate([np.ones((frames, 1)), -a], axis=1)


def toeplitz_forms(polynomials: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """Per frame, ``A toeplitz(R) A^T``."""
    size = lags.shape[1]
    index = np.abs(np.arange(size)[:, None] - np.arange(size)[None, :])
    return np.einsum("fi,fij,fj->f", polynomials, lags[:, index], polynomials)


def llr_frames(clean_lags: np.ndarray, processed_lags: np.ndarray, order: int) -> np.ndarray:
    """Per frame, ``log(A_p R_c A_p^T / A_c R_c A_c^T)`` (CMGAN's llr()) from the
    frames' lags: NaN where either frame is digital silence (no LPC model; the
    references too)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = toeplitz_forms(levinson(processed_lags, order), clean_lags) / toeplitz_forms(levinson(clean_lags, order), clean_lags)
        return np.where(ratio > 0, np.log(np.where(ratio > 0, ratio, 1.0)), math.nan)


def cepstra(polynomials: np.ndarray) -> np.ndarray:
    """LPC cepstra of prediction polynomials (pysepm's lpc2cep, Loizou's)."""
    size = polynomials.shape[1]
    cepstrum = np.zeros((polynomials.shape[0], size - 1))
    cepstrum[:, 0] = -polynomials[:, 1]
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(2, size):
            terms = cepstrum[:, : k - 1] * polynomials[:, k - 1 : 0 : -1] * np.arange(1, k)
            cepstrum[:, k - 1] = -(polynomials[:, k] + np.sum(terms, axis=1) / k)
    return cepstrum


def cepstral_distance(clean: np.ndarray, processed: np.ndarray, rate: int) -> float:
    """pysepm's ``cepstrum_distance``: per frame ``10 sqrt(2) / ln 10 * |c_c - c_p|``
    capped at 10 (a frame without a model scores the cap), 95 % trimmed mean."""
    count, order = frame_count(len(clean), rate), lpc_order(rate)
    if count < 1:
        return math.nan
    clean_cepstra, processed_cepstra = (
        cepstra(levinson(autocorrelation(windowed_frames(x, rate, count), order), order)) for x in (clean, processed))
    with np.errstate(invalid="ignore", over="ignore"):
        distance = 10 * math.sqrt(2) / math.log(10) * np.linalg.norm(clean_cepstra - processed_cepstra, axis=1)
    return trimmed_mean(np.where(distance < CEPSTRUM_CAP, distance, CEPSTRUM_CAP))


# ----------------------------------------------------------------- weighted spectral slope (CMGAN's wss())


def fft_size(rate: int) -> int:
    return int(2 ** math.ceil(math.log2(2 * frame_length(rate))))


@functools.lru_cache(maxsize=8)
def band_filters(rate: int) -> np.ndarray:
    """(25, bins) Gaussian critical-band filters, zeroed below -30 dB, over
    the FFT bins up to the last any filter reaches (n_fft / 2 bins in the
    references; the rest are zeros for every band)."""
    half = fft_size(rate) // 2
    top = rate / 2
    centres, widths = BAND_CENTRES / top * half, BAND_WIDTHS / top * half
    bins = np.arange(half)
    gains = np.log(BAND_WIDTHS[0]) - np.log(BAND_WIDTHS)
    filters = np.exp(-11 * np.square((bins[None, :] - np.floor(centres)[:, None]) / widths[:, None]) + gains[:, None])
    filters = np.where(filters > math.exp(-30.0 / (2.0 * 2.303)), filters, 0.0)
    used = int(np.nonzero(np.any(filters > 0, axis=0))[0][-1]) + 1
    filters = np.ascontiguousarray(filters[:, :used].T)  # (bins, 25): the power spectra multiply it
    filters.flags.writeable = False
    return filters


def power_spectra(frames: np.ndarray, rate: int) -> np.ndarray:
    """(frames, n_fft / 2 + 1) |FFT|^2 of the frames zero-padded to n_fft."""
    spectrum = np.fft.rfft(frames, fft_size(rate), axis=1)
    return (spectrum * spectrum.conj()).real  # re^2 + im^2, in one pass


def band_energies_db(power: np.ndarray, rate: int) -> np.ndarray:
    """(frames, 25) critical-band energies in dB of int16-scaled frames, as
    wss(): their power spectra divided by 32768^2 (the same bits as dividing
    the samples by 32768) through the band filters, floored at -100 dB."""
    filters = band_filters(rate)
    return 10 * np.log10(np.maximum((power[:, : filters.shape[0]] / (WSS_SCALE * WSS_SCALE)) @ filters, WSS_FLOOR))


def nearest_peaks(energy: np.ndarray) -> np.ndarray:
    """Per band below the top one, the energy of the nearest peak as wss()
    finds it: right of a rising slope, left of a falling one (the loops'
    indices kept exactly, ``energy[n - 1]`` and ``energy[n + 1]``)."""
    slope = np.diff(energy, axis=1)
    bands = slope.shape[1]
    index = np.arange(bands)
    # First n >= i with a slope <= 0 (else bands), and last n <= i with one > 0 (else -1).
    stop_right = np.minimum.accumulate(np.where(slope <= 0, index, bands)[:, ::-1], axis=1)[:, ::-1]
    stop_left = np.maximum.accumulate(np.where(slope > 0, index, -1), axis=1)
    right = np.take_along_axis(energy, stop_right - 1, axis=1)
    left = np.take_along_axis(energy, stop_left + 1, axis=1)
    return np.where(slope > 0, right, left)


def slope_weights(energy: np.ndarray) -> np.ndarray:
    """Klatt's weights per band: near the frame's loudest band and near a peak."""
    below = energy[:, :-1]
    overall = KMAX / (KMAX + np.max(energy, axis=1, keepdims=True) - below)
    local = KLOCMAX / (KLOCMAX + nearest_peaks(energy) - below)
    return overall * local


def wss_frames(clean_db: np.ndarray, processed_db: np.ndarray) -> np.ndarray:
    """Per frame, the weighted squared difference of the band-energy slopes
    over the weights' sum (CMGAN's wss())."""
    weights = (slope_weights(clean_db) + slope_weights(processed_db)) / 2.0
    difference = np.diff(clean_db, axis=1) - np.diff(processed_db, axis=1)
    return np.sum(weights * np.square(difference), axis=1) / np.sum(weights, axis=1)


def composite_parts(clean: np.ndarray, processed: np.ndarray, rate: int) -> dict[str, float]:
    """What Loizou's composite.m takes besides PESQ, as CMGAN's script computes
    it: segSNR, the trimmed LLR and the trimmed WSS, from one set of frames
    and one FFT per signal (``frames``: their count, 0 for a clip too short).

    The LPC lags come from the WSS power spectra (``lag_cosines``) rather
    than the references' sums over samples: the same numbers to ~1e-12 of
    the largest lag, an eighth of the work."""
    count, llr_count, order = frame_count(len(clean), rate), llr_frame_count(len(clean), rate), lpc_order(rate)
    frames = [windowed_frames(x, rate, max(count, llr_count)) for x in (clean, processed)]
    power = [power_spectra(x, rate) for x in frames]
    lags = [x[:llr_count] @ lag_cosines(fft_size(rate), order) for x in power]
    return {
        "frames": count,
        "ssnr": segmental_snr(frames[0][:count], frames[1][:count]),
        "llr": trimmed_mean(llr_frames(lags[0], lags[1], order)),
        "wss": trimmed_mean(wss_frames(band_energies_db(power[0][:count], rate), band_energies_db(power[1][:count], rate))),
    }


# ----------------------------------------------------------------- frequency-weighted segmental SNR (pysepm's fwSNRseg)


def normalised_spectra(signal: np.ndarray, rate: int, count: int) -> np.ndarray:
    """(frames, n_fft / 2) magnitude spectra, each summing to 1, of the signal
    plus 2.2e-16 (pysepm adds it, so a silent frame still has a spectrum)."""
    half = fft_size(rate) // 2
    magnitude = np.abs(np.fft.rfft(windowed_frames(np.asarray(signal, np.float64) + EPS, rate, count), fft_size(rate), axis=1)[:, :half])
    return magnitude / np.sum(magnitude, axis=1, keepdims=True)


def fw_segmental_snr(clean: np.ndarray, processed: np.ndarray, rate: int) -> float:
    """pysepm's ``fwSNRseg``: per frame, band SNRs of the normalised magnitude
    spectra weighted by the clean band energy to the power 0.2, clipped to
    [-10, 35] dB; the mean over frames."""
    count = frame_count(len(clean), rate)
    if count < 1:
        return math.nan
    filters = band_filters(rate)
    clean_energy = normalised_spectra(clean, rate, count)[:, : filters.shape[0]] @ filters
    processed_energy = normalised_spectra(processed, rate, count)[:, : filters.shape[0]] @ filters
    error = np.maximum(np.square(clean_energy - processed_energy), EPS)
    weights = np.power(clean_energy, FW_GAMMA)
    with np.errstate(divide="ignore"):
        band_snr = 10 * np.log10(np.square(clean_energy) / error)
    frames = np.sum(weights * band_snr, axis=1) / np.sum(weights, axis=1)
    return float(np.mean(np.clip(frames, MIN_SNR_DB, MAX_SNR_DB)))
