"""One engine over a list of clips, one record per clip, in clip order.

It serves what the cache holds whole, builds the engine only if a clip still
needs it, hands the other clips to an executor (or runs them here, one after
the other), and always closes the engine. What one clip goes through (load,
produce, score, check) is nsbench.run.clips; it does no file I/O: it yields
records and output audio, and the caller (nsbench.run.engine_turn) writes them.
"""
from __future__ import annotations

import dataclasses
import pickle
from typing import Iterator, Mapping, Protocol, Sequence

from nsbench.run.clips import run_clip
from nsbench.run.engine_run import ENGINE_FAULTS, EngineHolder, EngineRun, NeedsEngine, NeedsScores, Outcome
from nsbench.plugins.errors import UserError
from nsbench.plugins.records import ClipSource


class Executor(Protocol):
    """Where an engine's clips run: nsbench.run.executors (a pool of worker
    processes) and nsbench.run.dask_executor (a Dask cluster) implement it; the
    run loop itself runs them in this process. Chosen in one place,
    nsbench.run.executors.executor_for.

    ``run`` yields one Outcome per source, in order. It receives the holder
    of the engine the parent built (which proved the engine starts and
    measured what it measures): in-process it may use it; a strategy whose
    workers build their own engines discards it first, and adds what the
    workers noted to ``holder.notes``."""

    def run(self, run: EngineRun, sources: Sequence[ClipSource], holder: EngineHolder) -> Iterator[Outcome]: ...


def in_process(run: EngineRun, sources: Sequence[ClipSource], holder: EngineHolder) -> Iterator[Outcome]:
    return (run_clip(holder, source, run) for source in sources)


def run_engine(
    run: EngineRun,
    sources: Sequence[ClipSource],
    engine_notes: list[str] | None = None,
    *,
    executor: Executor | None = None,
    built: EngineHolder | None = None,
) -> Iterator[Outcome]:
    """Run one engine (``run.spec`` with ``run.options``) over every clip, in
    order. A clip that fails is recorded with its reason and the loop goes on.
    An engine that cannot be built raises UserError before the first clip (the
    caller reports it and moves on). The engine's own notes (``engine.notes``)
    are added to ``engine_notes``.

    The ``executor`` runs the clips (default: here, one after the other);
    records come back in clip order whatever it is, so the results equal a
    serial run's (only the timings differ).

    With ``run.cache`` (and the run's ``identity``), clips whose output and
    scores are all stored come from it first, and the engine is built only if
    some clip still needs it; what is computed is stored as it comes.

    With ``run.blocks``, engines that can stream run block by block (nsbench.run.streaming).

    ``built``: the engine already built with these options (the run loop
    builds the next engine while this one's clips run in workers); it is
    used, or closed if every clip comes from the cache."""
    if run.identity is None and run.cache is not None:  # nothing to key it with: no cache
        run = dataclasses.replace(run, cache=None)
    # With an executor, cached outputs that a new metric must score go to its workers too.
    stored, engine_needed = complete_in_cache(run, sources, scores_elsewhere=executor is not None)
    missing = [source for index, source in enumerate(sources) if index not in stored]
    if not missing:
        if built is not None:
            built.discard()
        yield from stored.values()
        return
    holder = built if built is not None else EngineHolder(run.spec, run.options)
    try:
        try:
            if engine_needed:  # only scoring left: the engine need not start
                holder.get()
        except UserError:
            raise
        except ENGINE_FAULTS as error:
            raise UserError(f"engine '{run.spec.name}' could not start: {type(error).__name__}: {error}") from error
        computed = (executor.run if executor else in_process)(run, missing, holder)
        yield from in_clip_order(stored, computed, len(sources))
    finally:
        holder.discard()
        if engine_notes is not None:
            engine_notes.extend(holder.notes)


def complete_in_cache(run: EngineRun, sources: Sequence[ClipSource], scores_elsewhere: bool = False) -> tuple[dict[int, Outcome], bool]:
    """The clips whose output and every score are in the cache, by index,
    served from it, and whether a clip left out needs the engine. Only these
    are served: a clip that would need the engine is left out; with
    ``scores_elsewhere``, so is one whose output is cached but not some score
    (scoring it here would run serially while the executor's workers wait)."""
    if run.cache is None or not run.cache.knows(run.identity.engine):
        return {}, True
    holder = EngineHolder(run.spec, run.options, may_build=False)
    served = dataclasses.replace(run, stored_only=True) if scores_elsewhere else run
    stored, engine_needed = {}, False
    for index, source in enumerate(sources):
        try:
            stored[index] = run_clip(holder, source, served)
        except NeedsScores:
            pass
        except NeedsEngine:
            engine_needed = True
    return stored, engine_needed


def in_clip_order(stored: Mapping[int, Outcome], computed: Iterator[Outcome], count: int) -> Iterator[Outcome]:
    try:
        for index in range(count):
            yield stored[index] if index in stored else next(computed)
        next(computed, None)  # lets it end normally: its workers close their engines
    finally:
        computed.close()  # stops the workers now if the consumer stopped early


def sources_pickle(sources: Sequence[ClipSource], notes: list[str]) -> bool:
    try:
        pickle.dumps(sources[0])
    except Exception as error:
        notes.append(f"ran serially: the dataset's clips cannot be sent to worker processes ({error})")
        return False
    return True

