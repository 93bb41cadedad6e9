"""Reading, writing and resampling audio. One place for each, used by every adapter."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import numpy as np
import soundfile
import soxr

from nsbench.audio.blocks import count_where, peak, spans
from nsbench.text import plural
from nsbench.plugins.records import Clip
from nsbench.plugins.errors import ClipError

# soxr's "HQ" is what librosa's default res_type ("soxr_hq") runs.
RESAMPLE_QUALITY = "HQ"
# The largest 16-bit sample as float: a recording that reaches it (or -1.0) is clipped.
FULL_SCALE = 32767 / 32768
# Audio nsbench scores peaks within this many dB of full scale either way
# (silence aside: all zeros). Below, the metrics' own epsilons swamp the signal:
# STOI of a clip at -295 dBFS is 0.617 where at full scale it is 0.725, at
# -199 dBFS within 0.001 of it; and -200 dBFS is 60 dB below the smallest step of
# 24-bit audio, so no recording is refused. Above, float32 arithmetic soon
# overflows: a product of two spectra of a million samples at +260 dBFS
# (1e6 x 1e13, squared) passes float32's 3.4e38; at +200 it is 1e32. Int32
# samples read as floats peak at +187 dBFS.
LEVEL_LIMIT_DB = 200.0


def resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Mono (samples,) or several sources (sources, samples)."""
    if from_rate == to_rate:
        return audio
    # soxr takes (samples, channels): sources go through as channels.
    return soxr.resample(audio.T, from_rate, to_rate, quality=RESAMPLE_QUALITY).T.astype(np.float32)


def fit_length(audio: np.ndarray, length: int) -> np.ndarray:
    """Trim or zero-pad the end (last axis) to ``length`` samples."""
    if audio.shape[-1] >= length:
        return audio[..., :length]
    padding = np.zeros((*audio.shape[:-1], length - audio.shape[-1]), dtype=audio.dtype)
    return np.concatenate([audio, padding], axis=-1)


def read_audio(
    path: str | Path, *, start: int = 0, frames: int = -1, first_channel: bool = False
) -> tuple[np.ndarray, int, list[str]]:
    """Read a file as float32 mono. Returns (audio, rate, notes).

    ``start`` and ``frames`` read only that part of the file (frames at the
    file's rate; ``frames=-1`` reads to the end), so an excerpt of a long track
    costs only its own samples. Multichannel audio is downmixed by averaging,
    with a note; with ``first_channel`` only the first channel is kept (as
    FUSS's reader does), and the caller says so. An unreadable, empty or
    non-finite file raises ClipError naming the file.
    """
    try:
        data, rate = soundfile.read(str(path), frames=frames, start=start, dtype="float32", always_2d=True)
    except Exception as error:  # soundfile raises several types for bad files
        raise ClipError(f"cannot read {path}: {read_failure(path, error)}") from error
    notes = []
    if data.shape[1] > 1 and not first_channel:
        notes.append(f"{Path(path).name}: {data.shape[1]} channels downmixed to mono")
    # Mono as it was read (the mean of one channel is that channel): no second
    # copy of a long file.
    if data.shape[1] == 1:
        audio = data.reshape(len(data))
    else:
        audio = np.ascontiguousarray(data[:, 0]) if first_channel else data.mean(axis=1, dtype=np.float32)
    if len(audio) == 0:
        raise ClipError(f"{path} holds no samples")
    bad = non_finite(audio)
    if bad:
        raise ClipError(f"{path} contains {bad}")
    return audio, int(rate), notes


def non_finite(audio: np.ndarray) -> str:
    """"N NaN or Inf samples (the first at sample K)", or "" when every
    sample is finite; counted block by block, with no full-size temporary."""
    flat = audio.reshape(-1)
    bad = count_where(flat, lambda part: ~np.isfinite(part))
    if not bad:
        return ""
    first = next(span.start + int(np.flatnonzero(~np.isfinite(flat[span]))[0])
                 for span in spans(len(flat)) if not np.isfinite(flat[span]).all())
    return f"{plural(bad, 'NaN or Inf sample')} (the first at sample {first})"


def level_problem(audio: np.ndarray, floor: bool = True) -> str:
    """"" when ``audio`` is silence (all zeros) or peaks within LEVEL_LIMIT_DB
    of full scale (above it only, without ``floor``); else where it peaks and
    why that is not scored, for an error."""
    top = peak(audio)
    if top == 0.0:
        return ""
    level = 20 * np.log10(top)
    if level > LEVEL_LIMIT_DB:
        return f"peaks at {level:+.1f} dBFS, above the +{LEVEL_LIMIT_DB:g} dBFS nsbench scores (float32 arithmetic overflows not far beyond)"
    if floor and level < -LEVEL_LIMIT_DB:
        return (f"peaks at {level:+.1f} dBFS, below the -{LEVEL_LIMIT_DB:g} dBFS nsbench scores "
                "(the metrics' precision is lost there; silence is written as zeros)")
    return ""


def read_failure(path: str | Path, error: Exception) -> str:
    """Why a file could not be read, in a few words: libsndfile says "System
    error." for a missing file and repeats the path in its message."""
    file = Path(path)
    if file.is_symlink() and not file.exists():
        return "a symbolic link that loops or leads nowhere"
    if not file.is_file():
        return "no such file"
    if not os.access(file, os.R_OK):
        return "permission denied"
    if file.stat().st_size == 0:
        return "the file is empty (0 bytes)"
    return str(getattr(error, "error_string", "") or error).rstrip(".")


def full_scale_note(role: str, audio: np.ndarray) -> str | None:
    """A note when ``audio`` reaches 16-bit full scale (a clipped recording?) or
    goes beyond it (float files can): scored as it is either way, but engines
    that take 16-bit audio clip what lies beyond."""
    beyond = count_where(audio, lambda part: np.abs(part) > 1.0)
    at = count_where(audio, lambda part: (part >= FULL_SCALE) | (part <= -1.0)) - beyond
    if beyond:
        reach = f"reaches full scale on {plural(at, 'sample')} and " if at else ""
        return (
            f"{role} {reach}goes beyond it (|x| > 1) on {plural(beyond, 'sample')}: scored as it is; "
            "engines that take 16-bit audio clip them"
        )
    if at:
        return f"{role} reaches full scale on {plural(at, 'sample')} (a clipped recording?): scored as it is"
    return None


def write_audio(path: str | Path, audio: np.ndarray, rate: int) -> None:
    """Mono, or (sources, samples) as one channel per source."""
    # Float WAV keeps engine outputs unquantised for later listening or re-scoring.
    # The format is said, not guessed from the name: a clip named ``..``
    # gives ``...wav``, in which libsndfile sees no extension.
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio.T, rate, subtype="FLOAT", format="WAV")


def load_pair(
    clip_id: str,
    noisy_path: str,
    clean_path: str,
    labels: Mapping[str, str],
    noise_path: str = "",
    target_rate: int = 0,
) -> Clip:
    """Load a noisy/clean pair (and optional noise stem) as a Clip.

    The clip's rate is ``target_rate`` if given, else the noisy file's. Files at
    another rate are resampled, and files of different lengths are trimmed to
    the shortest; each treatment is noted on the clip, and so is a noisy or
    clean file that reaches 16-bit full scale (clipped) or goes beyond it.
    """
    noisy, noisy_rate, notes = read_audio(noisy_path)
    clean, clean_rate, clean_notes = read_audio(clean_path)
    notes += clean_notes
    rate = target_rate or noisy_rate
    arrays = {"noisy": (noisy, noisy_rate), "clean": (clean, clean_rate)}
    if noise_path:
        noise, noise_rate, noise_notes = read_audio(noise_path)
        notes += noise_notes
        arrays["noise"] = (noise, noise_rate)
    converted = {}
    for role, (audio, audio_rate) in arrays.items():
        if audio_rate != rate:
            notes.append(f"{role} resampled from {audio_rate} Hz to {rate} Hz")
        converted[role] = resample(audio, audio_rate, rate)
    length = min(len(audio) for audio in converted.values())
    if any(len(audio) != length for audio in converted.values()):
        lengths = ", ".join(f"{role} {len(audio)}" for role, audio in converted.items())
        notes.append(f"lengths differ ({lengths} samples): trimmed to {length}")
    for role in ("noisy", "clean"):
        note = full_scale_note(role, converted[role][:length])
        if note:
            notes.append(note)
    return Clip(
        clip_id=clip_id,
        noisy=converted["noisy"][:length],
        clean=converted["clean"][:length],
        noise=converted["noise"][:length] if "noise" in converted else None,
        sample_rate=rate,
        labels=dict(labels),
        notes=tuple(notes),
        source_path=str(noisy_path),
    )


def load_noisy(clip_id: str, noisy_path: str, labels: Mapping[str, str], target_rate: int = 0) -> Clip:
    """A noisy file alone as a Clip without a clean reference (``clean`` None):
    resampled to ``target_rate`` if given, noted so, and noted where it
    reaches 16-bit full scale."""
    noisy, rate, notes = read_audio(noisy_path)
    if target_rate and target_rate != rate:
        notes.append(f"noisy resampled from {rate} Hz to {target_rate} Hz")
        noisy, rate = resample(noisy, rate, target_rate), target_rate
    note = full_scale_note("noisy", noisy)
    if note:
        notes.append(note)
    return Clip(clip_id=clip_id, noisy=noisy, clean=None, sample_rate=rate, labels=dict(labels),
                notes=tuple(notes), source_path=str(noisy_path))
