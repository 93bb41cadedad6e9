"""The cache's size cap (``--cache-max-size`` or $NSBENCH_CACHE_MAX_SIZE) and
the fast walk over its files that both the cap and ``--list cache`` use.

Least recently used entries go first. Use is an entry file's mtime: writing
an entry sets it, and reading one touches it (nsbench.store.cache), so no
index has to be kept consistent between the worker processes that write the
cache at once; each of them holds its own SizeCap (cap_for).

A SizeCap does not walk the cache at every write (100,000 entries take about
two to three seconds to walk on a busy 2-core machine): it walks it at its first write, then again once the
bytes written since reach ``SLACK`` of the cap, or its own estimate goes over
the cap. When the cache is over, it removes the oldest entries until the cache
is at ``LOW_WATER`` of the cap, so that the next walk is not at the next write.
With J processes writing, the cache can pass its cap by at most J x SLACK
between walks.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MAX_SIZE_VARIABLE = "NSBENCH_CACHE_MAX_SIZE"
SLACK = 0.05
LOW_WATER = 0.9
UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
TRASH_MARK = ".cleared-"  # a cleared cache, renamed aside while it is deleted
SKIPPED_FOLDERS = ("engines",)
_CAPS: dict = {}  # (folder, max size) -> SizeCap, in this process (cap_for)  # the per-engine markers: empty files, never evicted


def parse_size(text: str) -> int:
    """'2GB', '500MB', '1.5 GiB', '10000' (bytes) -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in UNITS:
        raise ValueError(f"not a size: {text!r} (try 2GB, 500MB, 1.5GiB)")
    return int(float(match.group(1)) * UNITS[unit])


def size_argument(text: str) -> str:
    """--cache-max-size's type: checked, kept as typed (``--list cache`` shows it so)."""
    try:
        parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def size_text(size: int) -> str:
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} B"


def max_size_setting(flag: str | None) -> str:
    """The cap as the user set it: --cache-max-size, else $NSBENCH_CACHE_MAX_SIZE
    (a user's setting, docs/cli.md), else "" (no cap). Read once, into the run's
    configuration (nsbench.config.RunConfig.cache_max_size): the Cache
    carries it to the worker processes, nothing writes the environment."""
    return (flag or os.environ.get(MAX_SIZE_VARIABLE, "")).strip()


def max_size_of(setting: str) -> int | None:
    """A setting (max_size_setting) in bytes; None: no cap. ValueError for a bad one."""
    return parse_size(setting) if setting else None


@dataclass(frozen=True)
class Entry:
    used_ns: int  # mtime: written, or last read
    size: int
    path: str


def walk(folder: Path | str) -> list[Entry]:
    """Every entry file of a runs folder (its shard folders), with os.scandir:
    one stat a file, from the directory walk itself where the OS gives it."""
    entries: list[Entry] = []
    try:
        shards = [item for item in os.scandir(folder) if item.is_dir() and item.name not in SKIPPED_FOLDERS]
    except FileNotFoundError:
        return entries
    for shard in shards:
        try:
            items = list(os.scandir(shard.path))
        except FileNotFoundError:  # emptied by another process meanwhile
            continue
        for item in items:
            if item.name.startswith("."):  # a write under way
                continue
            try:
                info = item.stat()
            except FileNotFoundError:
                continue
            entries.append(Entry(info.st_mtime_ns, info.st_size, item.path))
    return entries


def tree_usage(folder: Path | str) -> tuple[int, int]:
    """(files, bytes) under ``folder``, any depth, with os.scandir."""
    files = size = 0
    pending = [os.fspath(folder)]
    while pending:
        try:
            items = list(os.scandir(pending.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for item in items:
            if item.is_dir(follow_symlinks=False):
                pending.append(item.path)
            elif item.is_file(follow_symlinks=False):
                files += 1
                size += item.stat(follow_symlinks=False).st_size
    return files, size


def evict(entries: list[Entry], target: int) -> tuple[int, int, int]:
    """Removes the least recently used of ``entries`` (a walk's) until the
    rest fit in ``target`` bytes: (entries removed, bytes removed, bytes left)."""
    entries = sorted(entries, key=lambda entry: entry.used_ns)
    total = sum(entry.size for entry in entries)
    removed = freed = 0
    for entry in entries:
        if total - freed <= target:
            break
        try:
            os.unlink(entry.path)
        except FileNotFoundError:  # evicted by another process
            pass
        removed += 1
        freed += entry.size
    return removed, freed, total - freed


def cap_for(folder: Path, max_size: int) -> "SizeCap":
    """This process's SizeCap of ``folder``: one, however often a Cache is
    unpickled here (a Dask worker gets the run with every task), so that the
    cache is walked at the first write and then every SLACK, not every clip."""
    return _CAPS.setdefault((os.fspath(folder), max_size), SizeCap(Path(folder), max_size))


class SizeCap:
    """One process's view of the cache's size against its cap."""

    def __init__(self, folder: Path, max_size: int):
        self.folder = folder
        self.max_size = max_size
        self.estimate: int | None = None  # bytes at the last walk, plus those written since
        self.since_walk = 0

    def wrote(self, size: int) -> str | None:
        """After an entry of ``size`` bytes was written: a line for the user
        if that took the cache over its cap and entries were evicted."""
        self.since_walk += size
        if self.estimate is not None:
            self.estimate += size
        if self.estimate is not None and self.estimate <= self.max_size and self.since_walk < SLACK * self.max_size:
            return None
        return self.enforce()

    def enforce(self) -> str | None:
        self.since_walk = 0
        entries = walk(self.folder)
        self.estimate = sum(entry.size for entry in entries)
        if self.estimate <= self.max_size:
            return None
        removed, freed, self.estimate = evict(entries, int(LOW_WATER * self.max_size))
        return (f"the cache {self.folder} was over its cap of {size_text(self.max_size)} "
                f"(--cache-max-size, ${MAX_SIZE_VARIABLE}): evicted the {removed} least recently used "
                f"entries, {size_text(freed)}")


def remove_tree(root: Path) -> tuple[int, int]:
    """Removes ``root`` at once for the caller: (files, bytes) it held.

    Deleting 100,000 files takes 15-20 s here (a fifth of a millisecond an
    unlink), so the folder is renamed aside (instant, and the cache is empty
    from then on) and deleted by a detached process; a deletion cut short is
    finished by the next clear. Where it cannot be renamed (another
    filesystem's mount point), it is deleted here."""
    root = Path(root)
    for stale in root.parent.glob(f".{root.name}{TRASH_MARK}*"):
        shutil.rmtree(stale, ignore_errors=True)
    if not root.is_dir():
        return (1, root.stat().st_size) if root.exists() else (0, 0)
    trash = root.parent / f".{root.name}{TRASH_MARK}{time.time_ns()}"
    try:
        os.rename(root, trash)
    except OSError:
        usage = tree_usage(root)
        shutil.rmtree(root)
        return usage
    usage = tree_usage(trash)
    subprocess.Popen([sys.executable, "-c", "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)", str(trash)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return usage


FORMAT_FILE = "FORMAT"  # in the runs folder: the entry format that wrote it


def older_format_note(folder: Path, entry_format: int) -> str | None:
    """A line for the user, once, when ``folder`` holds entries from before
    entry format 2 (no FORMAT file): every key changed with the cache's code,
    so they are never read, only kept until evicted or cleared."""
    marker = Path(folder) / FORMAT_FILE
    if marker.exists() or not holds_entries(folder):  # an empty folder is no older cache
        return None
    try:
        marker.write_text(f"{entry_format}\n")
    except OSError:  # a read-only cache: said at every run, then
        pass
    return (f"the cache {folder} holds entries of an older nsbench (format 1, raw float32), which this one "
            f"does not use: they go first under --cache-max-size, or --clear-cache removes them")


def holds_entries(folder: Path) -> bool:
    try:
        return any(item.is_dir() and len(item.name) == 2 and any(os.scandir(item.path)) for item in os.scandir(folder))
    except FileNotFoundError:
        return False
