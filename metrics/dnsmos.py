"""DNSMOS P.835: SIG, BAK and OVRL from the models that PyPI ``speechmos`` bundles.

Reddy, Gopal and Cutler, "DNSMOS P.835: A Non-Intrusive Perceptual Objective
Speech Quality Metric to Evaluate Noise Suppressors", ICASSP 2022. A network
trained on ITU-T P.835 listening tests predicts, from the output alone, the
speech quality (SIG), the background-noise quality (BAK) and the overall
quality (OVRL) on a 1-5 scale. It never sees the clean reference.

We run ``speechmos/dnsmos_models/sig_bak_ovr.onnx`` with onnxruntime and repeat
the arithmetic of ``speechmos.dnsmos`` (the same as the DNS Challenge's
``DNSMOS/dnsmos_local.py``) without importing speechmos: its module imports
librosa (numba, scikit-learn...) and ``requests`` at import time, only for the
P.808 model's mel spectrogram, which P.835 does not use. The tests check that
our scores equal ``speechmos.dnsmos.run``: exactly with the same network
outputs, and within 1e-6 with the real network, whose single-threaded run here
can differ from speechmos's multi-threaded one in the last bit of a float32
(about 3e-8 on a score). The computation:

1. a clip shorter than 9.01 s is appended to itself until it is at least that long;
2. windows of ``int(9.01 * 16000)`` = 144160 samples start every second, and a
   window whose end index, computed in floating point as
   ``int((k + 9.01) * 16000)``, falls one sample short is skipped, as the
   reference skips it (k = 7 to 23, 119 to 122 ...: a clip 17 to 33 s long is
   scored on its first 16 s only);
3. each window's three raw outputs go through the polynomials fitted to P.835
   ratings; we use the default, non-personalised DNSMOS (``model_type="dnsmos"``,
   ``dnsmos_models/``), the one the DNS Challenge reports, not the personalised
   model (``pdnsmos_models/``, tuned to penalise interfering talkers);
4. the clip's score is the mean over windows.

So a 4 s clip costs 7 windows (looped to 16 s), a 10 s clip one. The three
scores come from one inference: the last clip's result is kept, keyed by a hash
of the samples, so asking for SIG, BAK and OVRL of the same output in a row
runs the network once (the run loop scores one clip's metrics back to back).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
from importlib import metadata
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from nsbench.audio import resample
from nsbench.hookspecs import hookimpl
from nsbench.types import MetricInputs, MetricSpec, MetricUndefined

SPEECHMOS_VERSION = "0.0.1.1"  # the version the tests compare against
INSTALL = f"pip install speechmos=={SPEECHMOS_VERSION} onnxruntime==1.32.0"  # no librosa needed

MODEL_RATE = 16000
WINDOW_SECONDS = 9.01  # speechmos INPUT_LENGTH
WINDOW_SAMPLES = int(WINDOW_SECONDS * MODEL_RATE)  # 144160, the model's fixed input length
HOP_SAMPLES = MODEL_RATE  # one window per second
MODEL_FILE = ("dnsmos_models", "sig_bak_ovr.onnx")

# Non-personalised DNSMOS P.835 mapping from raw network outputs to P.835 MOS,
# highest power first (numpy.poly1d order), as in speechmos and dnsmos_local.py.
POLY_SIG = (-0.08397278, 1.22083953, 0.0052439)
POLY_BAK = (-0.13166888, 1.60915514, -0.39604546)
POLY_OVRL = (-0.06766283, 1.11546468, 0.04602535)


class Scores(NamedTuple):
    sig: float
    bak: float
    ovrl: float


def model_path() -> Path:
    """The bundled model file, found without importing speechmos."""
    spec = importlib.util.find_spec("speechmos")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("speechmos is not installed")
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*MODEL_FILE)


@functools.lru_cache(maxsize=1)
def session():
    import onnxruntime  # heavy; only when the metric runs

    options = onnxruntime.SessionOptions()
    # One thread: a benchmark scores many clips, often in parallel processes,
    # and the run loop's CPU timing must not compete with a metric's threads.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(model_path()), options, providers=["CPUExecutionProvider"])


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


def dnsmos_p835(audio: np.ndarray) -> Scores:
    """DNSMOS P.835 (SIG, BAK, OVRL) of a 16 kHz mono clip with samples in [-1, 1].

    Equal to ``speechmos.dnsmos.run(audio, 16000)``'s ``sig_mos``, ``bak_mos``
    and ``ovrl_mos`` (non-personalised model). Raises ValueError for an empty
    clip or samples outside [-1, 1] (speechmos refuses those too).
    """
    audio = np.asarray(audio)
    if audio.ndim != 1 or audio.size == 0:
        raise ValueError(f"expected a non-empty mono clip, got shape {audio.shape}")
    if not (np.all(audio >= -1) and np.all(audio <= 1)):
        raise ValueError("samples must be within [-1, 1]")
    audio = looped(audio)
    run = session().run
    raw = np.array([
        run(None, {"input_1": audio[start : start + WINDOW_SAMPLES].astype(np.float32)[np.newaxis]})[0][0]
        for start in window_starts(len(audio))
    ], dtype=np.float64)
    sig, bak, ovrl = (np.polyval(poly, raw[:, i]).mean() for i, poly in enumerate((POLY_SIG, POLY_BAK, POLY_OVRL)))
    return Scores(float(sig), float(bak), float(ovrl))


# ----------------------------------------------------------------- one inference per clip

# (key, scores) of the last clip scored. One entry is enough: the run loop asks
# for all of one clip's metrics before the next clip. A hash of the samples
# (not id(), which Python reuses) makes a stale hit impossible; hashing 4 s of
# audio takes well under a millisecond, the network seconds. A tuple is
# replaced in one assignment, so threads at worst recompute.
_last: tuple[bytes, Scores] | None = None


def _key(audio: np.ndarray, sample_rate: int) -> bytes:
    digest = hashlib.blake2b(np.ascontiguousarray(audio).view(np.uint8), digest_size=16)
    digest.update(f"{audio.dtype.str}:{audio.shape}:{sample_rate}".encode())
    return digest.digest()


def clip_scores(output: np.ndarray, sample_rate: int) -> Scores:
    """DNSMOS of an engine output at any rate, cached for the next call.

    Resampled to 16 kHz with soxr HQ, then clipped to [-1, 1]: an output beyond
    full scale is scored as it would sound from a 16-bit WAV file (the form the
    DNS Challenge scored), rather than refused as speechmos refuses it.
    """
    global _last
    output = np.asarray(output)
    key = _key(output, sample_rate)
    if _last is not None and _last[0] == key:
        return _last[1]
    if output.size == 0:
        raise MetricUndefined("empty output: nothing to score")
    audio = np.clip(resample(output, sample_rate, MODEL_RATE), -1.0, 1.0)
    scores = dnsmos_p835(audio)
    if not all(math.isfinite(value) for value in scores):
        raise MetricUndefined(f"the DNSMOS network returned a non-finite score {scores}")
    _last = (key, scores)
    return scores


def dnsmos_sig_metric(inputs: MetricInputs) -> float:
    return clip_scores(inputs.output, inputs.sample_rate).sig


def dnsmos_bak_metric(inputs: MetricInputs) -> float:
    return clip_scores(inputs.output, inputs.sample_rate).bak


def dnsmos_ovrl_metric(inputs: MetricInputs) -> float:
    return clip_scores(inputs.output, inputs.sample_rate).ovrl


@functools.lru_cache(maxsize=1)
def dnsmos_version() -> str:
    """speechmos's version and the model file's hash: retrained models shift scores."""
    try:
        path = model_path()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return f"speechmos {metadata.version('speechmos')}; {path.name} sha256:{digest[:16]}"
    except (ModuleNotFoundError, OSError, metadata.PackageNotFoundError):
        return ""


NON_INTRUSIVE = (
    "the clean reference: non-intrusive, so lost or wrong words go unnoticed if the result "
    "sounds clean"
)
COMMON = (
    "DNSMOS P.835 (Reddy et al. 2022), the non-personalised model bundled in speechmos, run with "
    "onnxruntime exactly as speechmos.dnsmos.run; output resampled to 16 kHz (soxr HQ) and "
    "clipped to [-1, 1]; clips under 9.01 s are looped to fill the model's window"
)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    for name, func, what in (
        ("dnsmos_sig", dnsmos_sig_metric, "speech signal quality (SIG)"),
        ("dnsmos_bak", dnsmos_bak_metric, "background noise quality (BAK, 5 = not noticeable)"),
        ("dnsmos_ovrl", dnsmos_ovrl_metric, "overall quality (OVRL)"),
    ):
        register(MetricSpec(
            name=name,
            func=func,
            unit="MOS 1-5",
            higher_is_better=True,
            description=f"Predicted P.835 {what} of the output alone: {COMMON}",
            ignores=NON_INTRUSIVE,
            requires=("speechmos", "onnxruntime"),
            install=INSTALL,
            version=dnsmos_version,
            default=False,
            needs_reference=False,
        ))
