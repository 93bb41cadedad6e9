"""The cache's entries: engine outputs, metric values and reference features
stored by key, what makes a run resumable and a rerun cheap. What a key is
made of is nsbench.store.keys; how code is hashed, nsbench.store.digests.

An entry is one file, written whole by nsbench.store.atomic, so a run killed
at any point leaves whole entries or none. Its first line holds a checksum of
the rest: an entry that fails it is reported, removed and recomputed, never
trusted. A clip that failed is not cached: it runs again.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench.store import atomic
from nsbench.store.reference import features_from_npz, features_to_npz

# Defined in nsbench.store.keys and .digests; importable from here too, as
# they were, for the modules that still do (the built-ins and the run loop).
from nsbench.store.digests import (  # noqa: F401
    code_digest, code_files, digest, file_digest, files_content_digest, files_digest, import_time_nodes, imported_modules,
    json_text, nsbench_digest, source_file,
)
from nsbench.store.keys import (  # noqa: F401
    CHECKS_ENTRY, FORMAT_VERSION, HARNESS_SOURCES, Identity, checks_identity, clip_digest, engine_identity,
    metric_identity,
)

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

    def __init__(self, root: Path, read: bool = True):
        self.folder = Path(root) / RUNS_FOLDER
        self.read = read
        self.warnings: list[str] = []
        self._marked: set[str] = set()

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
            audio = array_from_npy(payload)
        except ValueError as error:
            self._drop(key, "output", f"its audio does not load ({error})")
            return None
        return CachedOutput(audio, meta["cpu_seconds"], meta["wall_seconds"], meta["delay"], meta.get("streaming"))

    def put_output(self, key: str, output: CachedOutput) -> None:
        audio = np.ascontiguousarray(output.audio)
        meta = {"cpu_seconds": output.cpu_seconds, "wall_seconds": output.wall_seconds, "delay": output.delay}
        if output.streaming is not None:
            meta["streaming"] = output.streaming
        # .npy bytes, in two parts: the array is written from its own memory,
        # not copied (an hour's output is 230 MB).
        self._store(key, "output", meta, npy_header(audio), memoryview(audio).cast("B"))

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
            return parse_entry(data)
        except CorruptEntry as error:
            self._drop(key, kind, str(error))
            return None

    def _drop(self, key: str, kind: str, why: str) -> None:
        path = self.path(key, kind)
        self.warnings.append(f"corrupt cache entry {path}: {why}; removed and recomputed")
        path.unlink(missing_ok=True)

    def _store(self, key: str, kind: str, meta: Mapping[str, Any], *payload: bytes | memoryview) -> None:
        """Writes the header line, then the payload's parts, as one file."""
        path = self.path(key, kind)
        checksum = hashlib.sha256()
        for part in payload:
            checksum.update(part)
        header = json.dumps({"sha256": checksum.hexdigest(), "meta": meta}).encode()
        try:
            atomic.write_bytes(path, header + b"\n", *payload)
        except OSError as error:  # a full disk or a read-only cache costs the caching, not the clip
            self.warnings.append(f"cannot write to the cache {self.folder}: {error.strerror or error}; going on without it")


def parse_entry(data: bytes) -> tuple[dict[str, Any], memoryview]:
    """(meta, payload) of a cache file's bytes; the payload is a view, not a copy."""
    end = data.find(b"\n")
    try:
        fields = json.loads(data[:end])
        expected, meta = fields["sha256"], fields["meta"]
    except (ValueError, KeyError, TypeError):
        raise CorruptEntry("its header is not readable") from None
    payload = memoryview(data)[end + 1 :]
    if end < 0 or hashlib.sha256(payload).hexdigest() != expected:
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
    files = size = 0
    if folder.is_dir():
        for path in folder.rglob("*"):
            if path.is_file():
                files += 1
                size += path.stat().st_size
    return files, size


def usage_text(root: Path) -> str:
    """What ``--list cache`` prints: the location, then each part's size."""
    lines = [f"cache: {root} (set NSBENCH_CACHE to move it; --clear-cache empties it)"]
    parts = sorted(path for path in root.iterdir()) if root.is_dir() else []
    total = 0
    for part in parts:
        files, size = folder_usage(part) if part.is_dir() else (1, part.stat().st_size)
        total += size
        lines.append(f"  {part.name:<40} {files:>8} files  {size / 1e6:>10.1f} MB")
    lines.append(f"  {'total':<40} {'':>8}        {total / 1e6:>10.1f} MB")
    return "\n".join(lines)


def clear(root: Path) -> str:
    """Empties the cache; returns what was removed, for the user."""
    files, size = folder_usage(root)
    if root.is_dir():
        shutil.rmtree(root)
    return f"removed {root}: {files} files, {size / 1e6:.1f} MB"
