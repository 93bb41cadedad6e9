"""``musdb``: MUSDB18-HQ (and MUSDB18) as voice-versus-music clips.

Layout (Rafii et al. 2017/2019; sigsep): ``<root>/{train,test}/<Artist - Title>/``
``{mixture,drums,bass,other,vocals}.wav``, 44.1 kHz stereo (MUSDB18-HQ), or
``<root>/{train,test}/<Artist - Title>.stem.mp4`` with streams mixture 0, drums 1,
bass 2, other 3, vocals 4 (lossy MUSDB18; decoded with PyAV, ``pip install av``,
whose wheels bundle FFmpeg: no system ffmpeg needed).

* clean = vocals (the target); noise = drums + bass + other; noisy = the sum of
  the four stems, so that noisy = clean + noise holds exactly and the music
  stem the metrics use is the one the engine heard. MUSDB18-HQ's mixture.wav
  equals that sum up to 16-bit rounding; each excerpt is checked and a clip
  whose mixture.wav differs by more than the rounding says so in its notes.
  (In lossy MUSDB18 the mixture stream is a separate AAC encoding, never the
  exact sum, so it is not read.)
* Stereo is downmixed to mono by averaging the channels (noted). Scored at the
  native 44.1 kHz, or at ``--musdb-rate``.
* Tracks are cut into consecutive ``--musdb-excerpt-seconds`` excerpts (default 10;
  0 = whole tracks, the Music Demixing challenge's unit). A tail shorter than
  an excerpt is dropped so every clip has the same length; a track shorter than
  one excerpt is kept whole. Only an excerpt's own frames are read.
* An excerpt without voice is a music-only clip (clean = silence, cell
  ``music-only``), so music attenuation covers it. Without voice means: none of
  its 20 ms segments of vocals is voice-active, active being the rule the level
  metrics use (within 40 dB of the loudest 20 ms segment), applied to the
  *track's* loudest vocal segment (an excerpt is judged against the singer's
  level in that song, not against its own quiet bleed), plus a floor of -60 dBFS
  RMS, so a vocals stem holding only noise or bleed is not mistaken for a voice.
  Vocal activity is measured once per track and cached under ``$NSBENCH_CACHE``.

Official script: the Music Demixing Challenge 2021 starter kit
(AIcrowd/music-demixing-challenge-starter-kit ``evaluator/music_demixing.py``,
``scoring``: ``sdr`` with ``delta = 1e-7``, about lines 75-82, and a song's
score as the mean over its four stems, line 108; the leaderboard is the mean
over songs). ``metrics/demixing.py`` matches that formula to 1e-6 dB. The
figures **cannot stand beside the leaderboard**, by design: nsbench scores two
stems (the voice, and the accompaniment as noisy minus output) where the
challenge scores bass, drums, other and vocals; it scores 10 s excerpts by
default where the challenge scores whole tracks (``--musdb-excerpt-seconds 0``
gives whole tracks, and then the mean over clips is a mean over songs); it
downmixes to mono where the challenge scores stereo; and it feeds engines the
sum of the stems, not ``mixture.wav``. What does carry over: per track, the mean
over its stems (``mdx_sdr``), then the mean over tracks (the ``mean`` of
``mdx_sdr``).
"""
from __future__ import annotations

import functools
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import soundfile

from nsbench.adapters import SILENCE_BELOW_DB, write_atomically_with, cache_root, plural, read_audio, resample, segment_length
from nsbench import Clip, ClipError, ClipSource, DatasetSpec, UserError, hookimpl

SPLITS = ("test", "train")
DEFAULT_SPLIT = "test"
NATIVE_RATE = 44100
DEFAULT_EXCERPT_SECONDS = 10.0
STEMS = ("drums", "bass", "other", "vocals")
MUSIC_STEMS = ("drums", "bass", "other")
HQ_FILES = ("mixture", *STEMS)
STEM_MP4 = ".stem.mp4"
MP4_STREAMS = {"mixture": 0, "drums": 1, "bass": 2, "other": 3, "vocals": 4}
VOICE_FLOOR_DBFS = -60.0  # a 20 ms vocals segment quieter than this is never voice
# mixture.wav may differ from the sum of the stems by the 16-bit rounding of the
# five files (at most 2.5 LSB); more than 3 LSB is a real difference worth a note.
MIXTURE_TOLERANCE = 3 / 32768
PREROLL_SECONDS = 0.2  # AAC decoded before an excerpt's start after a seek, then dropped
CACHE_VERSION = 1
VOICED, MUSIC_ONLY = "voice+music", "music-only"
INSTALL_AV = "pip install av"
SHOWN = 10


def shown(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (" ..." if len(items) > SHOWN else "") if items else "nothing"


@dataclass(frozen=True)
class Track:
    name: str  # "Artist - Title"
    path: Path  # the track's folder (MUSDB18-HQ) or its .stem.mp4 (MUSDB18)

    @property
    def lossy(self) -> bool:
        return self.path.name.endswith(STEM_MP4)


# --------------------------------------------------------------------------- layout


def find_tracks(root: Path, split: str) -> list[Track]:
    folder = root / split
    expected = (
        f"musdb expects {root}/{split}/<Artist - Title>/{{{','.join(HQ_FILES)}}}.wav (MUSDB18-HQ) "
        f"or {root}/{split}/<Artist - Title>{STEM_MP4} (MUSDB18)"
    )
    if not folder.is_dir():
        found = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
        raise UserError(f"{expected}; there is no {split}/ in {root}, found: {shown(found)}")
    tracks, incomplete, other = [], [], []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            missing = [f"{name}.wav" for name in HQ_FILES if not (entry / f"{name}.wav").is_file()]
            if missing:
                incomplete.append(f"{entry.name} (missing {', '.join(missing)})")
            else:
                tracks.append(Track(entry.name, entry))
        elif entry.name.endswith(STEM_MP4):
            tracks.append(Track(entry.name[: -len(STEM_MP4)], entry))
        else:
            other.append(entry.name)
    if incomplete:
        raise UserError(f"{len(incomplete)} track folders in {folder} are incomplete: {shown(incomplete)}")
    if not tracks:
        raise UserError(f"{expected}; found no track in {folder}, only: {shown(other)}")
    if any(track.lossy for track in tracks) and not module_installed("av"):
        raise UserError(f"{folder} holds MUSDB18 {STEM_MP4} files; decoding them needs PyAV: {INSTALL_AV}")
    return tracks


def module_installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


# --------------------------------------------------------------------------- reading


def decode_mp4(path: Path, stream: int, start: int = 0, frames: int = -1) -> tuple[np.ndarray, int]:
    """One stream of a .stem.mp4 as float32 mono, frames [start, start + frames)."""
    import av

    try:
        with av.open(str(path)) as container:
            audio = container.streams.audio[stream]
            rate = audio.codec_context.sample_rate
            begin = max(0, start - int(PREROLL_SECONDS * rate))
            if begin:
                container.seek(int(begin / rate / audio.time_base), stream=audio)
            pieces, position = [], None
            stop = start + frames if frames >= 0 else None
            for frame in container.decode(audio=stream):
                if frame.pts is not None:
                    position = int(round(frame.pts * frame.time_base * rate))
                elif position is None:
                    position = 0
                data = frame.to_ndarray()
                if not frame.format.is_planar:
                    data = data.reshape(-1, len(frame.layout.channels)).T
                mono = data.astype(np.float32).mean(axis=0)
                pieces.append((position, mono))
                position += len(mono)
                if stop is not None and position >= stop:
                    break
    except (av.error.FFmpegError, IndexError, OSError) as error:
        raise ClipError(f"cannot decode stream {stream} of {path}: {error}") from error
    return assemble(pieces, start, frames), rate


def assemble(pieces: list[tuple[int, np.ndarray]], start: int, frames: int) -> np.ndarray:
    """Place decoded frames by their position and cut [start, start + frames)."""
    end = max((p + len(a) for p, a in pieces), default=start)
    stop = end if frames < 0 else min(start + frames, end)
    out = np.zeros(max(0, stop - start), dtype=np.float32)
    for position, audio in pieces:
        lo, hi = max(position, start), min(position + len(audio), stop)
        if lo < hi:
            out[lo - start : hi - start] = audio[lo - position : hi - position]
    return out


def read_stems(track: Track, start: int, frames: int) -> tuple[dict[str, np.ndarray], int, list[str]]:
    """The four stems (and mixture.wav for MUSDB18-HQ) of one excerpt, mono."""
    stems, rates, notes = {}, set(), []
    if track.lossy:
        for name in STEMS:
            stems[name], rate = decode_mp4(track.path, MP4_STREAMS[name], start, frames)
            rates.add(rate)
        notes.append(f"{STEM_MP4}: lossy AAC stems averaged to mono")
    else:
        for name in HQ_FILES:
            stems[name], rate, file_notes = read_audio(track.path / f"{name}.wav", start=start, frames=frames)
            rates.add(rate)
            if file_notes and not notes:
                notes.append("stereo stems downmixed to mono (channel average)")
    if len(rates) != 1:
        raise ClipError(f"{track.name}: stems at different rates {sorted(rates)}")
    length = min(len(audio) for audio in stems.values())
    if any(len(audio) != length for audio in stems.values()):
        notes.append(f"stem lengths differ: trimmed to {length} samples")
    return {name: audio[:length] for name, audio in stems.items()}, rates.pop(), notes


# --------------------------------------------------------------------------- vocal activity


@dataclass(frozen=True)
class VocalActivity:
    rate: int
    frames: int
    segment_power: np.ndarray  # mean square of each 20 ms segment of the mono vocals


def cache_path(track: Track) -> Path:
    vocals = track.path if track.lossy else track.path / "vocals.wav"
    stat = vocals.stat()
    key = f"{vocals.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    base = cache_root()
    return base / "musdb-vocals" / f"v{CACHE_VERSION}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.npz"


def segment_powers(blocks, seg: int) -> tuple[np.ndarray, int]:
    """Mean square per ``seg`` samples over an iterator of mono blocks whose
    lengths are multiples of ``seg`` (except the last); and the total length."""
    powers, total = [], 0
    for block in blocks:
        squares = np.square(block.astype(np.float64))
        total += len(squares)
        starts = np.arange(0, len(squares), seg)
        if len(squares):
            sums = np.add.reduceat(squares, starts)
            lengths = np.minimum(starts + seg, len(squares)) - starts
            powers.append(sums / lengths)
    return (np.concatenate(powers) if powers else np.zeros(0)), total


def measure(track: Track) -> VocalActivity:
    if track.lossy:
        vocals, rate = decode_mp4(track.path, MP4_STREAMS["vocals"])
        seg = segment_length(rate)
        powers, frames = segment_powers([vocals], seg)
        return VocalActivity(rate, frames, powers)
    path = track.path / "vocals.wav"
    try:
        rate = soundfile.info(str(path)).samplerate
        seg = segment_length(rate)
        blocks = (
            block.mean(axis=1)
            for block in soundfile.blocks(str(path), blocksize=seg * 1000, dtype="float32", always_2d=True)
        )
        powers, frames = segment_powers(blocks, seg)
    except Exception as error:  # soundfile raises several types for bad files
        raise UserError(f"musdb: cannot read {path}: {error}") from error
    return VocalActivity(rate, frames, powers)


def vocal_activity(track: Track) -> VocalActivity:
    path = cache_path(track)
    try:
        with np.load(path) as stored:
            return VocalActivity(int(stored["rate"]), int(stored["frames"]), stored["segment_power"])
    except (OSError, KeyError, ValueError):
        pass
    activity = measure(track)
    try:
        write_atomically_with(path, lambda temporary: np.savez(
            temporary, rate=activity.rate, frames=activity.frames, segment_power=activity.segment_power,
        ), suffix=".tmp.npz")  # np.savez adds .npz to a name without it
    except OSError:
        pass  # an unwritable cache only costs the next run the same reading
    return activity


def has_voice(activity: VocalActivity, start: int, frames: int) -> bool:
    """Whether any 20 ms segment starting in the excerpt is voice-active (see module docstring)."""
    powers = activity.segment_power
    if not powers.size:
        return False
    seg = segment_length(activity.rate)
    threshold = max(powers.max() * 10 ** (-SILENCE_BELOW_DB / 10), 10 ** (VOICE_FLOOR_DBFS / 10))
    excerpt = powers[-(-start // seg) : -(-(start + frames) // seg)]  # segments starting inside the excerpt
    return bool(np.any(excerpt >= threshold))


# --------------------------------------------------------------------------- clips


def excerpts(frames: int, rate: int, seconds: float) -> list[tuple[int, int]]:
    """(start, length) of each excerpt; a short tail is dropped, a short track kept whole."""
    length = int(round(seconds * rate))
    if length <= 0 or frames < length:
        return [(0, frames)]
    return [(start, length) for start in range(0, frames - length + 1, length)]


def load_excerpt(
    clip_id: str, track: Track, start: int, frames: int, voiced: bool, labels: Mapping[str, str], rate: int
) -> Clip:
    stems, file_rate, notes = read_stems(track, start, frames)
    vocals = stems["vocals"].astype(np.float64)
    music = sum(stems[name].astype(np.float64) for name in MUSIC_STEMS)
    total = vocals + music
    if "mixture" in stems:
        difference = float(np.max(np.abs(stems["mixture"] - total))) if len(total) else 0.0
        if difference > MIXTURE_TOLERANCE:
            notes.append(
                f"mixture.wav differs from the sum of the stems by up to {difference * 32768:.0f} LSB: scored on the sum"
            )
    if voiced:
        clean, noise = vocals, music
    else:
        # The user wants silence: whatever the vocals stem holds (bleed, breath) is part of what to remove.
        clean, noise = np.zeros_like(total), total
        notes.append(
            f"no 20 ms vocals segment within {SILENCE_BELOW_DB:g} dB of the track's loudest "
            f"and above {VOICE_FLOOR_DBFS:g} dBFS: music-only, clean is silence"
        )
    clean, noise = clean.astype(np.float32), noise.astype(np.float32)
    if rate != file_rate:
        notes.append(f"resampled from {file_rate} Hz to {rate} Hz")
        clean, noise = resample(clean, file_rate, rate), resample(noise, file_rate, rate)
    return Clip(
        clip_id=clip_id,
        noisy=clean + noise,
        clean=clean,
        noise=noise,
        sample_rate=rate,
        labels=dict(labels),
        notes=tuple(notes),
        source_path=str(track.path),
    )


def settings(options: Mapping[str, Any]) -> tuple[Path, str, float, int]:
    seconds = options.get("musdb_excerpt_seconds")
    seconds = DEFAULT_EXCERPT_SECONDS if seconds is None else float(seconds)
    if seconds < 0:
        raise UserError(f"--musdb-excerpt-seconds must be 0 (whole tracks) or positive, got {seconds:g}")
    rate = int(options.get("musdb_rate") or NATIVE_RATE)
    if rate <= 0:
        raise UserError(f"--musdb-rate must be positive, got {rate}")
    return Path(options["data_folder"]), options.get("musdb_split") or DEFAULT_SPLIT, seconds, rate


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    root, split, seconds, rate = settings(options)
    tracks = find_tracks(root, split)
    uncached = [t for t in tracks if not cache_path(t).is_file()]
    if uncached:
        print(f"nsbench: musdb: measuring the vocal activity of {plural(len(uncached), 'track')} (once, cached)", file=sys.stderr)
    made = []
    for track in tracks:
        activity = vocal_activity(track)
        for start, frames in excerpts(activity.frames, activity.rate, seconds):
            voiced = has_voice(activity, start, frames)
            start_seconds = start / activity.rate
            labels = {
                "content": VOICED if voiced else MUSIC_ONLY,
                "track": track.name,
                "start_s": f"{start_seconds:g}",
                "voice": "vocals" if voiced else "none",
            }
            clip_id = track.name if seconds == 0 else f"{track.name}/{start_seconds:g}s"
            load = functools.partial(load_excerpt, clip_id, track, start, frames, voiced, labels, rate)
            made.append(ClipSource(clip_id=clip_id, load=load, labels=labels))
    return made


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    root, split, seconds, rate = settings(options)
    tracks = find_tracks(root, split)
    digest = hashlib.sha256()
    for track in tracks:
        files = [track.path] if track.lossy else [track.path / f"{name}.wav" for name in HQ_FILES]
        for path in files:
            digest.update(f"{track.name}/{path.name}:{path.stat().st_size}\n".encode())
    return {
        "data_folder": str(root.resolve()),
        "split": split,
        "tracks": len(tracks),
        "format": "MUSDB18 (lossy .stem.mp4)" if any(t.lossy for t in tracks) else "MUSDB18-HQ (wav)",
        "musdb_excerpt_seconds": seconds or "whole tracks",
        "sample_rate": rate,
        "noisy": "sum of the four stems (mono average of the stereo channels)",
        "music_only_rule": (
            f"no 20 ms vocals segment within {SILENCE_BELOW_DB:g} dB of the track's loudest "
            f"and above {VOICE_FLOOR_DBFS:g} dBFS"
        ),
        "listing_sha256": digest.hexdigest(),
    }


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--musdb-split", choices=SPLITS, default=DEFAULT_SPLIT, help="musdb: which split to score (default test)"
    )
    parser.add_argument(
        "--musdb-excerpt-seconds", type=float, default=DEFAULT_EXCERPT_SECONDS, metavar="S",
        help="musdb: cut tracks into consecutive excerpts of S seconds (default 10; 0 = whole tracks)",
    )
    parser.add_argument(
        "--musdb-rate", type=int, default=NATIVE_RATE, metavar="HZ",
        help="musdb: rate clips are scored at (default 44100, the native rate)",
    )


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="musdb",
            clips=clips,
            description="MUSDB18-HQ vocals vs accompaniment in 10 s excerpts, music-only excerpts kept (--data-folder; --musdb-split, --musdb-excerpt-seconds, --musdb-rate)",
            cell_keys=("content",),
            needs_data_folder=True,
            describe=describe,
            table_metrics=("mdx_sdr",),
        )
    )
