"""The cache's entries: engine outputs, metric values and reference features
stored by key, what makes a run resumable and a rerun cheap. What a key is
made of is nsbench.store.keys; how code is hashed, nsbench.store.digests.

An entry is one file, written whole by nsbench.store.atomic, so a run killed
at any point leaves whole entries or none. Its first line holds a checksum of
the rest: an entry that fails it is reported, removed and recomputed, never
trusted. A clip that failed is not cached: it runs again.

Entry format 2 (ENTRY_FORMAT) stores an output's audio compactly and
losslessly (nsbench.store.codec: int16 where the samples are exactly 16-bit
PCM, else byte planes and zlib), and its checksum covers the meta (timings,
delay) too. A cache written before it (format 1, raw float32 .npy) is said
once, in one line (eviction.older_format_note): its keys changed with this
module's code (every engine's code imports it, through nsbench.run.conditions),
so its entries are never looked up, and the size cap evicts them first. An
entry of format 1 under a key that is looked up is still read, bit for bit,
and rewritten compactly; an entry of any other format is replaced, with one
line; none is ever misread (the payloads' magic differ, and the checksum).
Reading an entry touches its mtime: the size cap (--cache-max-size,
nsbench.store.eviction) removes the least recently used first.

Entries stay one file each (in 256 folders by the key's first two hex digits)
rather than rows of SQLite. Measured with 100,000 entries on a busy 2-core
machine (bench/bench_cache.py): --list cache 1.8 s, the cap's walk 2.8 s,
--clear-cache 1.6 s (renamed aside, deleted by a detached process); SQLite
lists and clears in 0.1 s but writes no faster (1.26 ms an entry against
1.07-1.86 ms for a file, with a commit an entry), and files keep what SQLite
would have to add: worker processes (and Dask workers on a shared disk, where
SQLite's locks are not safe) writing at once without a lock, a killed run
leaving no half-written entry, and a damaged entry costing that entry alone.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench.store import atomic, codec, eviction
from nsbench.store.reference import features_from_npz, features_to_npz

ENTRY_FORMAT = 2  # an entry file's layout (the keys stay: format 1 entries are still read)
OLD_FORMAT_NOTE = ("cache entries of format 1 (raw float32, an older nsbench) found: read as they are, "
                   "and rewritten compactly")
RUNS_FOLDER = "runs"  # under the cache root; the demo set and remixes have their own
ENGINES_FOLDER = "engines"  # an empty file per engine identity with outputs stored


def cache_root() -> Path:
    """Where nsbench keeps what it made: $NSBENCH_CACHE, else ~/.cache/nsbench."""
    return Path(os.environ.get("NSBENCH_CACHE", Path.home() / ".cache" / "nsbench"))


class CorruptEntry(Exception):
    """A cache file that fails its checksum or cannot be parsed."""


@dataclass
class CachedOutput:
    audio: np.ndarray
    cpu_seconds: float
    wall_seconds: float
    delay: str
    streaming: dict[str, Any] | None = None  # a streamed output's block times (nsbench.run.streaming)


class Cache:
    """Entries under ``root``/runs. ``read=False`` (--rerun) recomputes
    everything and overwrites what it finds; warnings (a corrupt entry, a full
    disk) are kept in ``warnings`` for the caller to print once each."""

    def __init__(self, root: Path, read: bool = True, max_size: int | None = None):
        self.folder = Path(root) / RUNS_FOLDER
        self.read = read
        self.warnings: list[str] = []
        self._marked: set[str] = set()
        # The run's configuration gives the cap (RunConfig.cache_max_size); pickled with the Cache to the workers.
        self.max_size = max_size  # its SizeCap is the process's (eviction.cap_for), not pickled with the Cache
        older = eviction.older_format_note(self.folder, ENTRY_FORMAT) if read else None
        self.warnings += [older] if older else []

    # ----------------------------------------------------------------- engines

    def knows(self, engine: str) -> bool:
        """Whether any output of this engine identity was ever stored: if not,
        no clip can be in the cache, and a run need not look clip by clip
        (which costs loading every clip once more)."""
        return self.read and (self.folder / ENGINES_FOLDER / engine).exists()

    def mark(self, engine: str) -> None:
        """Notes that outputs of this engine identity are stored (once per process)."""
        if engine in self._marked:
            return
        try:
            marker = self.folder / ENGINES_FOLDER / engine
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            self._marked.add(engine)
        except OSError as error:
            self.warnings.append(f"cannot write to the cache {self.folder}: {error.strerror or error}; going on without it")

    # ----------------------------------------------------------------- outputs

    def get_output(self, key: str) -> CachedOutput | None:
        entry = self._load(key, "output")
        if entry is None:
            return None
        meta, payload = entry
        try:
            audio = codec.decode(payload) if codec.is_compact(payload) else array_from_npy(payload)
        except ValueError as error:
            self._drop(key, "output", f"its audio does not load ({error})")
            return None
        output = CachedOutput(audio, meta["cpu_seconds"], meta["wall_seconds"], meta["delay"], meta.get("streaming"))
        if not codec.is_compact(payload):  # format 1: the same array, in a quarter to a half of the bytes
            self.warnings.append(OLD_FORMAT_NOTE)
            self.put_output(key, output)
        return output

    def put_output(self, key: str, output: CachedOutput) -> None:
        audio = np.ascontiguousarray(output.audio)
        meta = {"cpu_seconds": output.cpu_seconds, "wall_seconds": output.wall_seconds, "delay": output.delay}
        if output.streaming is not None:
            meta["streaming"] = output.streaming
        self._store(key, "output", meta, *codec.encode(audio))

    # ------------------------------------------------------------------ scores

    def get_scores(self, key: str) -> dict[str, Any]:
        """The values stored for this output: {identity digest: value}."""
        entry = self._load(key, "scores")
        if entry is None:
            return {}
        try:
            return json.loads(bytes(entry[1]))
        except ValueError as error:
            self._drop(key, "scores", f"its values do not parse ({error})")
            return {}

    def put_scores(self, key: str, values: Mapping[str, Any]) -> None:
        self._store(key, "scores", {}, json.dumps(values, sort_keys=True).encode())

    # ------------------------------------------------------- reference features

    def get_features(self, key: str) -> dict[str, Any] | None:
        """A clip's reference-side features (nsbench.store.reference), or None."""
        entry = self._load(key, "features")
        if entry is None:
            return None
        try:
            return features_from_npz(entry[1])
        except (ValueError, OSError) as error:
            self._drop(key, "features", f"its arrays do not load ({error})")
            return None

    def put_features(self, key: str, values: Mapping[str, Any]) -> None:
        self._store(key, "features", {}, features_to_npz(values))

    # ------------------------------------------------------------------- files

    def path(self, key: str, kind: str) -> Path:
        return self.folder / key[:2] / f"{key}.{kind}"

    def _load(self, key: str, kind: str) -> tuple[dict[str, Any], memoryview] | None:
        if not self.read:
            return None
        path = self.path(key, kind)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            self.warnings.append(f"cannot read cache entry {path}: {error.strerror or error}; recomputed")
            return None
        try:
            entry = parse_entry(data)
        except UnknownFormat as error:
            self.warnings.append(f"cache entry {path} {error}; recomputed and replaced")
            return None
        except CorruptEntry as error:
            self._drop(key, kind, str(error))
            return None
        try:
            os.utime(path)  # used now: the size cap evicts the least recently used first
        except OSError:  # a read-only cache is still read
            pass
        return entry

    def _drop(self, key: str, kind: str, why: str) -> None:
        path = self.path(key, kind)
        self.warnings.append(f"corrupt cache entry {path}: {why}; removed and recomputed")
        path.unlink(missing_ok=True)

    def _store(self, key: str, kind: str, meta: Mapping[str, Any], *payload: bytes | memoryview) -> None:
        """Writes the header line, then the payload's parts, as one file."""
        path = self.path(key, kind)
        checksum = hashlib.sha256(meta_text(meta))
        for part in payload:
            checksum.update(part)
        header = json.dumps({"format": ENTRY_FORMAT, "sha256": checksum.hexdigest(), "meta": meta}).encode()
        try:
            if not path.parent.exists():  # a new cache: its format noted, for older_format_note
                atomic.write_text(self.folder / eviction.FORMAT_FILE, f"{ENTRY_FORMAT}\n")
            atomic.write_bytes(path, header + b"\n", *payload)
        except OSError as error:  # a full disk or a read-only cache costs the caching, not the clip
            self.warnings.append(f"cannot write to the cache {self.folder}: {error.strerror or error}; going on without it")
            return
        size = len(header) + 1 + sum(len(part) for part in payload)
        evicted = eviction.cap_for(self.folder, self.max_size).wrote(size) if self.max_size else None
        if evicted:
            self.warnings.append(evicted)


class UnknownFormat(CorruptEntry):
    """An entry of a format this nsbench does not read (a newer one)."""


def meta_text(meta: Mapping[str, Any]) -> bytes:
    """What format 2's checksum covers of the meta: the same text from the
    meta written and from the meta parsed back (JSON round-trips exactly)."""
    return json.dumps(meta, sort_keys=True).encode() + b"\n"


def parse_entry(data: bytes) -> tuple[dict[str, Any], memoryview]:
    """(meta, payload) of a cache file's bytes; the payload is a view, not a copy."""
    end = data.find(b"\n")
    try:
        fields = json.loads(data[:end])
        expected, meta, version = fields["sha256"], fields["meta"], fields.get("format", 1)
        covered = meta_text(meta) if version == ENTRY_FORMAT else b""  # format 1: the payload alone
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CorruptEntry("its header is not readable") from None
    if version not in (1, ENTRY_FORMAT):
        raise UnknownFormat(f"is of format {version!r}, which this nsbench (format {ENTRY_FORMAT}) does not read")
    payload = memoryview(data)[end + 1 :]
    checksum = hashlib.sha256(covered)
    checksum.update(payload)
    if end < 0 or checksum.hexdigest() != expected:
        raise CorruptEntry("its checksum does not match its contents")
    return meta, payload


def npy_header(array: np.ndarray) -> bytes:
    """What np.save writes before a C-contiguous array's bytes."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, np.lib.format.header_data_from_array_1_0(array))
    return buffer.getvalue()


def array_from_npy(payload: memoryview) -> np.ndarray:
    """The array of .npy bytes, copied once out of the file's bytes."""
    stream = io.BytesIO(payload[:4096])  # magic and header: a few hundred bytes
    if np.lib.format.read_magic(stream) != (1, 0):  # what npy_header writes
        raise ValueError("not a version 1.0 .npy header")
    shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    if fortran or dtype.hasobject:
        raise ValueError("not a C-ordered numeric array")
    count = int(np.prod(shape))
    start = stream.tell()
    if len(payload) - start != count * dtype.itemsize:
        raise ValueError(f"{len(payload) - start} bytes of data for {count} {dtype} samples")
    return np.frombuffer(payload[start:], dtype=dtype, count=count).reshape(shape).copy()


# --------------------------------------------------------------------- --list cache


def folder_usage(folder: Path) -> tuple[int, int]:
    """(files, bytes) under ``folder``."""
    return eviction.tree_usage(folder)


def usage_text(root: Path, cap: str = "") -> str:
    """What ``--list cache`` prints: the location, then each part's size;
    ``cap``: the size cap as the user set it (eviction.max_size_setting), "" for none."""
    lines = [f"cache: {root} (set NSBENCH_CACHE to move it; --clear-cache empties it)"]
    parts = sorted(path for path in root.iterdir()) if root.is_dir() else []
    total = 0
    for part in parts:
        files, size = folder_usage(part) if part.is_dir() else (1, part.stat().st_size)
        total += size
        lines.append(f"  {part.name:<40} {files:>8} files  {size / 1e6:>10.1f} MB")
    lines.append(f"  {'total':<40} {'':>8}        {total / 1e6:>10.1f} MB")
    lines.append(f"  {RUNS_FOLDER} capped at {cap}, least recently used first" if cap else
                 f"  no cap on its size (--cache-max-size or ${eviction.MAX_SIZE_VARIABLE})")
    return "\n".join(lines)


def clear(root: Path) -> str:
    """Empties the cache; returns what was removed, for the user."""
    files, size = eviction.remove_tree(root)  # at once, however many entries: renamed aside, then deleted
    return f"removed {root}: {files} files, {size / 1e6:.1f} MB"
