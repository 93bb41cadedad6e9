"""Running an engine's clips in a pool of worker processes (``--jobs N``),
and the one place that chooses how clips run (``executor_for``): in this
process, in a pool, or on a Dask cluster (nsbench.run.dask_executor).
With ``--clip-timeout`` (nsbench.run.clip_timeout) every clip runs in a
worker the parent can kill, one under ``--jobs 1``.

Each strategy implements nsbench.run.runner.Executor and runs clips with
nsbench.run.clips.run_clip; the runner imports none of them. Each worker process
builds the engine once (fork: engine factories need not pickle); records come
back in clip order, so the results equal a serial run's.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import importlib
import itertools
import multiprocessing
import multiprocessing.util
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Iterator, Sequence

from threadpoolctl import threadpool_limits

from nsbench.store import reference
from nsbench.external import PrivateFolder
from nsbench.run import clip_timeout
from nsbench.run.clip_timeout import Deadlines, kill_worker
from nsbench.run.clips import run_clip
from nsbench.run.engine_run import EngineHolder, EngineRun, Outcome
from nsbench.run.interrupts import held, ignore_signal
from nsbench.run.runner import Executor, in_process, sources_pickle
from nsbench.plugins.records import ClipSource
from nsbench.plugins.specs import EngineSpec


@contextlib.contextmanager
def executor_for(kind: str, jobs: int, scheduler: str | None, engines: Sequence[EngineSpec],
                 clip_timeout: float) -> Iterator[Executor | None]:
    """The run's executor (None: in this process), connected before any engine
    runs: a Dask scheduler that does not answer, or workers that lack what
    the engines need, stop the run before it computes anything. ``clip_timeout``:
    seconds (0: no bound); under ``--jobs 1`` a bound runs the clips in one worker."""
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
            yield ProcessPool(jobs, clip_timeout)
    elif clip_timeout:
        yield ProcessPool(1, clip_timeout)  # one core's work, as in this process: BLAS keeps its threads
    else:
        yield None


@dataclass(frozen=True)
class ProcessPool:
    """``jobs`` forked worker processes, each building the engine once; with
    a ``clip_timeout`` (seconds; nsbench.run.clip_timeout) the parent kills
    one whose clip is past its bound."""

    jobs: int
    clip_timeout: float = 0.0

    @property
    def parallel(self) -> bool:
        return self.jobs > 1

    def run(self, run: EngineRun, sources: Sequence[ClipSource], holder: EngineHolder) -> Iterator[Outcome]:
        if (len(sources) < 2 and not self.clip_timeout) or not workers_possible(sources, holder.notes, self.serial_note):
            return in_process(run, sources, holder)
        # The parent's build checked that the engine starts (and measured
        # what it measures); the workers build their own.
        holder.discard()
        return run_in_workers(run, sources, min(self.jobs, len(sources)), holder.notes, self.clip_timeout)

    @property
    def serial_note(self) -> str:
        """How the clips ran, where no worker process could take them."""
        where = "ran serially" if self.parallel else "ran in this process"
        return f"{where}, without --clip-timeout's bound" if self.clip_timeout else where


def workers_possible(sources: Sequence[ClipSource], notes: list[str], serial_note: str) -> bool:
    """Worker processes need fork (engine factories need not pickle) and clip
    sources that pickle; otherwise the clips run here, and say so."""
    if "fork" not in multiprocessing.get_all_start_methods():
        notes.append(f"{serial_note}: this platform cannot fork worker processes")
        return False
    return sources_pickle(sources, notes, serial_note)


# One engine per worker process, built by the pool's initializer, whether the
# worker hands the reference features back (work_on), and its clips' deadlines.
_worker: tuple[EngineHolder, EngineRun, bool, Deadlines | None] | None = None

# With a cache, later engines' workers can read the reference features from it;
# handing them back through the parent instead saves those reads but holds them
# in the parent (up to reference.MEMORY_BYTES). Worth it for a set of up to this
# many clips (the demo's 156), not for a research-size run, whose parent stays flat.
SHARE_WITH_CACHE_CLIPS = 500


def start_worker(run: EngineRun, scratch: str, share_features: bool, deadlines: Deadlines | None, parent: int) -> None:
    global _worker
    # Its own process group: the parent ends a worker, what it forked and the
    # programs it runs (each in a group of its own) at once, and a Ctrl-C at
    # the terminal reaches only the parent, which decides. The parent's signal handlers, inherited by fork,
    # are not the worker's: SIGTERM ends it at once, whichever of its threads
    # (BLAS, onnxruntime) the signal lands on; SIGINT does nothing.
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, ignore_signal)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    end_with(parent)
    if deadlines is not None:
        deadlines.join()
    clip_timeout.current = deadlines
    # Temporary files of the engine and of its programs go where the parent
    # removes them, however the worker ends.
    tempfile.tempdir = os.environ["TMPDIR"] = scratch
    holder = EngineHolder(run.spec, run.options)
    # Runs when the worker exits normally, so subprocesses and temporary
    # folders of the worker's engine are cleaned up like the serial ones.
    multiprocessing.util.Finalize(holder, holder.discard, exitpriority=10)
    _worker = (holder, run, share_features, deadlines)


# prctl's option (linux/prctl.h): a signal for this process when its parent ends.
PR_SET_PDEATHSIG = 1


def end_with(parent: int) -> None:
    """A worker whose parent is gone ends too, rather than wait for ever on a
    pipe no one reads (a SIGKILLed parent stops no worker): on Linux the
    kernel kills it (PR_SET_PDEATHSIG; the pool forks from the main thread,
    whose end is the process's), elsewhere a thread looks every second."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        threading.Thread(target=end_when_orphaned, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # it ended before the line above
        os._exit(1)


def end_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def work_on(index: int, source: ClipSource) -> tuple[Outcome, list[str], dict]:
    """The clip's outcome, the engine's notes, and the reference features the
    clip computed or read, for the parent to hand to the next engine's workers
    (nsbench.store.reference), where the pool shares them: always without a
    cache, and with one for sets of up to SHARE_WITH_CACHE_CLIPS clips, whose
    next engine's workers then find them in memory rather than reading and
    parsing a cache entry per clip and feature."""
    assert _worker is not None, "start_worker did not run"
    holder, run, share_features, deadlines = _worker
    marker = reference.memory_marker()
    if deadlines is not None:
        deadlines.start(index)
    try:
        outcome = run_clip(holder, source, run)
    finally:
        if deadlines is not None:
            deadlines.finish()
    return outcome, holder.all_notes(), reference.computed_since(marker) if share_features else {}


class WorkerDied(Exception):
    """A worker process ended abruptly (a crash in an engine's native code, the
    kernel's OOM killer), or the parent killed it: ``timed_out`` is then (the
    index of its clip, the clip's bound in seconds). The message says how."""

    def __init__(self, how: str, timed_out: tuple[int, float] | None = None):
        super().__init__(how)
        self.timed_out = timed_out


def run_in_workers(run: EngineRun, sources: Sequence[ClipSource], jobs: int, notes: list[str],
                   bound: float) -> Iterator[Outcome]:
    """Clips in clip order. A clip past its ``bound`` fails, timed out; the
    clips before it that had not come back run again in fresh workers. A
    worker that dies otherwise breaks the pool, and which of the clips in
    progress killed it is unknown: the first clip not returned runs again
    alone, in a fresh worker, and fails if that one dies too; then fresh
    workers take the rest."""
    done = 0
    while done < len(sources):
        start = done
        try:
            for outcome in run_in_pool(run, sources[start:], jobs, notes, bound):
                done += 1
                yield outcome
        except WorkerDied as died:
            if died.timed_out is None:
                yield from alone(run, sources[done], notes, bound)
                done += 1
                continue
            late = start + died.timed_out[0]  # its index in the pool's clips
            yield from run_in_workers(run, sources[done:late], jobs, notes, bound)
            yield Outcome(run.record_for(sources[late], timed_out(died.timed_out[1])), None, 0)
            done = late + 1


def alone(run: EngineRun, source: ClipSource, notes: list[str], bound: float) -> Iterator[Outcome]:
    """The clip a dying worker may have killed, run again in a worker of its own."""
    try:
        yield from run_in_pool(run, [source], 1, notes, bound)
    except WorkerDied as died:
        how = timed_out(died.timed_out[1]) if died.timed_out else died_text(str(died))
        yield Outcome(run.record_for(source, how), None, 0)


def import_metric_packages(run: EngineRun) -> None:
    """The packages the metrics load when they first score (``requires``: the
    PESQ and DNSMOS packages, say), loaded here before the fork: every worker
    of every engine inherits them, rather than each importing its own."""
    for metric in run.metrics:
        for module in metric.requires:
            with contextlib.suppress(ImportError):
                importlib.import_module(module)


def run_in_pool(run: EngineRun, sources: Sequence[ClipSource], jobs: int, notes: list[str],
                bound: float) -> Iterator[Outcome]:
    import_metric_packages(run)
    context = multiprocessing.get_context("fork")
    scratch = PrivateFolder("nsbench-workers-")
    deadlines = Deadlines(jobs, bound, context) if bound else None
    initargs = (run, str(scratch.path), run.cache is None or len(sources) <= SHARE_WITH_CACHE_CLIPS, deadlines, os.getpid())
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=start_worker, initargs=initargs)
    try:
        for outcome, worker_notes, features in in_window(pool, sources, IN_FLIGHT_PER_WORKER * jobs, deadlines):
            notes.extend(note for note in worker_notes if note not in notes)
            reference.keep(features)
            yield outcome
    except BrokenProcessPool as error:
        # The pool SIGTERMs the other workers; the programs they ran go too.
        workers = end_workers(pool)
        pool.shutdown(wait=True)  # the exit codes are known after
        raise WorkerDied(how_it_died(workers), deadlines.killed if deadlines else None) from error
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


def in_window(pool: ProcessPoolExecutor, sources: Sequence[ClipSource], size: int,
              deadlines: Deadlines | None) -> Iterator[tuple[Outcome, list[str], dict]]:
    """work_on's results in clip order, at most ``size`` clips submitted and
    not yet consumed; each future is dropped once its result is taken. The
    next clip is submitted after the consumer took the last result, so a pool
    found broken then fails the first clip not returned (run_in_workers'
    suspect), never one already handed on."""
    # Not pool.map: on an interrupt it cancels what is queued, and the pool,
    # seeing its workers killed, then fails on those (InvalidStateError);
    # and it submits every clip at once.
    upcoming = enumerate(sources)
    with held():  # the first submit forks the workers: an interrupt there is raised after it
        window = collections.deque(pool.submit(work_on, *item) for item in itertools.islice(upcoming, size))
    while window:
        yield result_in_time(window.popleft(), deadlines)
        for item in itertools.islice(upcoming, 1):
            window.append(pool.submit(work_on, *item))


def result_in_time(future: Future, deadlines: Deadlines | None) -> tuple[Outcome, list[str], dict]:
    """The future's result; meanwhile a worker past its clip's deadline is
    killed (the pool then breaks: BrokenProcessPool)."""
    if deadlines is None:
        return future.result()
    while True:
        try:
            return future.result(timeout=deadlines.wait_seconds())
        except TimeoutError:
            deadlines.kill_overdue()


def end_workers(pool: ProcessPoolExecutor) -> list[multiprocessing.process.BaseProcess]:
    """Kills each worker and every program it runs (their process groups), at
    once; their temporary files are in the scratch folder the parent removes.
    Returns the workers."""
    workers = list((pool._processes or {}).values())  # no public API reaches them
    for worker in workers:
        kill_worker(worker.pid)
    return workers


def how_it_died(workers: list[multiprocessing.process.BaseProcess]) -> str:
    """Exact for a pool of one, as a clip's second try runs."""
    codes = [worker.exitcode for worker in workers if worker.exitcode]
    if not codes:
        return "no exit code"
    return f"signal {-codes[0]}, {signal.Signals(-codes[0]).name}" if codes[0] < 0 else f"exit code {codes[0]}"


def died_text(how: str) -> str:
    return (f"the worker process running this clip died ({how}): a crash in the engine's native code, "
            "or the system killed it; fresh workers took the next clips")


def timed_out(seconds: float) -> str:
    return (f"timed out after {seconds:g} s (--clip-timeout): its worker process was killed; "
            "fresh workers took the next clips")


