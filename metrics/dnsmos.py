"""DNSMOS P.835 (SIG, BAK, OVRL) and P.808 (MOS) from the models PyPI ``speechmos`` bundles.

Reddy, Gopal and Cutler, "DNSMOS P.835: A Non-Intrusive Perceptual Objective
Speech Quality Metric to Evaluate Noise Suppressors", ICASSP 2022; and Reddy,
Gopal and Cutler, "DNSMOS: A Non-Intrusive Perceptual Objective Speech Quality
Metric to Evaluate Noise Suppressors", ICASSP 2021 (the P.808 model). Networks
trained on ITU-T P.835 listening tests predict, from the output alone, the
speech quality (SIG), the background-noise quality (BAK) and the overall
quality (OVRL) on a 1-5 scale; one trained on P.808 ratings predicts the
overall MOS. They never see the clean reference.

We run ``speechmos/dnsmos_models/sig_bak_ovr.onnx`` and ``model_v8.onnx`` with
onnxruntime and repeat the arithmetic of ``speechmos.dnsmos`` (the same as the
DNS Challenge's ``DNSMOS/dnsmos_local.py``) without importing speechmos: its
module imports librosa (numba, scikit-learn...) and ``requests`` at import
time. The P.808 model's input, a mel spectrogram that speechmos computes with
librosa, is computed here with numpy (``p808_features``), to librosa's
definition: the tests check it against librosa and both scores against
``speechmos.dnsmos.run``: P.835 within 1e-6 (our single-threaded run can
differ from speechmos's multi-threaded one in the last bit of a float32, about
3e-8 on a score), P.808 within 1e-4 (float64 features here, float32 in
librosa). Both model files are pinned by SHA-256 (nsbench.model_files), checked
before they load and written in full into the provenance. The computation:

1. a clip shorter than 9.01 s is appended to itself until it is at least that
   long (each clip's ``dnsmos_window`` note says whether it was: the report
   counts the looped clips);
2. windows of ``int(9.01 * 16000)`` = 144160 samples start every second, and a
   window whose end index, computed in floating point as
   ``int((k + 9.01) * 16000)``, falls one sample short is skipped, as the
   reference skips it (k = 7 to 23, 119 to 122 ...: a clip 17 to 33 s long is
   scored on its first 16 s only);
3. P.835: each window's three raw outputs go through the polynomials fitted to
   P.835 ratings; we use the default, non-personalised DNSMOS
   (``model_type="dnsmos"``, ``dnsmos_models/``), the one the DNS Challenge
   reports, not the personalised model (``pdnsmos_models/``, tuned to penalise
   interfering talkers). P.808: the window less its last 160 samples, as a
   120-band mel spectrogram in dB (``p808_features``), one raw output, no
   polynomial;
4. the clip's score is the mean over windows.

So a 4 s clip costs 7 windows (looped to 16 s), a 10 s clip one. The three
P.835 scores come from one inference: the last clip's result is kept, keyed by
a hash of the samples, so asking for SIG, BAK and OVRL of the same output in a
row runs the network once (the run loop scores one clip's metrics back to
back); P.808 keeps its own last result the same way.
"""
from __future__ import annotations

import functools
import hashlib
import math
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from nsbench.adapters import centred_magnitudes, package_file, resample, verified
from nsbench import MetricInputs, MetricSpec, MetricUndefined, hookimpl

SPEECHMOS_VERSION = "0.0.1.1"  # the version the tests compare against
INSTALL = f"pip install speechmos=={SPEECHMOS_VERSION} onnxruntime==1.32.0"  # no librosa needed

MODEL_RATE = 16000
WINDOW_SECONDS = 9.01  # speechmos INPUT_LENGTH
WINDOW_SAMPLES = int(WINDOW_SECONDS * MODEL_RATE)  # 144160, the model's fixed input length
HOP_SAMPLES = MODEL_RATE  # one window per second
# The model files in speechmos 0.0.1.1 and their SHA-256: a file that differs
# is a broken install (nsbench.model_files), never scored.
P835, P808 = "p835", "p808"
MODEL_FILES = {
    P835: (("dnsmos_models", "sig_bak_ovr.onnx"), "269fbebdb513aa23cddfbb593542ecc540284a91849ac50516870e1ac78f6edd"),
    P808: (("dnsmos_models", "model_v8.onnx"), "9246480c58567bc6affd4200938e77eef49468c8bc7ed3776d109c07456f6e91"),
}
MODEL_FILE = MODEL_FILES[P835][0]

# Non-personalised DNSMOS P.835 mapping from raw network outputs to P.835 MOS,
# highest power first (numpy.poly1d order), as in speechmos and dnsmos_local.py.
POLY_SIG = (-0.08397278, 1.22083953, 0.0052439)
POLY_BAK = (-0.13166888, 1.60915514, -0.39604546)
POLY_OVRL = (-0.06766283, 1.11546468, 0.04602535)

# The P.808 model's input, as speechmos's ``audio_melspec``: librosa's
# melspectrogram with n_fft = 321 (frame 320 + 1), hop 160, 120 mel bands
# (Slaney scale and area normalisation, 0 to 8 kHz), a periodic Hann window,
# frames centred with zero padding, power spectrum; then
# (power_to_db(ref=max, amin=1e-10, top_db=80) + 40) / 40, frames first.
MEL_FFT = 321
MEL_HOP = 160
MEL_BANDS = 120
MEL_AMIN = 1e-10
MEL_TOP_DB = 80.0
P808_TRIM = 160  # speechmos scores audio_seg[:-160]: 900 frames of the 144000 samples left

# The note each clip gets (``dnsmos_window``), counted in the report.
WINDOW_NOTE = "dnsmos_window"
LOOPED, NOT_LOOPED = "looped", "not looped"


class Scores(NamedTuple):
    sig: float
    bak: float
    ovrl: float


def model_path(model: str = P835) -> Path:
    """The bundled model file, found without importing speechmos."""
    return package_file("speechmos", *MODEL_FILES[model][0])


def checked_model_path(model: str = P835) -> Path:
    """The model file, once its SHA-256 is the pinned one (else ModelFileMismatch, exit 2)."""
    return verified(model_path(model), MODEL_FILES[model][1], INSTALL)


@functools.lru_cache(maxsize=2)
def session(model: str = P835):
    import onnxruntime  # heavy; only when the metric runs

    options = onnxruntime.SessionOptions()
    # One thread: a benchmark scores many clips, often in parallel processes,
    # and the run loop's CPU timing must not compete with a metric's threads.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(checked_model_path(model)), options, providers=["CPUExecutionProvider"])


def window_starts(length: int) -> list[int]:
    """Start samples of the windows speechmos scores in a (looped) signal of ``length`` samples."""
    num_hops = int(np.floor(length / MODEL_RATE) - WINDOW_SECONDS) + 1
    starts = []
    for k in range(num_hops):
        # The end computed in floating point, as the reference does: for some k
        # it truncates to one sample short and the reference skips that window.
        end = min(int((k + WINDOW_SECONDS) * HOP_SAMPLES), length)
        if end - k * HOP_SAMPLES >= WINDOW_SAMPLES:
            starts.append(k * HOP_SAMPLES)
    return starts


def looped(audio: np.ndarray) -> np.ndarray:
    """The clip appended to itself until it fills one window (speechmos's doubling)."""
    while len(audio) < WINDOW_SAMPLES:
        audio = np.concatenate([audio, audio])
    return audio


def checked_windows(audio: np.ndarray) -> list[np.ndarray]:
    """The float32 windows the models score, after the checks speechmos makes.

    Raises ValueError for an empty clip or samples outside [-1, 1] (speechmos refuses those too).
    """
    audio = np.asarray(audio)
    if audio.ndim != 1 or audio.size == 0:
        raise ValueError(f"expected a non-empty mono clip, got shape {audio.shape}")
    if not (np.all(audio >= -1) and np.all(audio <= 1)):
        raise ValueError("samples must be within [-1, 1]")
    audio = looped(audio)
    return [audio[start : start + WINDOW_SAMPLES].astype(np.float32) for start in window_starts(len(audio))]


def distinct_windows(audio: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct windows of ``checked_windows`` and, per window scored, the
    index of its distinct one. A looped clip repeats every len(clip) samples,
    so two windows whose starts differ by a multiple of it hold the same
    samples: a 4 s clip's 7 windows are 4 distinct ones. Scoring each once and
    reusing its raw output gives the very same numbers (same inputs, same
    order of the mean), at 4/7 of the network's cost."""
    period = len(np.asarray(audio))
    windows = checked_windows(audio)
    if period >= WINDOW_SAMPLES:  # not looped: nothing repeats by construction
        return windows, np.arange(len(windows))
    starts = window_starts(len(looped(np.asarray(audio))))  # the starts checked_windows cut at, in order
    first: dict[int, int] = {}
    kept, index = [], []
    for start, window in zip(starts, windows):
        if start % period not in first:
            first[start % period] = len(kept)
            kept.append(window)
        index.append(first[start % period])
    return kept, np.array(index)


def dnsmos_p835(audio: np.ndarray) -> Scores:
    """DNSMOS P.835 (SIG, BAK, OVRL) of a 16 kHz mono clip with samples in [-1, 1].

    Equal to ``speechmos.dnsmos.run(audio, 16000)``'s ``sig_mos``, ``bak_mos``
    and ``ovrl_mos`` (non-personalised model).
    """
    run = session(P835).run
    windows, index = distinct_windows(audio)
    raw = np.array([run(None, {"input_1": window[np.newaxis]})[0][0] for window in windows], dtype=np.float64)[index]
    sig, bak, ovrl = (np.polyval(poly, raw[:, i]).mean() for i, poly in enumerate((POLY_SIG, POLY_BAK, POLY_OVRL)))
    return Scores(float(sig), float(bak), float(ovrl))


# ----------------------------------------------------------------- P.808: its mel spectrogram


def hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa's default, htk=False): linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear_step, knee_hz = 200.0 / 3, 1000.0
    knee_mel, log_step = knee_hz / linear_step, np.log(6.4) / 27.0
    return np.where(hz >= knee_hz, knee_mel + np.log(np.maximum(hz, knee_hz) / knee_hz) / log_step, hz / linear_step)


def mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    linear_step, knee_hz = 200.0 / 3, 1000.0
    knee_mel, log_step = knee_hz / linear_step, np.log(6.4) / 27.0
    return np.where(mel >= knee_mel, knee_hz * np.exp(log_step * (mel - knee_mel)), linear_step * mel)


@functools.lru_cache(maxsize=1)
def mel_filterbank() -> np.ndarray:
    """(120, 161) triangular filters on the Slaney scale, area-normalised, as
    ``librosa.filters.mel(sr=16000, n_fft=321, n_mels=120)`` (which returns float32)."""
    bins = np.fft.rfftfreq(MEL_FFT, 1.0 / MODEL_RATE)
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(MODEL_RATE / 2), MEL_BANDS + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32).astype(np.float64)


def p808_features(window: np.ndarray) -> np.ndarray:
    """(frames, 120) float32: speechmos's ``audio_melspec`` of one window, in numpy."""
    power = centred_magnitudes(window, MEL_FFT, MEL_HOP) ** 2
    mel = power @ mel_filterbank().T
    decibels = 10.0 * np.log10(np.maximum(MEL_AMIN, mel)) - 10.0 * np.log10(max(MEL_AMIN, float(mel.max())))
    decibels = np.maximum(decibels, decibels.max() - MEL_TOP_DB)
    return ((decibels + 40.0) / 40.0).astype(np.float32)


def dnsmos_p808(audio: np.ndarray) -> float:
    """DNSMOS P.808 MOS of a 16 kHz mono clip in [-1, 1]: ``speechmos.dnsmos.run``'s ``p808_mos``."""
    run = session(P808).run
    windows, index = distinct_windows(audio)
    raw = [run(None, {"input_1": p808_features(window[:-P808_TRIM])[np.newaxis]})[0][0][0] for window in windows]
    return float(np.mean(np.asarray(raw, dtype=np.float64)[index]))


# ----------------------------------------------------------------- one inference per clip

# (key, scores) of the last clip scored, per model. One entry is enough: the
# run loop asks for all of one clip's metrics before the next clip. A hash of
# the samples (not id(), which Python reuses) makes a stale hit impossible;
# hashing 4 s of audio takes well under a millisecond, the network seconds. A
# tuple is replaced in one assignment, so threads at worst recompute.
_last: dict[str, tuple[bytes, Any]] = {}


def _key(audio: np.ndarray, sample_rate: int) -> bytes:
    digest = hashlib.blake2b(np.ascontiguousarray(audio).view(np.uint8), digest_size=16)
    digest.update(f"{audio.dtype.str}:{audio.shape}:{sample_rate}".encode())
    return digest.digest()


def model_input(output: np.ndarray, sample_rate: int) -> np.ndarray:
    """An engine output as the models take it: 16 kHz (soxr HQ), clipped to [-1, 1].

    Clipped rather than refused as speechmos refuses it: an output beyond full
    scale is scored as it would sound from a 16-bit WAV file (the form the DNS
    Challenge scored).
    """
    if output.size == 0:
        raise MetricUndefined("empty output: nothing to score")
    return np.clip(resample(output, sample_rate, MODEL_RATE), -1.0, 1.0)


def last_clip_scored(model: str, output: np.ndarray, sample_rate: int, network: str, score: Callable[[np.ndarray], Any]) -> Any:
    """``score`` of an engine output at any rate (see ``model_input``), kept for the
    next call on the same samples; a non-finite score is undefined, never kept."""
    output = np.asarray(output)
    key = _key(output, sample_rate)
    last = _last.get(model)
    if last is not None and last[0] == key:
        return last[1]
    value = score(model_input(output, sample_rate))
    if not np.all(np.isfinite(value)):
        raise MetricUndefined(f"the {network} network returned a non-finite score {value}")
    _last[model] = (key, value)
    return value


def clip_scores(output: np.ndarray, sample_rate: int) -> Scores:
    """DNSMOS P.835 of an engine output at any rate, cached for the next call."""
    return last_clip_scored(P835, output, sample_rate, "DNSMOS", dnsmos_p835)


def clip_p808(output: np.ndarray, sample_rate: int) -> float:
    """DNSMOS P.808 of an engine output at any rate, cached for the next call."""
    return last_clip_scored(P808, output, sample_rate, "DNSMOS P.808", dnsmos_p808)


def window_note(inputs: MetricInputs) -> str:
    """Whether the clip was looped to fill the models' 9.01 s window (judged at 16 kHz, as scored)."""
    samples_at_16k = math.ceil(len(inputs.output) * MODEL_RATE / inputs.sample_rate)
    return LOOPED if samples_at_16k < WINDOW_SAMPLES else NOT_LOOPED


def dnsmos_sig_metric(inputs: MetricInputs) -> dict[str, Any]:
    return {"dnsmos_sig": clip_scores(inputs.output, inputs.sample_rate).sig, WINDOW_NOTE: window_note(inputs)}


def dnsmos_bak_metric(inputs: MetricInputs) -> dict[str, Any]:
    return {"dnsmos_bak": clip_scores(inputs.output, inputs.sample_rate).bak, WINDOW_NOTE: window_note(inputs)}


def dnsmos_ovrl_metric(inputs: MetricInputs) -> dict[str, Any]:
    return {"dnsmos_ovrl": clip_scores(inputs.output, inputs.sample_rate).ovrl, WINDOW_NOTE: window_note(inputs)}


def dnsmos_p808_metric(inputs: MetricInputs) -> dict[str, Any]:
    return {"dnsmos_p808": clip_p808(inputs.output, inputs.sample_rate), WINDOW_NOTE: window_note(inputs)}


@functools.lru_cache(maxsize=2)
def dnsmos_version(model: str = P835) -> str:
    """speechmos's version and the model file's full SHA-256: retrained models shift scores."""
    try:
        path = model_path(model)
        return f"speechmos {metadata.version('speechmos')}; {path.name} sha256:{MODEL_FILES[model][1]}"
    except (ModuleNotFoundError, metadata.PackageNotFoundError):
        return ""


def model_options(model: str, flags: Mapping[str, Any], registry: Any) -> dict[str, Any]:
    """A metric's once-per-run options (``functools.partial(model_options, model)``,
    which pickles for worker processes): the model file checked against its
    pinned hash before any engine runs (a mismatch stops the run, exit 2), and
    its path and full hash for the provenance."""
    path = checked_model_path(model)
    digest = MODEL_FILES[model][1]
    return {"fingerprint": digest, "provenance": {"model_file": str(path), "sha256": digest}}


NON_INTRUSIVE = (
    "the clean reference: non-intrusive, so lost or wrong words go unnoticed if the result sounds "
    "clean; 16 kHz only (a wider band is resampled away unheard); tops out near 3.3 OVRL on clean "
    "studio speech, so no engine reaches 5"
)
COMMON = (
    "the model bundled in speechmos, run with onnxruntime exactly as "
    "speechmos.dnsmos.run; output resampled to 16 kHz (soxr HQ) and clipped to [-1, 1]; clips under "
    "9.01 s are looped to fill the model's window (the report counts them)"
)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    for name, func, what, model in (
        ("dnsmos_sig", dnsmos_sig_metric, "P.835 speech signal quality (SIG)", P835),
        ("dnsmos_bak", dnsmos_bak_metric, "P.835 background noise quality (BAK, 5 = not noticeable)", P835),
        ("dnsmos_ovrl", dnsmos_ovrl_metric, "P.835 overall quality (OVRL)", P835),
        ("dnsmos_p808", dnsmos_p808_metric, "P.808 overall quality (MOS)", P808),
    ):
        paper = ("DNSMOS P.835 (Reddy et al. 2022), non-personalised" if model == P835
                 else "DNSMOS P.808 (Reddy et al. 2021)")
        description = f"Predicted {what} of the output alone: {paper}, {COMMON}"
        register(MetricSpec(
            name=name,
            func=func,
            unit="MOS 1-5",
            higher_is_better=True,
            description=description,
            ignores=NON_INTRUSIVE,
            needs_reference=False,
            category="non-intrusive",
            requires=("speechmos", "onnxruntime"),
            install=INSTALL,
            version=functools.partial(dnsmos_version, model),
            # Opt-in on paired sets (about a second per clip and engine); sets
            # without a reference run every needs_reference=False metric.
            default=False,
            values={name: description},
            # The headline on a set without references: OVRL, then P.808, then SIG.
            headline_without_reference={"dnsmos_ovrl": 1, "dnsmos_p808": 2, "dnsmos_sig": 3}.get(name, 0),
            options=functools.partial(model_options, model),
        ))
