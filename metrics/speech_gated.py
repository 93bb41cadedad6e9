"""Speech-presence-gated levels: the no-reference forms of voice level and music attenuation.

The intrusive ``voice_level_db`` and ``music_attenuation_db`` (metrics/levels.py)
gate on the clean voice. Without one, a voice activity detector run on the
input decides where speech is: Silero VAD (snakers4/silero-vad, MIT), the ONNX
model that PyPI ``silero-vad`` ships (``silero_vad/data/silero_vad.onnx``),
run here with onnxruntime. The package's Python wrapper imports torch, so it
is never imported: the file is found with ``find_spec`` and its SHA-256
checked before it loads (nsbench.model_files).

The detector (the wrapper's ``OnnxWrapper.audio_forward``): the input at
16 kHz, in chunks of 512 samples (32 ms; the last one zero-padded), each fed
with the 64 samples before it (zeros for the first) and the (2, 1, 128) state
the previous chunk returned; it gives each chunk a speech probability. As in
the package's ``get_speech_timestamps`` (threshold 0.5, ``neg_threshold`` =
0.5 - 0.15, 30 ms of padding each side), a chunk is

* speech when its probability is at least 0.5, and so are the chunks next to
  a speech chunk (the padding: onsets and tails the detector is late on);
* no-speech when its probability is below 0.35 and it is not speech;
* neither (left out of both) in between.

Then, with P(x, frames) the mean power of x over those frames (sum of squares
over samples):

* ``vad_attenuation_db`` (noise removed where speech is absent) =
  10 log10(P(output, no-speech) / P(input, no-speech)). Negative means removed;
  passthrough is exactly 0.
* ``vad_voice_level_db`` (speech level kept where speech is present), the
  noise taken out of both sides: speech power S(x) = P(x, speech) -
  P(x, no-speech), for input and output separately; 10 log10(S(output) /
  S(input)). Passthrough is exactly 0, a gain of g dB reads g, and a perfect
  denoiser on stationary noise reads about 0 (the input's noise is measured
  in its pauses and taken out). An output silent in the speech chunks reads
  -120 dB, the floor of the other level metrics; one with power there but
  no more than in its pauses (S(output) <= 0) is undefined: the speech
  removed and noise the pauses do not represent (music, a suppressor that
  varies) cannot be told apart.

Both are undefined (with the reason) when the detector finds no speech chunk,
fewer than 8 no-speech chunks (256 ms: too little pause to measure the noise
in; babble, which the detector takes for speech, often leaves one to three),
or, for the voice level, when the input's speech frames are no louder than
its pauses.

The detector runs on the input only, once per clip for every engine
(``inputs.feature``, nsbench.store.reference): the engines are judged on the same
frames. Frames are mapped back to the clip's own rate, where the powers are
taken.
"""
from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nsbench.adapters import Features, package_file, resample, verified
from nsbench import MetricInputs, MetricSpec, MetricUndefined, ReferenceAudio, hookimpl

SILERO_VERSION = "6.2.3"
INSTALL = f"pip install onnxruntime==1.32.0 && pip install --no-deps silero-vad=={SILERO_VERSION}"
MODEL_PARTS = ("data", "silero_vad.onnx")
MODEL_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"

VAD_RATE = 16000
CHUNK = 512  # 32 ms at 16 kHz: the only chunk the 16 kHz model takes
CONTEXT = 64  # samples of the previous chunk fed before each chunk
STATE_SHAPE = (2, 1, 128)
# get_speech_timestamps' defaults: speech at 0.5 or more; leaving speech below
# threshold - 0.15; speech_pad_ms=30, about one chunk each side.
SPEECH_THRESHOLD = 0.5
NO_SPEECH_THRESHOLD = SPEECH_THRESHOLD - 0.15
PAD_CHUNKS = 1
# The fewest no-speech chunks that measure the noise: 8 chunks, 256 ms. With
# fewer (babble, which the detector rightly takes for speech, leaves one to
# three chunks of a 4 s clip) the pauses' power is one moment's, not the
# noise's, and the speech level read from it wanders by tens of dB.
MIN_PAUSE_CHUNKS = 8
# Same floor and ceiling as the other level metrics.
CLAMP_DB = 120.0


def model_path() -> Path:
    """The bundled model file, found without importing silero_vad (whose code imports torch)."""
    return package_file("silero_vad", *MODEL_PARTS)


@functools.lru_cache(maxsize=1)
def session():
    import onnxruntime  # heavy; only when the metric runs

    options = onnxruntime.SessionOptions()
    # One thread, as the package's wrapper and the other metrics: scoring runs
    # beside the engines and must not compete with them for cores.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    path = verified(model_path(), MODEL_SHA256, INSTALL)
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def speech_probabilities(audio: np.ndarray) -> np.ndarray:
    """Silero VAD's speech probability of each 512-sample chunk of a 16 kHz mono clip.

    As the package's ``OnnxWrapper.audio_forward``: the clip zero-padded to
    whole chunks, a fresh state, each chunk preceded by the last 64 samples of
    the one before (zeros for the first).
    """
    samples = np.asarray(audio, dtype=np.float32).ravel()
    count = -(-samples.size // CHUNK)
    padded = np.zeros(CONTEXT + count * CHUNK, dtype=np.float32)
    padded[CONTEXT:CONTEXT + samples.size] = samples
    run = session().run
    state = np.zeros(STATE_SHAPE, dtype=np.float32)
    rate = np.array(VAD_RATE, dtype=np.int64)
    probabilities = np.empty(count, dtype=np.float32)
    for index in range(count):
        start = index * CHUNK  # the chunk's context starts CONTEXT samples before it
        window = padded[start : start + CONTEXT + CHUNK][np.newaxis]
        output, state = run(None, {"input": window, "state": state, "sr": rate})
        probabilities[index] = output[0, 0]
    return probabilities


def classify(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(speech, no_speech) chunk masks from the probabilities (see the module docstring)."""
    above = np.asarray(probabilities) >= SPEECH_THRESHOLD
    speech = above.copy()
    for shift in range(1, PAD_CHUNKS + 1):
        speech[shift:] |= above[:-shift]
        speech[:-shift] |= above[shift:]
    no_speech = (np.asarray(probabilities) < NO_SPEECH_THRESHOLD) & ~speech
    return speech, no_speech


def chunk_bounds(count: int, sample_rate: int, length: int) -> np.ndarray:
    """Sample index at the clip's rate where each 16 kHz chunk starts, and the end: count + 1 values."""
    starts = np.round(np.arange(count + 1) * CHUNK * sample_rate / VAD_RATE).astype(np.int64)
    return np.minimum(starts, length)


def speech_frames(audio: ReferenceAudio) -> Features:
    """What the gated levels take from the input alone, once per clip for every
    engine (nsbench.store.reference): the detector's probabilities, the masks, the
    chunk bounds at the clip's rate, and the input's energy in each chunk."""
    noisy = np.asarray(audio.noisy)
    probabilities = speech_probabilities(resample(noisy.astype(np.float32), audio.sample_rate, VAD_RATE))
    bounds = chunk_bounds(len(probabilities), audio.sample_rate, noisy.size)
    speech, no_speech = classify(probabilities)
    return {
        "probabilities": probabilities,
        "speech": speech,
        "no_speech": no_speech,
        "bounds": bounds,
        "input_energy": chunk_energy(noisy, bounds),
    }


def chunk_energy(x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Sum of squares of ``x`` (float64) between consecutive bounds; 0 for an empty chunk."""
    squares = np.concatenate([[0.0], np.cumsum(np.square(np.asarray(x, dtype=np.float64).ravel()))])
    return squares[bounds[1:]] - squares[bounds[:-1]]


def mean_power(energy: np.ndarray, bounds: np.ndarray, mask: np.ndarray) -> float:
    samples = float(np.sum(np.diff(bounds)[mask]))
    return float(np.sum(energy[mask])) / samples if samples else 0.0


def _clamped_db(ratio: float) -> float:
    if ratio <= 0.0:
        return -CLAMP_DB
    return float(np.clip(10.0 * np.log10(ratio), -CLAMP_DB, CLAMP_DB))


def _frames(output: np.ndarray, noisy: np.ndarray, sample_rate: int, frames: Features | None) -> Features:
    output, noisy = np.asarray(output), np.asarray(noisy)
    if output.size != noisy.size:
        raise ValueError(f"output and input differ in length: {output.size} and {noisy.size}")
    if frames is None:
        frames = speech_frames(ReferenceAudio(noisy, noisy, sample_rate))
    if not np.any(frames["speech"]):
        raise MetricUndefined("the voice activity detector found no speech in the input")
    pauses = int(np.count_nonzero(frames["no_speech"]))
    if pauses < MIN_PAUSE_CHUNKS:
        raise MetricUndefined(
            f"the voice activity detector found {pauses} no-speech chunk{'' if pauses == 1 else 's'} of 32 ms in the "
            f"input, too few to measure the noise in (at least {MIN_PAUSE_CHUNKS} needed)"
        )
    return frames


def attenuation_db(output: np.ndarray, noisy: np.ndarray, sample_rate: int, frames: Features | None = None) -> float:
    """10 log10(P(output) / P(input)) over the input's no-speech chunks (noise removed where speech is absent).

    ``frames``: ``speech_frames`` of this clip, where the caller shares it.
    """
    frames = _frames(output, noisy, sample_rate, frames)
    bounds, quiet = frames["bounds"], frames["no_speech"]
    before = mean_power(frames["input_energy"], bounds, quiet)
    if before == 0.0:
        raise MetricUndefined("the input is silent wherever there is no speech: nothing to attenuate")
    return _clamped_db(mean_power(chunk_energy(output, bounds), bounds, quiet) / before)


def voice_level_db(output: np.ndarray, noisy: np.ndarray, sample_rate: int, frames: Features | None = None) -> float:
    """10 log10(S(output) / S(input)), S(x) = P(x, speech chunks) - P(x, no-speech chunks):
    the speech level kept where speech is present, each side's noise taken out.

    ``frames``: ``speech_frames`` of this clip, where the caller shares it.
    """
    frames = _frames(output, noisy, sample_rate, frames)
    bounds, speech, quiet = frames["bounds"], frames["speech"], frames["no_speech"]
    energy_in, energy_out = frames["input_energy"], chunk_energy(output, bounds)
    speech_in = mean_power(energy_in, bounds, speech) - mean_power(energy_in, bounds, quiet)
    if speech_in <= 0.0:
        raise MetricUndefined("the input is no louder where the detector finds speech than in its pauses")
    loud, floor = mean_power(energy_out, bounds, speech), mean_power(energy_out, bounds, quiet)
    if loud == 0.0:
        return -CLAMP_DB  # silent wherever the input has speech
    if loud <= floor:
        # The speech removed, or noise in the output that its pauses do not
        # represent (music, a suppressor that varies): the two cannot be told apart.
        raise MetricUndefined("the output is no louder where the input has speech than in its pauses: "
                              "its speech cannot be told from its noise")
    return _clamped_db((loud - floor) / speech_in)


def vad_frames(inputs: MetricInputs) -> Features:
    return inputs.feature(speech_frames)


def vad_attenuation_metric(inputs: MetricInputs) -> float:
    return attenuation_db(inputs.output, inputs.noisy, inputs.sample_rate, vad_frames(inputs))


def vad_voice_level_metric(inputs: MetricInputs) -> float:
    return voice_level_db(inputs.output, inputs.noisy, inputs.sample_rate, vad_frames(inputs))


@functools.lru_cache(maxsize=1)
def vad_version() -> str:
    try:
        return f"silero-vad {metadata.version('silero-vad')}; {model_path().name} sha256:{MODEL_SHA256}"
    except (ModuleNotFoundError, metadata.PackageNotFoundError):
        return ""


def vad_options(flags: Mapping[str, Any], registry: Any) -> dict[str, Any]:
    """Once per run, before any engine: the model file checked against its pinned
    hash (a mismatch stops the run, exit 2); its path and full hash for the provenance."""
    path = verified(model_path(), MODEL_SHA256, INSTALL)
    return {"fingerprint": MODEL_SHA256, "provenance": {"model_file": str(path), "sha256": MODEL_SHA256}}


# -------------------------------------------------------- agreement with the intrusive forms

PAIRS = {
    "vad_voice_level_db - voice_level_db": ("vad_voice_level_db", "voice_level_db"),
    "vad_attenuation_db - music_attenuation_db": ("vad_attenuation_db", "music_attenuation_db"),
}


def level_agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How far the gated levels read from the intrusive ones, on a paired set.

    ``rows``: one per clip and engine, with ``engine``, ``snr_db`` and the
    scores. Returns {"pairs": {pair: {snr: {engine: {"clips", "mean",
    "median", "mean_abs"}}}}, "pearson": {pair: r over every row}}, the differences
    no-reference minus intrusive, in dB, rows lacking either value left out.
    """
    pairs: dict[str, Any] = {}
    pearson: dict[str, float] = {}
    for pair, (ours, theirs) in PAIRS.items():
        scored = [row for row in rows if ours in row and theirs in row]
        cells: dict[str, dict[str, list[float]]] = {}
        for row in scored:
            cells.setdefault(str(row["snr_db"]), {}).setdefault(row["engine"], []).append(row[ours] - row[theirs])
        pairs[pair] = {
            snr: {engine: {"clips": len(d), "mean": float(np.mean(d)), "median": float(np.median(d)),
                           "mean_abs": float(np.mean(np.abs(d)))}
                  for engine, d in by_engine.items()}
            for snr, by_engine in sorted(cells.items(), key=lambda item: float(item[0]))
        }
        if len(scored) > 2:
            pearson[pair] = float(np.corrcoef([row[ours] for row in scored], [row[theirs] for row in scored])[0, 1])
    return {"pairs": pairs, "pearson": pearson}


GATING = (
    "Silero VAD (silero-vad's ONNX model, onnxruntime, no torch) on the input decides speech "
    "(probability >= 0.5, padded one 32 ms chunk each side) and no-speech (< 0.35) chunks"
)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    common = dict(
        unit="dB",
        needs_reference=False,
        requires=("silero_vad", "onnxruntime"),
        install=INSTALL,
        version=vad_version,
        default=False,  # opt-in on paired sets; sets without a reference run it by default
        options=vad_options,
    )
    register(MetricSpec(
        name="vad_attenuation_db",
        func=vad_attenuation_metric,
        higher_is_better=False,
        description=(
            f"No-reference form of music_attenuation_db: output over input power where speech is absent. "
            f"{GATING}; negative means removed, passthrough 0"
        ),
        ignores=(
            "what happens while speech is present: a suppressor that mutes everything between words "
            "scores well here; and the detector's mistakes (speech it misses counts as noise)"
        ),
        needs_voice=False,
        **common,
    ))
    register(MetricSpec(
        name="vad_voice_level_db",
        func=vad_voice_level_metric,
        higher_is_better=True,
        description=(
            f"No-reference form of voice_level_db: speech power kept where speech is present, "
            f"output over input, each side's power in the no-speech chunks (its noise) taken out. "
            f"{GATING}; 0 dB keeps the speech level, passthrough 0"
        ),
        ignores=(
            "what the kept power is: noise that follows the speech (babble, music) counts as speech, "
            "and distortion at the same level reads 0; assumes the noise in the pauses is the noise under the speech"
        ),
        **common,
    ))
