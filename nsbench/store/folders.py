"""The folders nsbench writes in: only its own, one run at a time, and
whatever names it is given stay inside them.

A folder is nsbench's when nsbench made it, found it empty, or finds its
marker (``MARKER``) in it; ``claim`` refuses any other before anything is
written there, so ``--output-folder`` set to a data folder never rewrites its
noisy/ and clean/ files, and a folder of somebody else's files is never
emptied. ``claim`` also tries a write there first, so a read-only or missing
folder is one line before the first clip rather than a traceback after it.

The marker is the lock too: ``held`` keeps an exclusive ``flock`` on it while
a run writes the folder, and writes in it who holds it (pid, start, command),
which a second run names when it refuses. The kernel releases a flock when
its process ends, however it ends, so the lock of a killed run is free for
the next one: there is no stale pid file to judge, and a reused pid cannot
hold a folder.

``inside`` is where a name from a plugin (a clip id) becomes a path: it
refuses one that would leave its folder.
"""
from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import os
import sys
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from nsbench.plugins.errors import UserError

MARKER = ".nsbench"
# A path part longer than this cannot be a file name on common file systems
# (255 bytes), once a seed suffix and ".wav" are added.
LONGEST_PART = 200
# What flock raises where the file system has no locks.
NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS}
# What a full disk, a quota or a read-only folder raise: the run stops in one
# line (ENOTDIR: a file stands where a folder of the path should).
UNWRITABLE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG, errno.EIO, errno.ENOTDIR}


class FolderRefused(UserError):
    """A folder nsbench may not, or cannot, write in; or a write in it failed
    (a full disk): the run stops there, in one line."""


def claim(folder: Path, role: str, adopt: Callable[[Path], bool] = lambda folder: False) -> Path:
    """Makes ``folder`` nsbench's (made if missing) and returns its marker.
    ``role`` names it in the messages ("the results folder"); ``adopt(folder)``
    says whether an unmarked folder with files is nsbench's all the same
    (one written before markers existed)."""
    marker = folder / MARKER
    with stop_on_failure(folder, role):
        if folder.exists() and not folder.is_dir():
            raise FolderRefused(f"{role} {folder} is a file, not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        if not marker.is_file() and any(folder.iterdir()) and not adopt(folder):
            raise FolderRefused(f"{role} {folder} holds files nsbench did not write (it has no {MARKER} marker): "
                                "give a new or empty folder, or move those files away")
        try_a_write(folder)
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o666))
    return marker


def try_a_write(folder: Path) -> None:
    """Creates and removes a file in ``folder``: raises what the first real write would."""
    probe = folder / f"{MARKER}-probe-{os.getpid()}"
    os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666))
    probe.unlink()


@contextlib.contextmanager
def held(folder: Path, role: str, command: str, adopt: Callable[[Path], bool] = lambda folder: False) -> Iterator[None]:
    """``folder`` claimed and locked for this run until the block ends; a
    folder another run holds is refused in one line that names that run."""
    marker = claim(folder, role, adopt)
    with stop_on_failure(folder, role):
        handle = os.open(marker, os.O_RDWR)
    try:
        lock(handle, folder, role)
        with stop_on_failure(folder, role):
            os.ftruncate(handle, 0)
            os.pwrite(handle, json.dumps(owner(command)).encode(), 0)
        yield
    finally:
        os.close(handle)  # releases the lock; the marker stays


def lock(handle: int, folder: Path, role: str) -> None:
    """An exclusive lock on the open marker, or FolderRefused naming who holds it."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise FolderRefused(f"{role} {folder} is in use by another nsbench run ({holder(handle)}): "
                            "wait for it to end, or give this run another folder") from None
    except OSError as error:  # a network file system without locks: the run goes on, said
        if error.errno not in NO_LOCKS:
            raise
        print(f"nsbench: cannot lock {role} {folder} ({error.strerror}): no other run may write there meanwhile",
              file=sys.stderr)


def owner(command: str) -> dict[str, object]:
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return {"pid": os.getpid(), "started": started, "command_line": command}


def holder(handle: int) -> str:
    """Who holds the lock, as its marker says."""
    try:
        found = json.loads(os.pread(handle, 64 * 1024, 0) or b"{}")
        return f"pid {found['pid']}, started {found['started']}: {found['command_line']}"
    except (OSError, ValueError, KeyError, TypeError):  # being written this very moment, or not by nsbench
        return "it has not said which"


@contextlib.contextmanager
def stop_on_failure(folder: Path, role: str, then: str = "") -> Iterator[None]:
    """A write in ``folder`` that fails for want of space or permission
    becomes one line (FolderRefused), ending with ``then`` (what is kept);
    other errors stay bugs."""
    try:
        yield
    except OSError as error:
        if error.errno not in UNWRITABLE:
            raise
        file = f"{error.filename}: " if error.filename and Path(error.filename) != folder else ""
        raise FolderRefused(f"cannot write in {role} {folder}: {file}{error.strerror}" + (f"; {then}" if then else "")) from None


def unsafe_name(name: str) -> str:
    """Why ``name``, as a relative path, would leave its folder or is no file
    name at all; "" when it is a safe one (parts separated by "/" are subfolders)."""
    if not isinstance(name, str) or not name.strip():
        return "it is empty"
    if "\0" in name:
        return "it holds a NUL character"
    path = PurePosixPath(name)
    if not path.parts:
        return "it names no file"
    if path.is_absolute():
        return "it is an absolute path"
    if ".." in path.parts:
        return "it climbs out with '..'"
    if any(len(part.encode()) > LONGEST_PART for part in path.parts):
        return f"a part of it is longer than {LONGEST_PART} bytes"
    return ""


def inside(folder: Path, name: str) -> Path:
    """``folder / name``, refused (FolderRefused) if the name would leave ``folder``."""
    reason = unsafe_name(name)
    if reason:
        raise FolderRefused(f"{name!r} cannot name a file in {folder}: {reason}")
    return folder / name
