"""STOI and ESTOI as pystoi computes them, without importing pystoi.

STOI: Taal, Hendriks, Heusdens and Jensen, "An Algorithm for Intelligibility
Prediction of Time-Frequency Weighted Noisy Speech", IEEE TASLP 2011.
ESTOI: Jensen and Taal, "An Algorithm for Predicting the Intelligibility of
Speech Masked by Modulated Noise Maskers", IEEE TASLP 2016.

Both are ``pystoi.stoi(clean, processed, fs, extended=False|True)``: it resamples
to 10 kHz, drops frames more than 40 dB below the loudest, and needs at least
30 frames (384 ms) of what remains. Below that it warns and returns 1e-5; that
sentinel is a failure with a reason here, never a score.

``stoi`` below runs pystoi's own steps (its resampler, silent-frame removal,
STFT and constants), written here as whole-array operations with the same bits
as pystoi's loops. pystoi is never imported while scoring: its import pulls in
scipy.signal, 1.0-1.4 s of CPU, more than a short run's scoring (its resampler
is in octave_resample.py; tests/metrics/test_intelligibility.py holds every constant and step
to pystoi's). pystoi itself is not reproducible bit for bit, so two steps
change, to make the score a function of the two signals alone:

* ESTOI's ``row_col_normalize`` adds ``EPS * np.random.standard_normal`` noise
  from numpy's *global* generator, which fresh processes seed from the OS and
  every other draw advances: the last digits change between runs and worker
  processes, and a whole 1e-3 where the output has digital silence (the noise
  is then all a band row holds). Here the noise comes from a private
  ``RandomState(0)``, the stream pystoi draws after ``np.random.seed(0)``.
* Both apply the 1/3-octave band matrix with ``np.matmul``, i.e. OpenBLAS
  dgemm, whose summation order over FFT bins changes with the number of BLAS
  threads (and with the CPU's kernel). Here each band is summed bin by bin in
  increasing order, with no BLAS.

So the score depends on the two signals alone, not on the arrays' memory
alignment, the process, the BLAS threads or the caller's random state. It
matches ``pystoi.stoi`` after ``np.random.seed(0)`` to 1e-15 or so, with one
exception: ESTOI where the output falls to digital silence within a segment.
There a band row is one value and zeros, its normalised column is nearly
constant, and one last bit in a band energy moves the score by up to ~1e-5;
pystoi's own score there moves by as much between one and two BLAS threads,
and by ~1e-3 between random states.

pystoi holds the whole clip's complex STFT and (ESTOI) all its 30-frame
segments at once: ~40x the float32 audio, 8-10 GB for an hour at 16 kHz. Clips
over ``WHOLE_CLIP_SAMPLES`` at 10 kHz (~105 s) therefore go block by block
(``_blockwise_steps``): the same frames, band energies, segments and ESTOI
noise, so the same score but for the order of the final sum (~1e-16). Only the
two 10 kHz float64 signals (2.5x the 16 kHz float32 audio) and their band
energies (~0.3x) are held whole; resampling one signal peaks at ~4.5x, and a
block adds ~100 MB whatever the length. Shorter clips take the steps above,
bit for bit as before.
"""
from __future__ import annotations

import functools
import warnings
from importlib import metadata
from typing import Callable

import numpy as np

from nsbench.adapters import Features, non_finite
from nsbench.builtin.metrics.octave_resample import resample_oct
from nsbench import MetricInputs, MetricSpec, MetricUndefined, ReferenceAudio, hookimpl
from nsbench import Column

PYSTOI_VERSION = "0.4.1"  # the version whose steps these are, and the tests compare against

TOO_FEW_FRAMES = (
    "fewer than 30 frames (384 ms at 10 kHz) of clean voice left after pystoi "
    "removed silent frames (pystoi warns and returns its 1e-5 sentinel)"
)
# ESTOI normalises each 1/3-octave band row of a 384 ms segment by its spread;
# an output constant over one (a DC offset, say) has none, and pystoi divides by zero.
NOT_A_NUMBER = (
    "pystoi returned NaN: the output does not vary within a 1/3-octave band over a 384 ms "
    "segment (a constant output), and a correlation with a constant is undefined"
)
# pystoi works at 10 kHz on 256-sample frames with a 128-sample hop and needs
# 30 frames after dropping silent ones: a clip of 4096 samples or fewer there
# can never have them (under 257 pystoi raises an AxisError instead of warning).
PYSTOI_RATE = 10000
MAX_TOO_SHORT = 256 + 30 * 128
# pystoi.stoi's constants, here so that scoring never imports pystoi, whose
# import of scipy.signal costs 1.0-1.4 s of CPU (tests/metrics/test_intelligibility.py holds
# them, and the 1/3-octave matrix, to pystoi's own).
FS = PYSTOI_RATE  # its sampling rate
N_FRAME = 256  # window support
NFFT = 512  # FFT size
NUMBAND = 15  # 1/3-octave bands
MINFREQ = 150  # centre frequency of the lowest band (Hz)
N = 30  # frames per intermediate intelligibility segment (384 ms)
BETA = -15.0  # lower SDR bound
DYN_RANGE = 40  # speech dynamic range (dB)
# Clips longer than this at 10 kHz (~105 s) are scored block by block of this many
# 256-sample frames (~52 s), in memory bounded by the block rather than the clip;
# shorter ones exactly as before. See _blockwise_steps.
WHOLE_CLIP_SAMPLES = 2**20
BLOCK_FRAMES = 4096
# ESTOI's noise: this many of RandomState(0)'s normals are kept per process.
NOISE_KEPT = 2**22
_EPS = np.finfo("float").eps  # pystoi.utils.EPS


def third_octave_matrix(fs: int = FS, nfft: int = NFFT, num_bands: int = NUMBAND, min_freq: int = MINFREQ) -> np.ndarray:
    """pystoi.utils.thirdoct's band matrix (bands x FFT bins): band i holds the
    bins from the one nearest its lower edge up to, not including, the one
    nearest its upper edge."""
    f = np.linspace(0, fs, nfft + 1)[: nfft // 2 + 1]
    k = np.arange(num_bands, dtype=float)
    matrix = np.zeros((num_bands, len(f)))
    for band, low, high in zip(matrix, min_freq * np.power(2.0, (2 * k - 1) / 6), min_freq * np.power(2.0, (2 * k + 1) / 6)):
        band[np.argmin(np.square(f - low)): np.argmin(np.square(f - high))] = 1
    return matrix


OBM = third_octave_matrix()


def samples_at_pystoi_rate(length: int, sample_rate: int) -> int:
    """The length pystoi's resample_poly gives: ceil(length * 10000 / rate)."""
    return -(-length * PYSTOI_RATE // sample_rate)


def stoi(clean: np.ndarray, processed: np.ndarray, sample_rate: int, *, extended: bool = False,
         reference: Features | None = None, processed_bands: Callable[[], np.ndarray] | None = None) -> float:
    """STOI (Taal et al. 2011), or ESTOI (Jensen and Taal 2016) with ``extended=True``.

    ``pystoi.stoi(clean, processed, sample_rate, extended=extended)``, made
    reproducible as the module docstring says, on float64 copies of the arrays
    (float32 clips widen exactly, so this matches a caller that read the WAV
    files as float64, as Picovoice's benchmark does).
    ``reference``: ``clean_bands`` of this clean signal and rate, where the
    caller shares it across engines (``MetricInputs.feature``); else computed here.
    ``processed_bands``: gives ``output_bands`` of ``processed`` for that
    reference, where STOI and ESTOI share it; else computed here.
    Raises MetricUndefined where pystoi warns that fewer than 30 frames remain,
    before calling it when the clip is too short to ever have them, and when
    it returns NaN (ESTOI of a constant output); ValueError, saying where,
    when either signal holds NaN or Inf.
    """
    clean, processed = np.asarray(clean), np.asarray(processed)  # widened one at a time below
    _check_finite(clean, processed)
    if samples_at_pystoi_rate(len(clean), sample_rate) <= MAX_TOO_SHORT:
        raise MetricUndefined(
            f"the clip lasts {1000 * len(clean) / sample_rate:.1f} ms; STOI needs more than "
            f"{1000 * MAX_TOO_SHORT / PYSTOI_RATE:.1f} ms (30 frames of pystoi's at 10 kHz)"
        )
    if clean.shape != processed.shape:
        raise ValueError(f"x and y should have the same length, found {clean.shape} and {processed.shape}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score = _pystoi_steps(clean, processed, sample_rate, extended, reference, processed_bands)
    if score is None:
        raise MetricUndefined(TOO_FEW_FRAMES)
    if not np.isfinite(score):  # its divide-by-zero warnings say nothing more
        raise MetricUndefined(NOT_A_NUMBER)
    for warning in caught:  # anything else still reaches the user
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return float(score)


def _check_finite(clean: np.ndarray, processed: np.ndarray) -> None:
    for role, signal in (("clean reference", clean), ("processed signal", processed)):
        bad = non_finite(signal)
        if bad:  # else pystoi's silent-frame removal drops every frame and numpy says "window shape ..."
            raise ValueError(f"the {role} has {bad}: STOI needs finite samples")


def clean_bands(audio: ReferenceAudio) -> Features:
    """The clean side of ``_pystoi_steps``, shared by STOI and ESTOI and by
    every engine: ``kept``, the indices of pystoi's frames that are not silent,
    and ``bands``, the 1/3-octave band envelopes (bands x STFT frames) of the
    clean voice with the silent frames removed ("too_few" instead where fewer
    than 30 STFT frames remain). Empty for long clips, which go block by block.
    """
    x = _at_pystoi_rate(audio.clean, audio.sample_rate)
    if len(x) > WHOLE_CLIP_SAMPLES:
        return {}
    x_frames = _windowed_frames(x)
    energies = 20 * np.log10(np.linalg.norm(x_frames, axis=1) + _EPS)
    kept = np.flatnonzero((np.max(energies) - DYN_RANGE - energies) < 0)
    x_spec = _stft(_overlap_and_add(x_frames[kept]))
    if len(x_spec) < N:
        return {"kept": kept, "too_few": True}
    return {"kept": kept, "bands": _third_octave_bands(x_spec, OBM)}


def _pystoi_steps(x: np.ndarray, y: np.ndarray, fs: int, extended: bool,
                  reference: Features | None = None,
                  y_bands: Callable[[], np.ndarray] | None = None) -> float | None:
    """``pystoi.stoi`` step by step, made reproducible (see the module docstring),
    with its per-frame loops as whole-array operations that give the same bits
    (tests/metrics/test_intelligibility.py compares them with pystoi's own steps).

    None where pystoi would warn about too few frames and return 1e-5.
    """
    if reference is None:
        reference = clean_bands(ReferenceAudio(x, y, fs))
    if not reference:  # a long clip: block by block
        return _blockwise_steps(_at_pystoi_rate(x, fs), _at_pystoi_rate(y, fs), extended, BLOCK_FRAMES)
    if "too_few" in reference:
        return None
    x_segments = _segments(reference["bands"], N)
    y_segments = _segments(y_bands() if y_bands else output_bands(y, fs, reference["kept"]), N)

    if extended:
        return _estoi_sum(x_segments, y_segments, _pystoi_noise(x_segments.shape)) / x_segments.shape[0]
    return _stoi_sum(x_segments, y_segments) / (x_segments.shape[0] * x_segments.shape[1])


def output_bands(y: np.ndarray, fs: int, kept: np.ndarray) -> np.ndarray:
    """The processed side of ``_pystoi_steps``: the output's 1/3-octave band
    envelopes (bands x STFT frames) without the clean voice's silent frames."""
    # float64 as pystoi's caller passes (scipy's upfirdn widens to float64 anyway)
    y_frames = _windowed_frames(_at_pystoi_rate(y, fs))
    return _third_octave_bands(_stft(_overlap_and_add(y_frames[kept])), OBM)


def _windowed_frames(signal: np.ndarray) -> np.ndarray:
    """pystoi's ``w * x[i:i + 256] for i in range(0, len(x) - 256, 128)``, as one array."""
    hop = N_FRAME // 2
    count = len(range(0, len(signal) - N_FRAME, hop))
    frames = np.lib.stride_tricks.sliding_window_view(signal, N_FRAME)[::hop][:count]
    return _hanning() * frames


def _overlap_and_add(frames: np.ndarray) -> np.ndarray:
    """pystoi.utils._overlap_and_add(frames, 128) for its half-overlapping
    frames: chunk j of the signal is frame j's first half plus frame j - 1's
    second half, each added to an exact zero where the other is missing, as
    pystoi's sum over its zero-padded copies does (so even a -0.0 comes out as it does)."""
    hop = N_FRAME // 2
    chunks = np.zeros((len(frames) + 1, hop))
    chunks[:-1] += frames[:, :hop]
    chunks[1:] += frames[:, hop:]
    return chunks.reshape(-1)


def _stft(signal: np.ndarray) -> np.ndarray:
    """pystoi's ``utils.stft(signal, 256, 512, overlap=2)`` (frames x bins): every
    frame's rfft in one call, each row the same 1-D transform as its own call."""
    frames = _windowed_frames(signal)
    return np.fft.rfft(frames, n=NFFT, axis=1) if len(frames) else np.zeros((0, NFFT // 2 + 1), complex)


@functools.lru_cache(maxsize=1)
def _hanning() -> np.ndarray:
    return np.hanning(N_FRAME + 2)[1:-1]  # pystoi's matlab.hanning(256)


def _pystoi_noise(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """ESTOI's four draws of ``shape`` normals, in pystoi's order (x's row and
    column noise, then y's), as drawn after ``np.random.seed(0)``.

    Successive draws from one generator are successive pieces of one stream
    (the legacy normals come in cached pairs, but the state carries the cache),
    so the four draws are the first four ``shape``-sized pieces of
    ``RandomState(0)``'s normals: drawn once per process and sliced, rather
    than ~0.5 million normals drawn per 4-second clip and engine.
    """
    size = int(np.prod(shape))
    stream = _noise_stream(4 * size)
    return tuple(stream[i * size: (i + 1) * size].reshape(shape) for i in range(4))


_stream = np.zeros(0)


def _noise_stream(count: int) -> np.ndarray:
    """The first ``count`` normals of ``RandomState(0)``, kept for the process up
    to ``NOISE_KEPT`` of them (32 MB, a ~30 s clip's ESTOI); longer are drawn anew."""
    global _stream
    if count > len(_stream):
        drawn = np.random.RandomState(0).standard_normal(count)
        if count > NOISE_KEPT:
            return drawn
        _stream = drawn
    return _stream[:count]


def _stoi_sum(x_segments: np.ndarray, y_segments: np.ndarray) -> float:
    """The sum of STOI's correlations over segments x bands (pystoi's STOI lines, unchanged)."""
    normalization_consts = (
        np.linalg.norm(x_segments, axis=2, keepdims=True)
        / (np.linalg.norm(y_segments, axis=2, keepdims=True) + _EPS))
    y_segments_normalized = y_segments * normalization_consts
    clip_value = 10 ** (-BETA / 20)
    y_primes = np.minimum(y_segments_normalized, x_segments * (1 + clip_value))
    y_primes = y_primes - np.mean(y_primes, axis=2, keepdims=True)
    x_segments = x_segments - np.mean(x_segments, axis=2, keepdims=True)
    y_primes /= (np.linalg.norm(y_primes, axis=2, keepdims=True) + _EPS)
    x_segments /= (np.linalg.norm(x_segments, axis=2, keepdims=True) + _EPS)
    correlations_components = y_primes * x_segments
    return np.sum(correlations_components)


def _estoi_sum(x_segments: np.ndarray, y_segments: np.ndarray, noise: tuple) -> float:
    """The sum of ESTOI's per-segment correlations (pystoi's lines).

    ``noise`` holds pystoi's four draws of noise (arrays shaped as the
    segments), in its order: x's row and column noise, then y's.
    """
    x_n = _row_col_normalize(x_segments, noise[0], noise[1])
    y_n = _row_col_normalize(y_segments, noise[2], noise[3])
    return np.sum(x_n * y_n / N)


def _draw_starts(draw_size: int, draws: int = 4) -> tuple:
    """``RandomState(0)`` generators at the start of each of ``draws`` successive
    draws of ``draw_size`` normals: what ``_pystoi_steps`` draws for the whole
    clip at once, drawn a block at a time. The legacy normals come in cached
    pairs, but the state carries the cache, so drawing in pieces gives the same
    stream; skipping to the starts costs (draws - 1) * draw_size normals.
    """
    stream = np.random.RandomState(0)
    starts = []
    for draw in range(draws):
        if draw:
            for left in range(draw_size, 0, -2**20):
                stream.standard_normal(min(left, 2**20))
        start = np.random.RandomState(0)
        start.set_state(stream.get_state())
        starts.append(start)
    return tuple(starts)


def _at_pystoi_rate(signal: np.ndarray, fs: int) -> np.ndarray:
    """``signal`` as float64 at 10 kHz, through pystoi's resampler."""
    signal = np.asarray(signal, dtype=np.float64)
    return resample_oct(signal, FS, fs) if fs != FS else signal


def _blockwise_steps(x: np.ndarray, y: np.ndarray, extended: bool, block_frames: int) -> float | None:
    """``_pystoi_steps`` after resampling, over blocks of ``block_frames`` frames.

    The same frames, band energies and segments as the whole-clip steps:

    * silent frames: the energies of all of pystoi's 256-sample frames (hop 128)
      first, block by block, and the mask against their global maximum;
    * STFT: pystoi's STFT frame m of the overlap-added kept frames spans the
      128-sample chunks m and m + 1, and chunk j is the first half of kept frame
      j plus the second half of kept frame j - 1 (one addition either way). So STFT
      frames [a, b) come from overlap-adding kept frames a - 1 .. b and dropping
      the first, incomplete chunk: the same samples, the same bits. Their 1/3-octave
      band energies (15 x 8 bytes a frame, ~34 MB an hour) are kept whole;
    * segments: blocks of ``block_frames`` band-energy frames overlapping by
      N - 1 = 29, so each 30-frame segment is computed once; the sums of the
      correlations add up over blocks and divide by their count at the end.

    ESTOI's noise is the whole-clip computation's, element for element: four
    generators start where its four draws of the whole clip's noise start
    (``_draw_starts``) and each block takes its segments' share of each. So
    every segment's correlation has the same bits as in the whole-clip steps,
    and the score differs from theirs only by the order of the final sum over
    segments (a few 1e-16, tests/metrics/test_intelligibility.py).
    """
    if block_frames < N:
        raise ValueError(f"block_frames must be at least {N}, got {block_frames}")
    hop = N_FRAME // 2
    window = np.hanning(N_FRAME + 2)[1:-1]
    n_frames = len(range(0, len(x) - N_FRAME, hop))  # pystoi's framing
    x_frames = np.lib.stride_tricks.sliding_window_view(x, N_FRAME)[::hop][:n_frames]
    y_frames = np.lib.stride_tricks.sliding_window_view(y, N_FRAME)[::hop][:n_frames]

    energies = np.empty(n_frames)
    for a in range(0, n_frames, block_frames):
        frames = window * x_frames[a: a + block_frames]
        energies[a: a + len(frames)] = 20 * np.log10(np.linalg.norm(frames, axis=1) + _EPS)
    kept = np.flatnonzero((np.max(energies) - DYN_RANGE - energies) < 0)
    del energies

    n_stft = len(kept) - 1  # pystoi's STFT of the (len(kept) + 1) * 128 overlap-added samples
    if n_stft < N:
        return None
    x_tob = np.empty((len(OBM), n_stft))
    y_tob = np.empty((len(OBM), n_stft))
    for a in range(0, n_stft, block_frames):
        b = min(a + block_frames, n_stft)
        first = max(a - 1, 0)
        rows = kept[first: b + 1]
        for frames, tob in ((x_frames, x_tob), (y_frames, y_tob)):
            chunks = _overlap_and_add(window * frames[rows])[(a - first) * hop:]
            tob[:, a:b] = _third_octave_bands(_stft(chunks), OBM)

    n_segments = n_stft - N + 1
    noise = _draw_starts(n_segments * len(OBM) * N) if extended else ()
    total = 0.0
    for s in range(0, n_segments, block_frames - (N - 1)):
        frames = slice(s, min(s + block_frames, n_stft))  # N - 1 frames shared with the next block
        x_segments = _segments(x_tob[:, frames], N)
        y_segments = _segments(y_tob[:, frames], N)
        if extended:
            draws = tuple(generator.standard_normal(x_segments.shape) for generator in noise)
            total += float(_estoi_sum(x_segments, y_segments, draws))
        else:
            total += float(_stoi_sum(x_segments, y_segments))
    return total / n_segments if extended else total / (n_segments * len(OBM))


def _third_octave_bands(spec: np.ndarray, obm: np.ndarray) -> np.ndarray:
    """``sqrt(OBM @ |spec.T|**2)`` (bands x frames), each band summed bin by bin
    in increasing order: OBM's rows are runs of ones, and a fixed order of
    additions gives the same bits whatever the BLAS, its threads or the CPU.
    """
    power = np.ascontiguousarray(np.square(np.abs(spec)).T)  # bins x frames
    bands = np.zeros((len(obm), power.shape[1]))
    for band, row in zip(bands, obm):
        for k in np.flatnonzero(row):
            band += power[k]
    return np.sqrt(bands)


def _segments(tob: np.ndarray, n: int) -> np.ndarray:
    """pystoi's 384 ms segments: segments x bands x n frames, C-contiguous."""
    windows = np.lib.stride_tricks.sliding_window_view(tob, n, axis=1)  # bands x segments x n
    return np.ascontiguousarray(windows.transpose(1, 0, 2))


def _row_col_normalize(x: np.ndarray, row_noise: np.ndarray, col_noise: np.ndarray) -> np.ndarray:
    """pystoi's ``utils.row_col_normalize`` with ``row_noise`` and ``col_noise``
    for its two draws of ``np.random.standard_normal(x.shape)``.

    Scaling by the reciprocal norms broadcasts instead of multiplying by
    diagonal matrices: each product there is one term plus exact zeros, so the
    values are the same (and NaN in the same cases).
    """
    eps = np.finfo("float").eps
    x = x + eps * row_noise
    x -= np.mean(x, axis=-1, keepdims=True)
    x = x * (1. / np.sqrt(np.sum(np.square(x), axis=-1, keepdims=True)))
    x += eps * col_noise
    x -= np.mean(x, axis=1, keepdims=True)
    return x * (1. / np.sqrt(np.sum(np.square(x), axis=1, keepdims=True)))


def pystoi_version() -> str:
    try:
        return metadata.version("pystoi")
    except metadata.PackageNotFoundError:
        return ""


def stoi_metric(inputs: MetricInputs) -> float:
    return _shared_stoi(inputs, extended=False)


def estoi_metric(inputs: MetricInputs) -> float:
    return _shared_stoi(inputs, extended=True)


def _shared_stoi(inputs: MetricInputs, extended: bool) -> float:
    """The clean side once per clip for every engine, the output's once for STOI and ESTOI."""
    _check_finite(inputs.clean, inputs.output)  # before the clean side is shared
    reference = _shared_bands(inputs)
    if not reference or "too_few" in reference:
        return stoi(inputs.clean, inputs.output, inputs.sample_rate, extended=extended, reference=reference)
    return stoi(inputs.clean, inputs.output, inputs.sample_rate, extended=extended, reference=reference,
                processed_bands=lambda: inputs.output_feature(_output_bands_of))


def _output_bands_of(inputs: MetricInputs) -> np.ndarray:
    return output_bands(inputs.output, inputs.sample_rate, _shared_bands(inputs)["kept"])


def _shared_bands(inputs: MetricInputs) -> Features | None:
    """The clean side, once per clip for every engine; None where the clip is
    too short (``stoi`` then says so, before any work)."""
    if samples_at_pystoi_rate(len(inputs.clean), inputs.sample_rate) <= MAX_TOO_SHORT:
        return None
    return inputs.feature(clean_bands)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    register(MetricSpec(
        name="stoi",
        func=stoi_metric,
        unit="0-1",
        higher_is_better=True,
        description="Short-time objective intelligibility (Taal et al. 2011), pystoi.stoi extended=False",
        ignores="quiet passages (frames 40 dB below the loudest are dropped) and overall level",
        version=pystoi_version,
        columns={"stoi": Column("STOI", 3, 40)},
        beside_headline=True,
        category="intrusive",
    ))
    register(MetricSpec(
        name="estoi",
        func=estoi_metric,
        unit="0-1",
        higher_is_better=True,
        description=(
            "Extended STOI (Jensen and Taal 2016), pystoi.stoi extended=True; "
            "better than STOI on modulated maskers such as music"
        ),
        ignores="quiet passages (frames 40 dB below the loudest are dropped) and overall level",
        version=pystoi_version,
        category="intrusive",
    ))
