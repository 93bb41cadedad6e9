"""The content-keyed cache of engine outputs and metric values: what makes a
run resumable, and a rerun cheap.

Each entry's key is a sha256 of everything its value depends on:

- an output: the clip's audio (noisy, clean, reference sources, rate), the
  engine's name, version, code and fingerprint (a user's binary or module), the
  options it reads (plugin flags, seed, lag compensation), and the harness code
  that runs it (resampling, delay compensation);
- a clip's scores: the output's key, then one value per metric under the
  metric's name, version and code, and the output checks under theirs.

"Code" is a module's source file and those of every module it imports from
nsbench or from its own package, transitively (read from its import
statements at module level: a function's own import is lazy on purpose, for
a heavy or optional package or to break a circle, and following those would
key an engine's outputs on the report code): a change to the SI-SDR maths
(``nsbench/audio/sdr.py``) gives the SI-SDR metrics and the output checks new keys.

An entry is one file, written whole under a temporary name and renamed into
place, so a run killed at any point leaves whole entries or none. Its first
line holds a checksum of the rest: an entry that fails it is reported, removed
and recomputed, never trusted. A clip that failed is not cached: it runs again.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from nsbench.plugins.records import Clip

FORMAT_VERSION = 1
# The run loop's code around an engine (resampling, delay compensation), on
# which every output depends; the engine's own code and what it imports are
# found from its module (code_files).
HARNESS_SOURCES = ("run/runner.py", "audio/files.py")
CHECKS_MODULE = "nsbench.run.checks"
RUNS_FOLDER = "runs"  # under the cache root; the demo set and remixes have their own
CHECKS_ENTRY = "checks"
ENGINES_FOLDER = "engines"  # an empty file per engine identity with outputs stored


def cache_root() -> Path:
    """Where nsbench keeps what it made: $NSBENCH_CACHE, else ~/.cache/nsbench."""
    return Path(os.environ.get("NSBENCH_CACHE", Path.home() / ".cache" / "nsbench"))


class CorruptEntry(Exception):
    """A cache file that fails its checksum or cannot be parsed."""


def digest(*parts: bytes | str) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "little"))  # no two part lists hash alike
        hasher.update(data)
    return hasher.hexdigest()


def file_digest(path: str | Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def code_digest(obj: Any) -> str:
    """The code of the module defining ``obj`` (a function, a class; through
    functools.partial, every callable bound), hashed: its file and the files
    it imports (code_files); "" when it has none (a builtin), so then its name
    and version alone identify it."""
    if isinstance(obj, functools.partial):
        return digest(*(code_digest(part) for part in (obj.func, *obj.args) if callable(part)))
    module = inspect.getmodule(obj)
    if module is None:
        return ""
    return files_content_digest(code_files(module.__name__))


def files_content_digest(paths: Iterable[str]) -> str:
    """Contents only: the same code keys alike in any checkout or install."""
    return digest(*(file_digest(path) for path in paths))


def code_files(module_name: str) -> list[str]:
    """The source file of the module and, transitively, of every module it
    imports from nsbench or from its own top-level package."""
    follow = {"nsbench", module_name.partition(".")[0]}
    found: dict[str, str | None] = {}
    pending = [module_name]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found[name] = path = source_file(name)
        if path is not None:
            pending += [dep for dep in imported_modules(path, name) if dep.partition(".")[0] in follow]
    # In module-name order: the same in a checkout and once installed.
    return list(dict.fromkeys(path for _, path in sorted(found.items()) if path))


def source_file(module_name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec else None
    return origin if origin and origin.endswith(".py") and os.path.isfile(origin) else None


@functools.lru_cache(maxsize=None)
def imported_modules(path: str, module_name: str) -> tuple[str, ...]:
    """The modules a source file imports when it is imported (module level,
    class bodies and conditional blocks; not inside functions); ``from
    package import name`` counts as the submodule where ``name`` is one,
    else as the package."""
    tree = ast.parse(Path(path).read_text(), filename=path)
    package = module_name if path.endswith("__init__.py") else module_name.rpartition(".")[0]
    names: list[str] = []
    for node in import_time_nodes(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names if source_file(f"{base}.{alias.name}")]
    return tuple(dict.fromkeys(name for name in names if name))


def files_digest(paths: Iterable[str | Path]) -> str:
    """For an engine's fingerprint: the contents of those of ``paths`` that are
    files (a program, a script, a model), so a rebuilt binary gets new keys."""
    return digest(*(f"{path}:{file_digest(path)}" for path in paths if os.path.isfile(path)))


def nsbench_digest(names: Iterable[str]) -> str:
    """The contents of nsbench's own files, named relative to the package folder."""
    package = Path(__file__).parents[1]
    return digest(*(file_digest(package / name) for name in names))


def clip_digest(clip: Clip) -> str:
    """The clip's audio and rate (and transcript): what any output of it, and its scores, depend on."""
    parts: list[bytes | str] = [str(clip.sample_rate)]
    for array in (clip.noisy, clip.clean, clip.sources):
        if array is None:
            parts.append("none")
        else:
            array = np.ascontiguousarray(array)
            parts += [f"{array.dtype.str}{array.shape}", array.data.cast("B")]
    if clip.transcript is not None:  # the wer metric's reference: a corrected text is scored anew
        parts += ["transcript", clip.transcript]
    return digest(*parts)


def json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


@dataclass(frozen=True)
class Identity:
    """What a run's outputs and scores depend on, besides each clip: computed
    once per engine in the parent, and sent to worker processes."""

    engine: str  # digest of the engine's name, version, code, fingerprint and options
    metrics: Mapping[str, str] = field(default_factory=dict)  # metric name -> digest
    checks: str = ""

    def output_key(self, clip: Clip) -> str:
        return digest("output", self.engine, clip_digest(clip))


def engine_identity(name: str, version: str, factory: Any, fingerprint: str, options: Mapping[str, Any]) -> str:
    return digest(
        f"nsbench-cache-v{FORMAT_VERSION}", name, version, code_digest(factory), fingerprint,
        json_text(options), nsbench_digest(HARNESS_SOURCES),
    )


def import_time_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes run when a module is imported: function bodies are skipped."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield child
            yield from import_time_nodes(child)


def metric_identity(name: str, version: str, func: Any, fingerprint: str = "") -> str:
    """``fingerprint``: what the metric's own options make of it (a recogniser and its model)."""
    return digest(name, version, code_digest(func), *([fingerprint] if fingerprint else []))


def checks_identity() -> str:
    """The output checks' code: nsbench.run.checks and all it imports (the SI-SDR maths, the lag search)."""
    return digest(CHECKS_ENTRY, files_content_digest(code_files(CHECKS_MODULE)))


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
        from nsbench.store.reference import features_from_npz

        entry = self._load(key, "features")
        if entry is None:
            return None
        try:
            return features_from_npz(entry[1])
        except (ValueError, OSError) as error:
            self._drop(key, "features", f"its arrays do not load ({error})")
            return None

    def put_features(self, key: str, values: Mapping[str, Any]) -> None:
        from nsbench.store.reference import features_to_npz

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
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{key[:8]}-", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(header + b"\n")
                    for part in payload:
                        file.write(part)
                os.replace(temporary, path)
            finally:
                if os.path.exists(temporary):
                    os.remove(temporary)
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
