"""The cache folder, digests and files written whole or not at all: datasets
that prepare files, engines' fingerprints.

Public (docs/adapters.md): import these from ``nsbench.adapters``. Each is
defined here over nsbench's store (internal), so a move there changes
nothing a plugin calls."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from nsbench.store import atomic, cache, digests

__all__ = ["cache_root", "file_digest", "files_digest", "json_text", "write_json_atomically", "write_audio_atomically",
           "write_atomically_with", "staged_folder"]


def cache_root() -> Path:
    """Where nsbench keeps what it made: $NSBENCH_CACHE, else ~/.cache/nsbench."""
    return cache.cache_root()


def file_digest(path: str | Path) -> str:
    """The sha256 of a file's content (hex)."""
    return digests.file_digest(path)


def files_digest(paths: Iterable[str | Path]) -> str:
    """One digest of the contents of those of ``paths`` that are files (an
    engine's fingerprint: a rebuilt program or model gets new cache keys)."""
    return digests.files_digest(paths)


def json_text(value: Any) -> str:
    """Canonical JSON text of a value (sorted keys), to digest or compare."""
    return digests.json_text(value)


def write_json_atomically(path: str | Path, value: Any, indent: int | None = None) -> None:
    """``value`` as JSON, written to a temporary name, then renamed: never half-written."""
    atomic.write_json(path, value, indent)


def write_audio_atomically(path: str | Path, samples: np.ndarray, rate: int, **options: Any) -> None:
    """An audio file (``options`` as soundfile.write takes them; give ``format``) written whole or not at all."""
    atomic.write_audio(path, samples, rate, **options)


def write_atomically_with(path: str | Path, write: Callable[[Path], Any], suffix: str = atomic.TEMPORARY_SUFFIX) -> None:
    """``write(temporary)`` makes the file, then it is renamed to ``path``
    (``suffix`` ends the temporary name, for a writer that reads the format from it)."""
    atomic.write_with(path, write, suffix)


@contextlib.contextmanager
def staged_folder(folder: str | Path, done: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """A temporary folder beside ``folder`` to fill, renamed into place when
    the block ends without error (``done(folder)``: another process's folder
    already there is whole), removed in any case."""
    with atomic.staged_folder(folder, done) as staged:
        yield staged
