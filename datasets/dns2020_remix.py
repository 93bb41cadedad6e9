"""Remixing a noisy/clean pair at a chosen SNR, exactly as Picovoice's benchmark does.

Picovoice's ``remixer.py`` (noise-suppression-benchmark, ``RemixedDataset``):

- reads both files with ``soundfile.read`` (float64, int16 / 32768);
- ``noise = noisy - clean``;
- power(x) = the largest sum of squares over non-overlapping 512-sample frames
  starting at sample 0; a trailing partial frame is dropped
  (``num_frames = pcm.size // 512``);
- ``scale = sqrt(power(clean) / (power(noise) * 10 ** (0.1 * snr_db)))``;
- ``remix = clean + scale * noise``, written by ``soundfile.write`` with the WAV
  default subtype, PCM_16 (see :func:`to_pcm16` for what that does to the samples).

The published "original" STOI at each remix SNR is the STOI of that 16-bit file
against the clean file, so reproducing it needs the quantisation too.
"""
from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import soundfile

from nsbench import ClipError
from nsbench.adapters import write_audio_atomically

# Bump when the remix or its file format changes: it is part of the cache key.
REMIXER_VERSION = 1
# Picovoice's RemixedDataset.ENERGY_FRAME_LENGTH.
POWER_FRAME = 512
# libsndfile (every release up to 1.2.2) converts double to 16-bit PCM, with
# clipping on (python-soundfile turns it on for writing), by scaling to 32 bits,
# rounding, and keeping the top 16 bits: in effect floor(x * 32768).
_INT32_SCALE = float(2**31)
_TOP_BITS_SHIFT = 16


def peak_frame_power(audio: np.ndarray, frame: int = POWER_FRAME) -> float:
    """The largest sum of squares over non-overlapping ``frame``-sample frames
    from sample 0. Samples after the last whole frame are ignored, as in
    Picovoice's ``_energy``. Raises ValueError on audio shorter than one frame."""
    audio = np.asarray(audio, dtype=np.float64)
    count = len(audio) // frame
    if count == 0:
        raise ValueError(f"{len(audio)} samples: shorter than one {frame}-sample power frame")
    frames = audio[: count * frame].reshape(count, frame)
    return float(np.max(np.sum(frames**2, axis=1)))


def remix(clean: np.ndarray, noisy: np.ndarray, snr_db: float) -> np.ndarray:
    """``clean + g * (noisy - clean)`` with ``g`` chosen so that
    peak_frame_power(clean) / peak_frame_power(g * noise) = 10^(snr_db / 10).

    Float64, not quantised (:func:`to_pcm16` does what Picovoice's 16-bit write
    does). Raises ValueError when the SNR cannot be reached (different lengths,
    silent clean, noisy identical to clean).
    """
    clean = np.asarray(clean, dtype=np.float64)
    noisy = np.asarray(noisy, dtype=np.float64)
    if clean.shape != noisy.shape or clean.ndim != 1:
        raise ValueError(f"clean {clean.shape} and noisy {noisy.shape} must be mono and of equal length")
    noise = noisy - clean
    clean_power = peak_frame_power(clean)
    noise_power = peak_frame_power(noise)
    if clean_power == 0:
        raise ValueError("the clean signal is silent: no SNR can be set")
    if noise_power == 0:
        raise ValueError("noisy equals clean: there is no noise to scale")
    scale = np.sqrt(clean_power / (noise_power * 10 ** (0.1 * snr_db)))
    return clean + scale * noise


def to_pcm16(audio: np.ndarray) -> np.ndarray:
    """The int16 samples ``soundfile.write(path, audio, rate)`` stores in a WAV.

    libsndfile releases 1.0.28 to 1.2.2 (``d2les_clip_array``): scale by 2^31,
    ``lrint`` (round half to even), keep the top 16 bits (an arithmetic shift,
    so the net effect is floor(x * 32768), not rounding); values at or beyond
    full scale clip to 32767 / -32768. Done here rather than by libsndfile so a
    cached remix does not depend on the installed libsndfile version.
    """
    scaled = np.asarray(audio, dtype=np.float64) * _INT32_SCALE
    high = scaled >= _INT32_SCALE - 1
    low = scaled <= -_INT32_SCALE
    inside = np.clip(scaled, -_INT32_SCALE, _INT32_SCALE - 1)
    samples = np.rint(inside).astype(np.int64) >> _TOP_BITS_SHIFT
    samples[high] = np.iinfo(np.int16).max
    samples[low] = np.iinfo(np.int16).min
    return samples.astype(np.int16)


def remix_key(clean_bytes: bytes, noisy_bytes: bytes, snr_db: float) -> str:
    """Cache key: the two files' contents, the SNR and the remixer version."""
    digest = hashlib.sha256(f"nsbench-remix-v{REMIXER_VERSION}\n{float(snr_db)!r}\n".encode())
    digest.update(hashlib.sha256(clean_bytes).digest())
    digest.update(hashlib.sha256(noisy_bytes).digest())
    return digest.hexdigest()


def default_cache_folder() -> Path:
    from nsbench.adapters import cache_root

    return cache_root() / "remix"


def cached_remix(clean_path: str | Path, noisy_path: str | Path, snr_db: float, cache_folder: Path | None = None) -> Path:
    """The path of the 16-bit WAV remix of this pair at ``snr_db``, made once.

    Keyed by content, so a changed input file gets a new remix, and written
    atomically (temporary file, then rename), so a crash or a parallel run never
    leaves a half-written file under the final name. Raises ClipError when the
    pair cannot be remixed.
    """
    folder = cache_folder or default_cache_folder()
    clean_bytes, noisy_bytes = read_bytes(clean_path), read_bytes(noisy_path)
    path = folder / f"{remix_key(clean_bytes, noisy_bytes, snr_db)}.wav"
    if path.is_file():
        return path
    clean, clean_rate = read_like_picovoice(clean_bytes, clean_path)
    noisy, noisy_rate = read_like_picovoice(noisy_bytes, noisy_path)
    if clean_rate != noisy_rate:
        raise ClipError(f"cannot remix {noisy_path}: {noisy_rate} Hz, its clean file {clean_rate} Hz")
    try:
        mixed = remix(clean, noisy, snr_db)
    except ValueError as error:
        raise ClipError(f"cannot remix {noisy_path} at {snr_db:g} dB: {error}") from error
    try:
        write_atomically(path, to_pcm16(mixed), clean_rate)
    except Exception as error:  # a full disk, a read-only cache: the clip fails, not the run
        raise ClipError(f"cannot write the remix of {noisy_path} to {folder}: {error}") from error
    return path


def read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ClipError(f"cannot read {path}: {error.strerror or error}") from error


def read_like_picovoice(data: bytes, name: str | Path) -> tuple[np.ndarray, int]:
    """soundfile's float64 read, as Picovoice's remixer does (int16 / 32768)."""
    try:
        audio, rate = soundfile.read(io.BytesIO(data), dtype="float64")
    except Exception as error:  # soundfile raises several types for bad files
        raise ClipError(f"cannot read {name}: {error}") from error
    if audio.ndim != 1:
        raise ClipError(f"cannot remix {name}: {audio.shape[1]} channels, the remixer takes mono")
    return audio, int(rate)


def write_atomically(path: Path, samples: np.ndarray, rate: int) -> None:
    write_audio_atomically(path, samples, rate, subtype="PCM_16", format="WAV")
