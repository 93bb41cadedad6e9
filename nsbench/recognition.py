"""Word error rate: the normalisation, the score, and transcripts cached by audio.

Used by the ``wer`` metric (metrics/wer.py); any recogniser registered through
``register_recognisers`` goes through the same functions.

Transcripts are keyed by the audio (at the recogniser's rate) and the
recogniser's fingerprint (name, version, model files' sha256): the clean and
noisy transcripts of a clip are computed once and shared by every engine, and
by every run after, through ``<cache>/transcripts/``. An entry is written whole
under a temporary name and renamed, as the run cache's are.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from nsbench.audio.files import resample
from nsbench.store import atomic
from nsbench.store.digests import digest
from nsbench.plugins.errors import ClipError, MetricUndefined
from nsbench.plugins.records import Clip
from nsbench.plugins.specs import Recogniser, RecogniserSpec

TRANSCRIPTS_FOLDER = "transcripts"  # under the cache root

# Apostrophes and quotes typed in several ways become the ASCII apostrophe, so
# "don’t" and "don't" are one word.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
# Anything but letters, digits, apostrophes and white space: punctuation, hyphens, symbols.
_NOT_A_WORD_CHARACTER = re.compile(r"[^\w'\s]|_")


def normalise_transcript(text: str) -> str:
    """The one normalisation applied to reference and hypothesis before WER.

    Unicode NFKC; lower case; typographic apostrophes made ASCII; every other
    punctuation mark, hyphen or symbol replaced by a space (so "well-known"
    is two words, as recognisers' dictionaries mostly spell it); apostrophes
    kept inside words ("don't", "i'm") but stripped at a word's ends (quotes,
    "dogs'"); white space collapsed. Numbers stay as the transcript writes
    them ("42" and "forty two" differ): converting them would guess at how a
    number was spoken.
    """
    text = unicodedata.normalize("NFKC", text).lower().translate(_APOSTROPHES)
    text = _NOT_A_WORD_CHARACTER.sub(" ", text)
    words = (word.strip("'") for word in text.split())
    return " ".join(word for word in words if word)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, by jiwer,
    after normalise_transcript on both. An empty hypothesis deletes every word
    (1.0); an empty reference has no rate: MetricUndefined."""
    import jiwer  # only when the metric runs

    reference, hypothesis = normalise_transcript(reference), normalise_transcript(hypothesis)
    if not reference:
        raise MetricUndefined("the reference transcript has no words, so no word error rate")
    if not hypothesis:
        return 1.0
    return float(jiwer.wer(reference, hypothesis))


# --------------------------------------------------------------------------- transcripts


@functools.lru_cache(maxsize=4)
def built(spec: RecogniserSpec) -> Recogniser:
    """One recogniser per spec and process (PocketSphinx takes ~2 s to load).
    Built in the parent before worker processes fork, they inherit it."""
    return spec.factory()


def audio_key(audio: np.ndarray, fingerprint: str) -> str:
    samples = np.ascontiguousarray(audio, dtype=np.float32)
    return digest("transcript", fingerprint, str(samples.shape), samples.data.cast("B"))


class TranscriptStore:
    """Transcripts by audio and recogniser: in this process's memory and, when
    ``folder`` is set, on disk. Entries written before ``fresh_after`` (a
    time.time(); --rerun sets it to the run's start) are recomputed."""

    def __init__(self, spec: RecogniserSpec, fingerprint: str, folder: str | None, fresh_after: float = 0.0):
        self.spec, self.fingerprint = spec, fingerprint
        self.folder = Path(folder) if folder else None
        self.fresh_after = fresh_after
        self.memory: dict[str, str] = {}
        self.computed = 0  # transcripts this store had to compute (the benchmark counts them)

    def transcript(self, audio: np.ndarray, sample_rate: int) -> str:
        audio = resample(audio, sample_rate, self.spec.sample_rate)
        key = audio_key(audio, self.fingerprint)
        if key not in self.memory:
            text = self._read(key)
            if text is None:
                text = built(self.spec).transcribe(audio)
                if not isinstance(text, str):
                    raise TypeError(f"recogniser {self.spec.name} returned {type(text).__name__}, expected str")
                self.computed += 1
                self._write(key, text)
            self.memory[key] = text
        return self.memory[key]

    def _path(self, key: str) -> Path | None:
        return self.folder / key[:2] / f"{key}.txt" if self.folder else None

    def _read(self, key: str) -> str | None:
        path = self._path(key)
        try:
            if path is None or path.stat().st_mtime < self.fresh_after:
                return None
            return path.read_text(encoding="utf-8")
        except OSError:  # absent or unreadable: computed again
            return None

    def _write(self, key: str, text: str) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            atomic.write_text(path, text)
        except OSError:  # a full or read-only cache costs the sharing, not the score
            pass


@functools.lru_cache(maxsize=8)
def store_for(spec: RecogniserSpec, fingerprint: str, folder: str | None, fresh_after: float) -> TranscriptStore:
    """The process's store for these options: each engine's clips share it."""
    return TranscriptStore(spec, fingerprint, folder, fresh_after)


def load_with_transcript(load: Callable[[], Clip], text_path: str) -> Clip:
    """``load()``'s clip with the text of ``text_path`` as its transcript: a
    dataset's ClipSource.load where each clip has a text file (VoiceBank's
    testset_txt/). Read with the clip, so an unreadable file fails that clip only."""
    clip = load()
    try:
        text = Path(text_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ClipError(f"cannot read the transcript {text_path}: {getattr(error, 'strerror', None) or error}") from error
    return dataclasses.replace(clip, transcript=text.strip())


def with_text(load: Callable[[], Clip], text: str) -> Clip:
    """``load()``'s clip with ``text`` as its transcript (a transcripts.tsv row)."""
    return dataclasses.replace(load(), transcript=text)


def store_from_options(options: Mapping[str, Any]) -> TranscriptStore:
    return store_for(options["recogniser"], options["fingerprint"], options["transcripts"], options["fresh_after"])
