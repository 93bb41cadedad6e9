"""One engine over a list of clips, one record per clip, in clip order.

It serves what the cache holds whole, builds the engine only if a clip still
needs it, hands the other clips to an executor (or runs them here, one after
the other), and always closes the engine. What one clip goes through (load,
produce, score, check) is nsbench.run.clips; it does no file I/O: it yields
records and output audio, and the caller (nsbench.session.engine_turn) writes them.
"""
from __future__ import annotations

import dataclasses
import pickle
from typing import Callable, Iterator, Protocol, Sequence

from nsbench.run.clips import needs_beyond_cache, run_clip
from nsbench.run.engine_run import EngineHolder, EngineRun, NeedsEngine, NeedsScores, Outcome, engine_faults
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

    # Clips run side by side in several workers: clips whose output is cached
    # but not every score go to them too, and the parent builds the next
    # engine meanwhile. False for one worker (--jobs 1 with --clip-timeout).
    parallel: bool

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
    scores are all stored come from it, each read when its turn comes (none
    is held ahead), and the engine is built only if some clip still needs it;
    what is computed is stored as it comes.

    With ``run.blocks``, engines that can stream run block by block (nsbench.run.streaming).

    ``built``: the engine already built with these options (the run loop
    builds the next engine while this one's clips run in workers); it is
    used, or closed if every clip comes from the cache."""
    if run.identity is None and run.cache is not None:  # nothing to key it with: no cache
        run = dataclasses.replace(run, cache=None)
    # With workers side by side, cached outputs that a new metric must score go to them too.
    served = dataclasses.replace(run, stored_only=True) if executor is not None and executor.parallel else run
    complete, engine_needed = complete_in_cache(served, sources)
    missing = [source for source, whole in zip(sources, complete) if not whole]
    if not missing:
        if built is not None:
            built.discard()
        fallback = EngineHolder(run.spec, run.options)
        try:
            yield from (from_cache(served, source, fallback) for source in sources)
        finally:
            fallback.discard()
            if engine_notes is not None:  # from an engine built for a clip the cache lost since
                engine_notes.extend(fallback.notes)
        return
    holder = built if built is not None else EngineHolder(run.spec, run.options)
    try:
        try:
            if engine_needed:  # only scoring left: the engine need not start
                holder.get()
        except UserError:
            raise
        except engine_faults() as error:
            raise UserError(f"engine '{run.spec.name}' could not start: {type(error).__name__}: {error}") from error
        computed = (executor.run if executor else in_process)(run, missing, holder)
        yield from in_clip_order(lambda index: from_cache(served, sources[index], holder), complete, computed, len(sources))
    finally:
        holder.discard()
        if engine_notes is not None:
            engine_notes.extend(holder.notes)


def complete_in_cache(run: EngineRun, sources: Sequence[ClipSource]) -> tuple[bytearray, bool]:
    """Per clip, whether the cache serves it whole (a byte each: a set of
    100,000 indices would cost megabytes), and whether a clip left
    out needs the engine. Decided without reading any output (each is read
    when its turn comes, nsbench.run.clips.needs_beyond_cache), so the run
    holds none of them. With ``run.stored_only``, a clip whose output is
    cached but not some score is left out too (scoring it here would run
    serially while the executor's workers wait)."""
    if run.cache is None or not run.cache.knows(run.identity.engine):
        return bytearray(len(sources)), True
    complete, engine_needed = bytearray(len(sources)), False
    for index, source in enumerate(sources):
        need = needs_beyond_cache(source, run)
        complete[index] = need is None
        engine_needed = engine_needed or need == "engine"
    return complete, engine_needed


def from_cache(run: EngineRun, source: ClipSource, fallback: EngineHolder) -> Outcome:
    """A clip complete_in_cache found whole, read from the cache now. One whose
    entry went since (the size cap evicted it while this run wrote others, or
    it proved corrupt and was removed) is computed here with ``fallback``,
    its engine built if need be: rare, and serial."""
    try:
        return run_clip(EngineHolder(run.spec, run.options, may_build=False), source, run)
    except (NeedsEngine, NeedsScores):
        return run_clip(fallback, source, dataclasses.replace(run, stored_only=False))


def in_clip_order(cached: Callable[[int], Outcome], complete: Sequence[int], computed: Iterator[Outcome],
                  count: int) -> Iterator[Outcome]:
    """Every clip's outcome in order: ``cached(index)`` for the clips marked
    ``complete``, the next of ``computed`` for the others."""
    try:
        for index in range(count):
            yield cached(index) if complete[index] else next(computed)
        next(computed, None)  # lets it end normally: its workers close their engines
    finally:
        computed.close()  # stops the workers now if the consumer stopped early


def sources_pickle(sources: Sequence[ClipSource], notes: list[str], serial_note: str = "ran serially") -> bool:
    try:
        pickle.dumps(sources[0])
    except Exception as error:
        notes.append(f"{serial_note}: the dataset's clips cannot be sent to worker processes ({error})")
        return False
    return True

