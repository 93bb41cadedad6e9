"""Reference-side features: what metrics compute from a clip's clean voice and
noisy input alone, computed once per clip and shared by every engine of a run.

A metric asks ``inputs.feature(compute, *params)``; ``compute(audio, *params)``
takes the clip's ``ReferenceAudio`` and returns a dict of numpy arrays (or
numbers). The first engine of the run computes it; later ones get it

* from memory, within one process: the last ``MEMORY_BYTES`` worth of
  features, by clip (a serial run scores engine after engine, clip by clip);
  ``--jobs`` workers, which live for one engine, send what they computed or
  read back with each clip (``computed_since``), the parent keeps it
  (``keep``), and the next engine's workers, forked from it, start with it
  in memory (with a cache, for sets of up to
  nsbench.run.executors.SHARE_WITH_CACHE_CLIPS clips);
* from the cache (nsbench.store.cache, given as ``cache``: it imports this
  module, never the reverse) otherwise, keyed by the reference audio as
  scored (clean and noisy samples, rate), the compute function's code and its
  parameters: so a later run shares them too, and so do clips beyond what
  memory holds.

The values are the arrays ``compute`` returned, so a score made from them is
the score made without sharing, bit for bit.
"""
from __future__ import annotations

import hashlib
import io
from collections import OrderedDict
from typing import Any, Callable, Hashable

import numpy as np

from nsbench.plugins.records import Features, ReferenceAudio
from nsbench.store.digests import code_digest, digest

# Features kept in memory across engines, in bytes (oldest clip out first): the
# compact per-clip features (band envelopes, masks) of a few hundred clips.
MEMORY_BYTES = 64 * 2**20

def compute_key(compute: Callable[..., Features], params: tuple) -> str:
    """The function and its parameters; with its code digest this keys the cache."""
    return f"{compute.__module__}:{compute.__qualname__}{params!r}"


class ReferenceFeatures:
    """One clip's features, computed on first request (see the module docstring)."""

    def __init__(self, audio: ReferenceAudio, clip_key: str = "", cache: Any = None):
        self.audio = audio
        self.clip_key = clip_key  # "" : no sharing beyond this object
        self.cache = cache
        self._values: dict[str, Features] = {}

    def get(self, compute: Callable[..., Features], *params: Hashable) -> Features:
        name = compute_key(compute, params)
        if name not in self._values:
            self._values[name] = self._shared(name, compute, params)
        return self._values[name]

    def _shared(self, name: str, compute: Callable[..., Features], params: tuple) -> Features:
        if not self.clip_key:
            return compute(self.audio, *params)
        # The code is part of the key only where the value outlives this process
        # (the cache): within one, it cannot change, and hashing it (parsing the
        # modules it imports) costs ~0.1 s per worker process.
        key = digest("reference-feature", self.clip_key, name, compute_digest(compute) if self.cache is not None else "")
        value = _memory.get(key)
        if value is None and self.cache is not None:
            value = self.cache.get_features(key)
        if value is None:
            value = compute(self.audio, *params)
            if self.cache is not None:
                self.cache.put_features(key, value)
        _memory.put(key, value)
        return value


# compute -> its code_digest: hashing the code reads and parses every file it
# imports (2-3 ms), and a cold run asks for features ~5 times per clip and
# engine; the code cannot change within a process, so once per function.
_code_digests: dict[Callable[..., Features], str] = {}


def compute_digest(compute: Callable[..., Features]) -> str:
    if compute not in _code_digests:
        _code_digests[compute] = code_digest(compute)
    return _code_digests[compute]


class _Memory:
    """Features by key, the most recent ``MEMORY_BYTES`` of them."""

    def __init__(self, limit: int):
        self.limit = limit
        self.entries: OrderedDict[str, tuple[Features, int]] = OrderedDict()
        self.size = 0

    def get(self, key: str) -> Features | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        self.entries.move_to_end(key)
        return entry[0]

    def put(self, key: str, value: Features) -> None:
        if key in self.entries:
            return
        size = sum(np.asarray(item).nbytes for item in value.values())
        self.entries[key] = (value, size)
        self.size += size
        while self.size > self.limit and len(self.entries) > 1:
            _, (_, dropped) = self.entries.popitem(last=False)
            self.size -= dropped

    def clear(self) -> None:
        self.entries.clear()
        self.size = 0


_memory = _Memory(MEMORY_BYTES)


def memory_marker() -> frozenset[str]:
    """What this process holds now, for ``computed_since``."""
    return frozenset(_memory.entries)


def computed_since(marker: frozenset[str]) -> dict[str, Features]:
    """The features this process computed (or read) since ``marker``."""
    return {key: value for key, (value, _) in _memory.entries.items() if key not in marker}


def keep(features: dict[str, Features]) -> None:
    """Features another process computed, held here as if computed here."""
    for key, value in features.items():
        _memory.put(key, value)


def reference_key(clean: np.ndarray | None, noisy: np.ndarray, sample_rate: int) -> str:
    """The reference audio as scored: both signals' samples and the rate (a
    clip without a clean reference is keyed on its input, marked so)."""
    hasher = hashlib.sha256(str(sample_rate).encode())
    if clean is None:
        hasher.update(b"no clean reference")
    for array in (a for a in (clean, noisy) if a is not None):
        array = np.ascontiguousarray(array)
        hasher.update(f"{array.dtype.str}{array.shape}".encode())
        hasher.update(array.data.cast("B"))
    return hasher.hexdigest()


def features_to_npz(value: Features) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.asarray(item) for name, item in value.items()})
    return buffer.getvalue()


def features_from_npz(data: bytes | memoryview) -> Features:
    """Arrays back; numbers stored as 0-d arrays come back as Python numbers."""
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}  # each member read and parsed once
    return {name: array.item() if array.ndim == 0 else array for name, array in arrays.items()}
