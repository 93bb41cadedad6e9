"""One engine's run as every clip sees it, in this process or a worker.

``EngineRun`` is what every clip of the run needs (the spec, its options, the
metrics, the cache and its keys); ``EngineHolder`` builds the engine on first
use and rebuilds it after a fault; ``Produced`` is an engine's output for one clip
and ``Outcome`` what one clip gives back.
nsbench.run.runner runs an engine over its clips with these, nsbench.run.clips
one clip, and the executors ship them to their workers.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from nsbench.audio import checks
from nsbench.config import Blocks
from nsbench.run.interrupts import not_from_a_signal
from nsbench.store.cache import Cache
from nsbench.store.keys import Identity
from nsbench.plugins.engine import Engine
from nsbench.plugins.errors import ClipError, UserError
from nsbench.plugins.records import ClipRecord, ClipSource
from nsbench.plugins.specs import EngineSpec, MetricSpec

# A user's model may end with sys.exit() on an error, as scripts do: that fails
# its clip like an exception, rather than ending the whole run.
ENGINE_FAULTS = (Exception, SystemExit)


def engine_faults() -> tuple[type[BaseException], ...]:
    """ENGINE_FAULTS, and KeyboardInterrupt where no signal raises it: an
    engine that raises it fails its clip; only a real signal stops the run."""
    return ENGINE_FAULTS + not_from_a_signal()


def fault_text(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"SystemExit: the engine called sys.exit({error.code!r})"
    return f"{type(error).__name__}: {error}"


# Clips shorter than one 20 ms level segment (two 10 ms engine frames) give
# engines and metrics nothing to work on; resampling may even leave an engine
# no sample at all. They fail with this reason rather than score.
MIN_CLIP_SECONDS = 0.020


# Option set by --align-constant-lag's second pass: seconds of lag removed on
# top of the engine's declared delay (negative: an early output is delayed).
LAG_COMPENSATION = "lag_compensation_seconds"


class NonFiniteOutput(ClipError):
    """The engine returned NaN or Inf: the clip fails, and is flagged."""


@dataclass(frozen=True)
class Produced:
    """The engine's output for one clip and what it cost, from the cache or
    computed (nsbench.run.clips.produce): ``key`` is its cache entry, under
    which its scores go; ``streaming``, with --block-size, how it ran."""

    audio: np.ndarray
    cpu_seconds: float
    wall_seconds: float
    delay: str
    from_cache: bool
    key: str = ""
    streaming: dict[str, Any] | None = field(default_factory=dict)

    def record_fields(self) -> dict[str, Any]:
        """What it puts in the clip's record (ClipRecord's fields)."""
        return {"cpu_seconds": self.cpu_seconds, "wall_seconds": self.wall_seconds, "delay": self.delay,
                "from_cache": self.from_cache, "streaming": self.streaming}


@dataclass
class Outcome:
    record: ClipRecord
    output: np.ndarray | None  # the engine's output at the clip's rate, None if it failed
    sample_rate: int
    warnings: list[str] = field(default_factory=list)  # about the cache, for the user


@dataclass(frozen=True)
class EngineRun:
    """What every clip of one engine's run needs, in this process or a worker.
    With a cache, ``identity`` keys its entries (nsbench.store.cache)."""

    spec: EngineSpec
    options: Mapping[str, Any]
    metrics: Sequence[MetricSpec]
    cache: Cache | None = None
    identity: Identity | None = None
    # Seconds of lag removed on top of the declared delay (--align-constant-lag's second pass).
    lag_compensation: float = 0.0
    voice_drop_db: float = checks.VOICE_DROP_DB  # --voice-drop-db, for the voice_level_drop flag
    blocks: Blocks | None = None  # --block-size: streamable engines run block by block
    # Serve only what the cache holds whole (output and every score): a clip
    # that needs scoring raises NeedsScores, for the executor's workers to score.
    stored_only: bool = False

    def record_for(self, source: ClipSource, error: str | None = None, **fields: Any) -> ClipRecord:
        """The clip's record, built once: with what it gave (``fields``), or the reason it failed."""
        return ClipRecord(engine=self.spec.name, clip_id=source.clip_id, labels=dict(source.labels),
                          seed=self.options.get("seed"), error=error, **fields)


class NeedsEngine(Exception):
    """Raised by a holder that may not build its engine: the clip is not
    complete in the cache."""


class NeedsScores(Exception):
    """Raised for a clip whose output is cached but some score is not (a metric
    newly asked for), when only what is stored may be served (EngineRun.stored_only)."""


class EngineHolder:
    """Builds the engine on first use and rebuilds it after it raised, so a
    broken internal state cannot leak into the next clip."""

    def __init__(self, spec: EngineSpec, options: Mapping[str, Any], may_build: bool = True):
        self.spec = spec
        self.options = options
        self.may_build = may_build
        self._engine: Engine | None = None
        self.notes: list[str] = []

    def get(self) -> Engine:
        if self._engine is None:
            if not self.may_build:
                raise NeedsEngine()
            with self.kept_cwd():
                engine = self.spec.factory(self.options)
            if engine is None or not hasattr(engine, "process"):
                raise UserError(f"engine '{self.spec.name}': its factory returned {engine!r}")
            self.spec.declare_on(engine)
            self._engine = engine
        return self._engine

    def all_notes(self) -> list[str]:
        """Notes kept from engines already discarded, and the live engine's."""
        live = getattr(self._engine, "notes", []) if self._engine is not None else []
        return self.notes + [note for note in live if note not in self.notes]

    def discard(self) -> None:
        """Closes the engine. A close() that raises is noted; the run goes on."""
        engine, self._engine = self._engine, None
        if engine is not None:
            # What the engine found out about itself (an estimated delay) outlives it.
            for note in getattr(engine, "notes", []):
                self.note(note)
            try:
                with self.kept_cwd():
                    engine.close()
            except engine_faults() as error:
                self.note(f"its close() raised {fault_text(error)}")

    def note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    @contextmanager
    def kept_cwd(self) -> Iterator[None]:
        """The harness's working directory, back after an engine's call that
        changed it (os.chdir): the run's relative paths (the results and data
        folders) must keep pointing where the user meant."""
        before = os.getcwd()
        try:
            yield
        finally:
            try:
                moved = os.getcwd() != before
            except OSError:  # it removed the folder it moved to
                moved = True
            if moved:
                os.chdir(before)
                self.note("it changed the working directory (os.chdir); nsbench changed it back after each call")

