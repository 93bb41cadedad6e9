"""Running an engine's clips in a pool of worker processes (``--jobs N``),
and the one place that chooses how clips run (``executor_for``): in this
process, in a pool, or on a Dask cluster (nsbench.run.dask_executor).

Each strategy implements nsbench.run.runner.Executor and runs clips with
nsbench.run.clips.run_clip; the runner imports none of them. Each worker process
builds the engine once (fork: engine factories need not pickle); records come
back in clip order, so the results equal a serial run's.
"""
from __future__ import annotations

import collections
import contextlib
import importlib
import itertools
import multiprocessing
import multiprocessing.util
import os
import signal
import tempfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Iterator, Sequence

from threadpoolctl import threadpool_limits

from nsbench.store import reference
from nsbench.external import PrivateFolder, kill_with_programs
from nsbench.run.clips import run_clip
from nsbench.run.engine_run import EngineHolder, EngineRun, Outcome
from nsbench.run.runner import Executor, in_process, sources_pickle
from nsbench.plugins.records import ClipRecord, ClipSource
from nsbench.plugins.specs import EngineSpec


@contextlib.contextmanager
def executor_for(kind: str, jobs: int, scheduler: str | None, engines: Sequence[EngineSpec]) -> Iterator[Executor | None]:
    """The run's executor (None: in this process), connected before any engine
    runs: a Dask scheduler that does not answer, or workers that lack what
    the engines need, stop the run before it computes anything."""
    if kind == "dask":
        from nsbench.run.dask_executor import DaskExecutor, dask_client

        with dask_client(scheduler, jobs, engines) as client:
            yield DaskExecutor(client)
    elif jobs > 1:
        # Each worker is one core's work. A BLAS thread (OpenBLAS starts one
        # per core, and its threads spin after each call they share) takes a
        # core another worker needs: every process of the run, this one
        # included, keeps to one. Forked workers inherit the limit.
        with threadpool_limits(limits=1):
            yield ProcessPool(jobs)
    else:
        yield None


@dataclass(frozen=True)
class ProcessPool:
    """``jobs`` forked worker processes, each building the engine once."""

    jobs: int

    def run(self, run: EngineRun, sources: Sequence[ClipSource], holder: EngineHolder) -> Iterator[Outcome]:
        if len(sources) < 2 or not parallel_possible(sources, holder.notes):
            return in_process(run, sources, holder)
        # The parent's build checked that the engine starts (and measured
        # what it measures); the workers build their own.
        holder.discard()
        return run_in_workers(run, sources, self.jobs, holder.notes)


def parallel_possible(sources: Sequence[ClipSource], notes: list[str]) -> bool:
    """Worker processes need fork (engine factories need not pickle) and clip
    sources that pickle; otherwise the run is serial, and says so."""
    if "fork" not in multiprocessing.get_all_start_methods():
        notes.append("ran serially: this platform cannot fork worker processes")
        return False
    return sources_pickle(sources, notes)


# One engine per worker process, built by the pool's initializer, and whether
# the worker hands the reference features back (work_on).
_worker: tuple[EngineHolder, EngineRun, bool] | None = None

# With a cache, later engines' workers can read the reference features from it;
# handing them back through the parent instead saves those reads but holds them
# in the parent (up to reference.MEMORY_BYTES). Worth it for a set of up to this
# many clips (the demo's 156), not for a research-size run, whose parent stays flat.
SHARE_WITH_CACHE_CLIPS = 500


def start_worker(run: EngineRun, scratch: str, share_features: bool) -> None:
    global _worker
    # Its own process group: the parent ends a worker, what it forked and the
    # programs it runs (each in a group of its own) at once, and a Ctrl-C at
    # the terminal reaches only the parent, which decides. The parent's signal handlers, inherited by fork,
    # are not the worker's: SIGTERM ends it at once, whichever of its threads
    # (BLAS, onnxruntime) the signal lands on.
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Temporary files of the engine and of its programs go where the parent
    # removes them, however the worker ends.
    tempfile.tempdir = os.environ["TMPDIR"] = scratch
    holder = EngineHolder(run.spec, run.options)
    # Runs when the worker exits normally, so subprocesses and temporary
    # folders of the worker's engine are cleaned up like the serial ones.
    multiprocessing.util.Finalize(holder, holder.discard, exitpriority=10)
    _worker = (holder, run, share_features)


def work_on(source: ClipSource) -> tuple[Outcome, list[str], dict]:
    """The clip's outcome, the engine's notes, and the reference features the
    clip computed or read, for the parent to hand to the next engine's workers
    (nsbench.store.reference), where the pool shares them: always without a
    cache, and with one for sets of up to SHARE_WITH_CACHE_CLIPS clips, whose
    next engine's workers then find them in memory rather than reading and
    parsing a cache entry per clip and feature."""
    assert _worker is not None, "start_worker did not run"
    holder, run, share_features = _worker
    marker = reference.memory_marker()
    outcome = run_clip(holder, source, run)
    return outcome, holder.all_notes(), reference.computed_since(marker) if share_features else {}


class WorkerDied(Exception):
    """A worker process ended abruptly (a crash in an engine's native code, the
    kernel's OOM killer); the message says how."""


def run_in_workers(run: EngineRun, sources: Sequence[ClipSource], jobs: int, notes: list[str]) -> Iterator[Outcome]:
    """Clips in clip order. A worker that dies breaks the pool, and which of
    the clips in progress killed it is unknown: the first clip not returned
    runs again alone, in a fresh worker, and fails if that one dies too; then
    fresh workers take the rest."""
    done = 0
    while done < len(sources):
        try:
            for outcome in run_in_pool(run, sources[done:], jobs, notes):
                done += 1
                yield outcome
        except WorkerDied:
            source = sources[done]
            try:
                yield from run_in_pool(run, [source], 1, notes)
            except WorkerDied as died:
                yield Outcome(died_on(run, source, str(died)), None, 0)
            done += 1


def import_metric_packages(run: EngineRun) -> None:
    """The packages the metrics load when they first score (``requires``: the
    PESQ and DNSMOS packages, say), loaded here before the fork: every worker
    of every engine inherits them, rather than each importing its own."""
    for metric in run.metrics:
        for module in metric.requires:
            with contextlib.suppress(ImportError):
                importlib.import_module(module)


def run_in_pool(run: EngineRun, sources: Sequence[ClipSource], jobs: int, notes: list[str]) -> Iterator[Outcome]:
    import_metric_packages(run)
    context = multiprocessing.get_context("fork")
    scratch = PrivateFolder("nsbench-workers-")
    initargs = (run, str(scratch.path), run.cache is None or len(sources) <= SHARE_WITH_CACHE_CLIPS)
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=start_worker, initargs=initargs)
    try:
        for outcome, worker_notes, features in in_window(pool, sources, IN_FLIGHT_PER_WORKER * jobs):
            notes.extend(note for note in worker_notes if note not in notes)
            reference.keep(features)
            yield outcome
    except BrokenProcessPool as error:
        # The pool SIGTERMs the other workers; the programs they ran go too.
        workers = end_workers(pool)
        pool.shutdown(wait=True)  # the exit codes are known after
        raise WorkerDied(how_it_died(workers)) from error
    except BaseException:  # an interrupt, the consumer stopping early, or a bug
        # Now, rather than after every clip handed out, as the pool's own
        # shutdown would: the pool sees its workers die and fails the rest.
        end_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True)
        scratch.close()


# Clips handed to the pool and not yet consumed, per worker: one running and
# one queued, so a worker that finishes finds its next clip waiting while the
# parent consumes. Each holds its output audio once done (64 KB per second at
# 16 kHz), so the parent's memory is this window's, not the run's.
IN_FLIGHT_PER_WORKER = 2


def in_window(pool: ProcessPoolExecutor, sources: Sequence[ClipSource], size: int) -> Iterator[tuple[Outcome, list[str], dict]]:
    """work_on's results in clip order, at most ``size`` clips submitted and
    not yet consumed; each future is dropped once its result is taken. The
    next clip is submitted after the consumer took the last result, so a pool
    found broken then fails the first clip not returned (run_in_workers'
    suspect), never one already handed on."""
    # Not pool.map: on an interrupt it cancels what is queued, and the pool,
    # seeing its workers killed, then fails on those (InvalidStateError);
    # and it submits every clip at once.
    upcoming = iter(sources)
    window = collections.deque(pool.submit(work_on, source) for source in itertools.islice(upcoming, size))
    while window:
        yield window.popleft().result()
        for source in itertools.islice(upcoming, 1):
            window.append(pool.submit(work_on, source))


def end_workers(pool: ProcessPoolExecutor) -> list[multiprocessing.process.BaseProcess]:
    """Kills each worker and every program it runs (their process groups), at
    once; their temporary files are in the scratch folder the parent removes.
    Returns the workers."""
    workers = list((pool._processes or {}).values())  # no public API reaches them
    for worker in workers:
        kill_with_programs(worker.pid)  # its programs lead groups of their own (nsbench.external)
    return workers


def how_it_died(workers: list[multiprocessing.process.BaseProcess]) -> str:
    """Exact for a pool of one, as a clip's second try runs."""
    codes = [worker.exitcode for worker in workers if worker.exitcode]
    if not codes:
        return "no exit code"
    return f"signal {-codes[0]}, {signal.Signals(-codes[0]).name}" if codes[0] < 0 else f"exit code {codes[0]}"


def died_on(run: EngineRun, source: ClipSource, how: str) -> ClipRecord:
    return run.record_for(
        source,
        f"the worker process running this clip died ({how}): a crash in the engine's native code, "
        "or the system killed it; fresh workers took the next clips",
    )


