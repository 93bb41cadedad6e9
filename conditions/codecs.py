"""Codec round trips through PyAV (the FFmpeg inside the ``av`` wheel).

Each condition resamples the clip to the codec's rate, encodes it into the
container a real file or call would use, decodes it, removes the codec's
fixed delay and resamples back to the clip's rate. The output is
sample-aligned with the input:

- containers that record the encoder's priming come back at lag 0 (Ogg for
  Opus, MP4 for AAC, MP3 with its LAME header; raw ADTS AAC would lag 1024);
- G.722 (22 samples at 16 kHz) and AMR-NB (about 40 at 8 kHz) have a fixed
  codec delay that no container records: it is measured once per process and
  clip rate, by cross-correlation on a speech-like probe (probe_signal), to a
  fraction of a sample, and removed (the whole samples cut, the fraction by a
  band-limited shift). AMR-NB's is not a whole number of samples (79.2 at
  16 kHz): cutting 79 left half the demo's clips late by one sample.
  Measuring every codec the same way also catches a future FFmpeg whose
  demuxer stops trimming.

Encoders run with fixed settings, so the same input gives the same bytes.
"""
from __future__ import annotations

import functools
import io
from dataclasses import dataclass

import numpy as np

from nsbench.adapters import correlation_window, estimate_lag, fit_length, resample
from nsbench import ConditionSpec, hookimpl

INSTALL = "pip install av==18.1.0 (its wheels bundle FFmpeg with libopus, LAME, OpenCORE AMR)"
# Zeros appended before encoding, so the delayed output still holds the
# clip's last samples and the encoder's last frame is flushed whole.
TAIL_SECONDS = 0.1
# Codec delays beyond this are not searched for (AMR-NB's is 5 ms).
# A fraction of a sample smaller than this is not worth a shift (MP3, AAC, G.711: 0.00-0.01).
MIN_FRACTION = 0.05
MAX_DELAY_SECONDS = 0.05
PROBE_SECONDS = 2.0
PROBE_SEED = 17


@dataclass(frozen=True)
class Codec:
    encoder: str  # FFmpeg encoder name
    rate: int  # the rate the codec runs at
    bit_rate: int | None  # bits per second; None: fixed by the codec (G.711)
    container: str  # FFmpeg muxer and demuxer
    sample_format: str  # what the encoder takes
    description: str


CODECS = {
    "opus-16k": Codec("libopus", 48000, 16000, "ogg", "flt", "Opus 16 kbit/s at 48 kHz (libopus, Ogg): a VoIP call"),
    "opus-32k": Codec("libopus", 48000, 32000, "ogg", "flt", "Opus 32 kbit/s at 48 kHz (libopus, Ogg)"),
    "aac-64k": Codec("aac", 48000, 64000, "mp4", "fltp", "AAC-LC 64 kbit/s at 48 kHz (FFmpeg's encoder, MP4): an upload"),
    "mp3-64k": Codec("libmp3lame", 48000, 64000, "mp3", "fltp", "MP3 64 kbit/s at 48 kHz (LAME)"),
    "g711-ulaw": Codec("pcm_mulaw", 8000, None, "wav", "s16", "G.711 mu-law at 8 kHz: the telephone network"),
    "amr-nb-12k": Codec("libopencore_amrnb", 8000, 12200, "amr", "s16", "AMR-NB 12.2 kbit/s at 8 kHz (OpenCORE): a GSM call"),
    "g722": Codec("g722", 16000, 64000, "g722", "s16", "G.722 64 kbit/s at 16 kHz: wideband telephony"),
}


def round_trip(audio: np.ndarray, sample_rate: int, codec: Codec) -> np.ndarray:
    """``audio`` encoded and decoded by ``codec``, back at ``sample_rate`` and
    aligned with the input."""
    return without_delay(unaligned_round_trip(audio, sample_rate, codec), codec_delay(codec, sample_rate), len(audio))


def without_delay(audio: np.ndarray, delay: float, length: int) -> np.ndarray:
    """``audio`` advanced by ``delay`` samples (whole ones cut, a fraction by
    a band-limited shift: a phase ramp on the spectrum), ``length`` long. The
    shift is circular: the silent tail encode_decode appends takes the wrap."""
    whole = int(np.floor(delay))
    fraction = delay - whole
    if fraction > 1 - MIN_FRACTION:
        whole, fraction = whole + 1, 0.0
    # A codec a fraction early (Opus: 0.1 sample at 16 kHz) is first delayed by one.
    audio = np.asarray(audio[whole:] if whole >= 0 else np.concatenate([np.zeros(-whole), audio]), dtype=np.float64)
    if fraction >= MIN_FRACTION:
        from scipy.fft import irfft, rfft, rfftfreq  # 0.2-0.3 s to import: only where a codec runs

        size = len(audio)
        ramp = np.exp(2j * np.pi * rfftfreq(size) * fraction)
        if size % 2 == 0:
            ramp[-1] = np.cos(np.pi * fraction)  # the Nyquist bin stays real
        audio = irfft(rfft(audio) * ramp, size)
    return fit_length(audio.astype(np.float32), length)


def unaligned_round_trip(audio: np.ndarray, sample_rate: int, setting: Codec) -> np.ndarray:
    """The round trip at ``sample_rate`` with the codec's delay still in it
    (and the silent tail encode_decode adds)."""
    return resample(encode_decode(resample(audio, sample_rate, setting.rate), setting), setting.rate, sample_rate)


def encode_decode(audio: np.ndarray, setting: Codec) -> np.ndarray:
    """The decoded samples (float32, at the codec's rate) of ``audio`` with a
    silent tail, before any delay is removed."""
    import av

    tail = np.zeros(int(TAIL_SECONDS * setting.rate), dtype=np.float32)
    with av.open(io.BytesIO(encode(np.concatenate([np.asarray(audio, dtype=np.float32), tail]), setting)), "r", format=setting.container) as container:
        chunks = [decoded_samples(frame.to_ndarray()) for frame in container.decode(audio=0)]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)


def encode(samples: np.ndarray, setting: Codec) -> bytes:
    """``samples`` (at the codec's rate) as the bytes of a file in the codec's container."""
    import av

    buffer = io.BytesIO()
    with av.open(buffer, "w", format=setting.container) as container:
        stream = container.add_stream(setting.encoder, rate=setting.rate)
        if setting.bit_rate:
            stream.bit_rate = setting.bit_rate
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(encoder_samples(samples, setting.sample_format), format=setting.sample_format, layout="mono")
        frame.sample_rate = setting.rate
        frame.pts = 0
        for packet in (*stream.encode(frame), *stream.encode(None)):
            container.mux(packet)
    return buffer.getvalue()


def encoder_samples(samples: np.ndarray, sample_format: str) -> np.ndarray:
    """(1, samples) in the encoder's format; 16-bit formats clip at full scale, as a real file does."""
    if sample_format.startswith("s16"):
        return np.clip(np.round(samples * 32768.0), -32768, 32767).astype(np.int16)[None, :]
    return samples.astype(np.float32)[None, :]


def decoded_samples(array: np.ndarray) -> np.ndarray:
    """A decoded frame (planar or packed, float or integer) as float32 mono."""
    if np.issubdtype(array.dtype, np.integer):
        array = array.astype(np.float32) / float(-np.iinfo(array.dtype).min)
    return np.asarray(array, dtype=np.float32).reshape(-1)


@functools.lru_cache(maxsize=None)
def codec_delay(setting: Codec, sample_rate: int) -> float:
    """Samples (at ``sample_rate``, the clip's, to a fraction) by which the
    codec's round trip lags its input, measured once per process and rate on
    probe_signal. At the clip's rate, not the codec's: AMR-NB's 39.6 samples
    at 8 kHz are 79.2 at 16 kHz."""
    probe = probe_signal(sample_rate)
    decoded = unaligned_round_trip(probe, sample_rate, setting)[: len(probe)]
    max_lag = int(MAX_DELAY_SECONDS * sample_rate)
    lag = estimate_lag(decoded, probe, max_lag)
    if lag is None or lag < -1:
        raise RuntimeError(f"cannot measure the delay of {setting.encoder}: its output does not resemble the probe")
    window = np.abs(correlation_window(decoded, probe, max_lag).astype(np.float64))
    return lag + parabolic_offset(window, lag + max_lag)


def parabolic_offset(values: np.ndarray, peak: int) -> float:
    """Where, within half a sample of ``peak``, the parabola through the peak
    and its neighbours has its top."""
    if not 0 < peak < len(values) - 1:
        return 0.0
    before, at, after = values[peak - 1], values[peak], values[peak + 1]
    curvature = before - 2 * at + after
    return float(0.5 * (before - after) / curvature) if curvature < 0 else 0.0


def probe_signal(rate: int, seed: int = PROBE_SEED, seconds: float = PROBE_SECONDS) -> np.ndarray:
    """A speech-like probe: glottal pulses at a jittered pitch (100-220 Hz)
    through three formant resonators, in syllables. Speech codecs (CELP) code
    it faithfully enough to align, and, unlike a steady tone, no period of it
    repeats, so the cross-correlation has a single peak."""
    from scipy.signal import lfilter  # scipy.signal costs ~1 s to import: only where a codec runs

    rng = np.random.default_rng(seed)
    length = int(seconds * rate)
    pulses = np.zeros(length)
    position = 0
    while position < length:
        pulses[position] = 1.0
        position += int(rate / rng.uniform(100, 220))
    voiced = pulses
    for formant, bandwidth in ((600, 90), (1400, 120), (2500, 180)):
        radius = np.exp(-np.pi * bandwidth / rate)
        angle = 2 * np.pi * min(formant, 0.45 * rate) / rate
        voiced = lfilter([1 - radius], [1, -2 * radius * np.cos(angle), radius**2], voiced)
    syllables = 0.5 - 0.5 * np.cos(2 * np.pi * 4 * np.arange(length) / rate)
    signal = voiced * syllables
    return (0.1 * signal / np.sqrt(np.mean(signal**2))).astype(np.float32)


def missing(setting: Codec) -> str:
    """"" when the installed FFmpeg encodes and decodes with ``setting``; else what it lacks."""
    import av

    try:
        av.codec.Codec(setting.encoder, "w")
    except Exception:
        return f"the installed FFmpeg ({ffmpeg_version()}) has no {setting.encoder} encoder. Install: {INSTALL}"
    try:
        codec_delay(setting, setting.rate)  # a real round trip: the decoder and container work too
    except Exception as error:
        return f"a {setting.encoder} round trip fails with the installed FFmpeg ({ffmpeg_version()}): {error}. Install: {INSTALL}"
    return ""


def ffmpeg_version() -> str:
    import av

    return f"FFmpeg {av.ffmpeg_version_info}, PyAV {av.__version__}"


def describe(setting: Codec) -> dict[str, object]:
    import av

    encoder = av.codec.Codec(setting.encoder, "w")
    return {
        "ffmpeg": av.ffmpeg_version_info,
        "pyav": av.__version__,
        "encoder": f"{encoder.name} ({encoder.long_name})",
        "decoder": decoder_name(setting),
        "container": setting.container,
        "codec_delay": f"{codec_delay(setting, setting.rate):.2f} samples at {setting.rate} Hz (removed; measured again at each clip rate)",
    }


def decoder_name(setting: Codec) -> str:
    """The decoder FFmpeg picks for the container's stream (libopus encodes;
    FFmpeg's native decoder decodes)."""
    import av

    with av.open(io.BytesIO(encode(np.zeros(setting.rate // 10, np.float32), setting)), "r", format=setting.container) as container:
        codec = container.streams.audio[0].codec_context.codec
        return f"{codec.name} ({codec.long_name})"


def av_version() -> str:
    import av

    return f"{av.__version__} (FFmpeg {av.ffmpeg_version_info})"


def codec_condition(name: str, setting: Codec) -> ConditionSpec:
    """A round trip through ``setting`` as a condition (a plugin may add its own codecs)."""
    return ConditionSpec(
        name=name,
        transform=functools.partial(round_trip, codec=setting),
        description=setting.description,
        parameters={"encoder": setting.encoder, "codec_rate": setting.rate, "bit_rate": setting.bit_rate, "container": setting.container},
        requires=("av",),
        install=INSTALL,
        version=av_version,
        missing=functools.partial(missing, setting),
        describe=functools.partial(describe, setting),
    )


@hookimpl
def register_conditions(register):
    for name, setting in CODECS.items():
        register(codec_condition(name, setting))
