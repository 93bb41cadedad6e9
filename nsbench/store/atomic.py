"""Atomic writes: the one way nsbench puts a file (or a folder) in place.

Every file another process or a later run may read (cache entries, results,
transcripts, remixed clips, a dataset's measurements) is written whole under
a temporary name in the same folder, then renamed over the target with
``os.replace``, which is atomic within one file system. A run killed at any
point leaves the old file or the new one, never half of either; a write that
fails removes its temporary file and leaves the old file as it was.

Nothing is fsynced, as before this module: a process killed mid-write loses
nothing, and a machine that loses power may leave a file empty, which every
reader treats as absent (the cache's entries carry a checksum for that).
Files get the permissions ``open`` gives (the umask's), not mkstemp's 0600:
a cache or a results folder may be shared.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import soundfile

TEMPORARY_SUFFIX = ".tmp"


def write_bytes(path: str | Path, *parts: bytes | memoryview) -> None:
    """The parts, one after another, as the file's whole contents (parts let
    a large array be written from its own memory, without joining)."""
    with temporary_beside(Path(path), TEMPORARY_SUFFIX) as (_, handle):
        with os.fdopen(handle, "wb") as file:
            for part in parts:
                file.write(part)


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    write_bytes(path, text.encode(encoding))


def write_json(path: str | Path, value: Any, indent: int | None = None) -> None:
    """``value`` as JSON; indented JSON (for people to read) ends with a newline."""
    write_text(path, json.dumps(value, indent=indent) + ("\n" if indent is not None else ""))


def write_audio(path: str | Path, samples: np.ndarray, rate: int, **options: Any) -> None:
    """An audio file, ``options`` as soundfile.write takes them (give
    ``format``: the temporary name's extension does not say it)."""
    write_with(path, lambda temporary: soundfile.write(temporary, samples, rate, **options))


def symlink(path: str | Path, target: str) -> None:
    """``path`` made a symbolic link to ``target``, replacing a link there at
    once: a reader follows the old link or the new one."""
    path = Path(path)
    staged = path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMPORARY_SUFFIX}")
    os.symlink(target, staged)
    try:
        os.replace(staged, path)
    except OSError:
        staged.unlink(missing_ok=True)
        raise


def write_with(path: str | Path, write: Callable[[Path], Any], suffix: str = TEMPORARY_SUFFIX) -> None:
    """``write(temporary)`` makes the file; it is then renamed to ``path``.
    ``suffix`` ends the temporary name, for a writer that reads the format
    from it (np.savez adds ".npz" to a name without it)."""
    with temporary_beside(Path(path), suffix) as (temporary, handle):
        os.close(handle)
        write(temporary)


@contextlib.contextmanager
def temporary_beside(path: Path, suffix: str) -> Iterator[tuple[Path, int]]:
    """(name, open descriptor) of a new empty file beside ``path``, renamed
    to ``path`` when the block ends without error, else removed. Hidden and
    named after the target (shortened: its name may be near the file
    system's limit), so one left by a killed process says what it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        temporary = path.with_name(f".{path.name[:80]}.{secrets.token_hex(4)}{suffix}")
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:  # another writer drew the same name: draw again
            continue
    replaced = False
    try:
        yield temporary, handle
        os.replace(temporary, path)
        replaced = True
    finally:
        if not replaced:  # writing failed or was interrupted
            temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def staged_folder(folder: str | Path, done: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """A temporary folder beside ``folder`` to fill; renamed to ``folder``
    when the block ends without error, removed in any case. Where the rename
    fails because another process put its folder there first, ``done(folder)``
    says whether theirs is complete (and ours, equal, is dropped) or the
    error stands."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        yield staging
        try:
            os.replace(staging, folder)
        except OSError:
            if done is None or not done(folder):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
