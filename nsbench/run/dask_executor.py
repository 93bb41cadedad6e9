"""``--executor dask``: clips run as tasks on a Dask cluster (dask.distributed).

With ``--scheduler ADDRESS`` the run uses an existing cluster; without one it
starts a local cluster of ``--jobs`` single-threaded worker processes and stops
it at the end. Each worker builds an engine once per run and keeps it for the
run's clips; the parent closes them on every worker when the engine is done.

Each task runs a batch of ``batch_size`` consecutive clips (up to 8; fewer
on a short run, so it still spreads over every worker) and returns their
outcomes in order: the per-task cost of the scheduler and of sending the
engine's run (its bytes travel once per batch) is shared by the batch. The
parent keeps at most ``in_flight_limit`` batches submitted (twice the
cluster's threads, plus one), takes their results in clip order and releases
each once taken: its memory, and that of a local cluster's scheduler (which
runs in this process), stays flat in the number of clips, and the workers
hold no result after it is consumed.

A clip that fails inside a batch fails alone (run_clip records it). A worker
that dies takes the batch it runs with it: the scheduler gives the batch to
another worker (``distributed.scheduler.allowed-failures`` is 1 on a local
cluster; the scheduler queues the batches and hands each worker only the one
it runs, so a death counts against that batch alone; an existing scheduler
keeps its own settings), then each clip of the batch is recorded as failed
with the reason and the run goes on.

Workers need nsbench and the engines' packages importable; a plugin given by
file path (``--plugin file.py``) is installed on each worker under the
parent's module name (nsbench.run.dask_plugin_files). Task arguments travel
as pickled bytes, unpickled in the task: a worker that cannot (a module it
lacks) returns the reason, and the run stops in one line rather than the
worker dying on the message. On an existing cluster the imports are checked
on every worker before anything runs: a worker that cannot import one stops
the run in one line naming the module, the workers and what to install
there. A worker that joins later without nsbench is not checked, but each
task's function is nsbench.run.worker_probe.run_batch sent by value, which
imports nsbench only as it runs: there it answers the module it lacks, and
the run stops in one line naming the worker, every clip before that batch
written (a reference to nsbench's code killed that worker as it decoded the
message, or left it closing for ever with the batch, and the run waiting).
No result for ``$NSBENCH_DASK_STALL`` seconds (an hour by default) for the
batch taken next also stops the run in one line, the clips done kept. The cache
(nsbench.store.cache) is written where each worker runs: on a remote cluster, point
``NSBENCH_CACHE`` at a shared filesystem for runs to resume there.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import os
import signal
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from nsbench.run.dask_worker import CLIPS, CannotUnpack, close_on_worker
from nsbench.run.worker_probe import CANNOT_RUN
from nsbench.run.engine_run import EngineHolder, EngineRun, Outcome
from nsbench.run.runner import in_process, sources_pickle
from nsbench.plugins.errors import UserError
from nsbench.text import plural
from nsbench.plugins.records import ClipRecord, ClipSource
from nsbench.plugins.specs import EngineSpec

CONNECT_TIMEOUT = "5s"
LOCAL_PLUGIN_PREFIX = "nsbench_local_plugin_"
# A local cluster idling costs ~0.11 CPU-s a second across its processes, most
# of it timers: an event-loop tick every 20 ms (only for "unresponsive loop"
# warnings), system and memory monitors every 0.5 s and 0.1 s (dashboard
# figures; memory limits then react within 1 s). Slower timers: ~0.07 CPU-s/s.
QUIET_TIMERS = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "2s",
                "distributed.worker.memory.monitor-interval": "1s"}
# distributed keeps the last low-level-log-length messages each comm sent (and
# as many transitions) for its developers' debugging. Each task's message
# holds its batch's clips and the engine's run: at the default 1,000 the parent
# (the client, and a local cluster's scheduler) kept 7.3 KB a clip until those
# logs were full, about 60 MB at 8 clips a batch (bench/audit_memory.py with
# --executor dask, 500 and 2,000 clips); the 100,000-clip run peaked at 312 MB.
SHORT_LOGS = {"distributed.admin.low-level-log-length": 50}


@dataclass(frozen=True)
class DaskExecutor:
    """The clips as tasks on a connected Dask client (nsbench.run.runner.Executor)."""

    client: Any
    parallel = True

    def run(self, run: EngineRun, sources: Sequence[ClipSource], holder: EngineHolder) -> Iterator[Outcome]:
        if not sources_pickle(sources, holder.notes):
            return in_process(run, sources, holder)
        holder.discard()  # the workers build their own
        return run_on_dask(self.client, run, sources, holder.notes)


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int, engines: Sequence[EngineSpec] = ()) -> Iterator[Any]:
    """A connected client: to ``scheduler`` (its workers checked for the
    engines' modules), or to a local cluster started here."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as error:
        raise UserError(f"--executor dask needs dask.distributed ({error}): pip install 'nsbench[dask]'") from error
    stall_seconds()  # a wrong $NSBENCH_DASK_STALL stops the run here, before anything runs
    if scheduler:
        try:
            with dask.config.set(SHORT_LOGS):  # read as the client's comm opens
                client = Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise UserError(f"cannot reach the Dask scheduler at {scheduler} within {CONNECT_TIMEOUT}: {error}") from error
        with client:
            check_workers(client, scheduler, engines)
            send_local_plugins(client)
            yield client
        return
    # One retry elsewhere for a batch whose worker died, then its clips fail. A
    # worker holds only the batch it runs (saturation 1.0): a batch queued on a
    # worker that died would otherwise count that death against it too.
    settings = {"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0, **QUIET_TIMERS,
                **SHORT_LOGS}
    with dask.config.set(settings):
        with sigint_ignored():  # inherited: a Ctrl-C reaches only this process, which stops the workers
            # No dashboard; the scheduler's health server on a free local port, not 8787
            # (taken by any other cluster on the machine: a warning on stderr).
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                   scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        with cluster, Client(cluster, set_as_default=False) as client:
            send_local_plugins(client)
            yield client


def worker_probe(name: str = "missing_modules") -> Any:
    """A function of nsbench.run.worker_probe, sent by value: it runs on
    workers that may lack nsbench. A copy, not the module's own: distributed
    pickles a task with plain pickle first, which would send a reference to
    the module's; the copy is not found there under its name, so the task
    goes by cloudpickle, by value (and so again from the scheduler, which
    has nsbench, to the workers)."""
    import types

    import cloudpickle

    from nsbench.run import worker_probe as probe

    cloudpickle.register_pickle_by_value(probe)
    function = getattr(probe, name)
    return types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)


def needed_modules(engines: Sequence[EngineSpec]) -> dict[str, str]:
    """Module -> what to install for it, on each worker: nsbench, each
    engine's plugin module (not one sent by value) and its ``requires``."""
    from nsbench.version import __version__

    needed = {"nsbench": f"nsbench {__version__} (pip install the same wheel or checkout as here)"}
    for engine in engines:
        factory = getattr(engine.factory, "func", engine.factory)  # a family's bound partial
        module = getattr(factory, "__module__", "") or ""
        if module and not module.startswith(LOCAL_PLUGIN_PREFIX) and module != "__main__":
            needed.setdefault(module, f"the package of engine {engine.name}'s plugin")
        for name in engine.requires:
            needed.setdefault(name, f"{engine.install or name} (engine {engine.name})")
    return needed


def check_workers(client: Any, scheduler: str, engines: Sequence[EngineSpec]) -> None:
    """The scheduler can import nsbench (it unpickles the tasks) and every
    worker what the engines need, or UserError in one line."""
    if "nsbench" in client.run_on_scheduler(worker_probe(), ["nsbench"]):
        raise UserError(
            f"the Dask scheduler at {scheduler} cannot import nsbench (it unpickles the tasks): install "
            f"{needed_modules(())['nsbench']} where the scheduler runs, then run again; nothing was computed"
        )
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        raise UserError(f"the Dask scheduler at {scheduler} has no workers: start some (dask worker {scheduler}) with nsbench installed")
    needed = needed_modules(engines)
    missing_by_worker = client.run(worker_probe(), list(needed))
    for module, install in needed.items():
        lacking = sorted(worker for worker, missing in missing_by_worker.items() if module in missing)
        if lacking:
            shown = ", ".join(lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
            raise UserError(
                f"{len(lacking)} of {len(workers)} Dask workers cannot import {module} ({shown}): "
                f"install {install} on each worker, then run again; nothing was computed"
            )


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """The terminal sends Ctrl-C to every process of the run; worker
    processes started meanwhile ignore it (each would print a traceback)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def send_local_plugins(client: Any) -> None:
    """Plugins loaded from a file are not importable on the workers: each
    worker, now or joining later, runs the file under the parent's module
    name (nsbench.run.dask_plugin_files). What pickles only by value (a
    plugin's lambdas) cloudpickle sends so (``packed``)."""
    import cloudpickle

    from nsbench.run import dask_plugin_files
    from nsbench.run.dask_plugin_files import PluginFiles, plugin_files

    for name, module in list(sys.modules.items()):
        if name.startswith(LOCAL_PLUGIN_PREFIX):
            cloudpickle.register_pickle_by_value(module)
    files = plugin_files(LOCAL_PLUGIN_PREFIX)
    if not files:
        return
    # By value: a worker that joins later without nsbench could not unpickle a
    # reference, and is then left closing for ever with the batch it was given.
    cloudpickle.register_pickle_by_value(dask_plugin_files)
    try:
        client.register_plugin(PluginFiles(files))
    except Exception as error:
        shown = ", ".join(path for _, path, _ in files)
        raise UserError(f"a Dask worker cannot import the plugin file {shown}: {type(error).__name__}: {error}") from error


def packed(value: Any) -> bytes:
    """``value`` as bytes, for a task's arguments: the scheduler passes them
    on unread (it need not import the plugins) and the task unpickles them,
    where a failure is the task's result (``CannotUnpack``) instead of a
    worker dying as it decodes the message (the run hung). Plain pickle
    first (fast: a plugin file's functions by reference, installed on the
    workers by ``send_local_plugins``), cloudpickle for what it cannot do."""
    import pickle

    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        import cloudpickle

        return cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


class ClusterCannotGoOn(UserError):
    """No engine can run on the cluster as it is: the run stops
    (nsbench.session.loop) rather than skipping engine after engine."""


class WorkersCannotLoadClips(ClusterCannotGoOn):
    """A worker cannot unpickle the dataset's clips."""


MAX_BATCH = 8
STALL_VARIABLE = "NSBENCH_DASK_STALL"
# An hour without a result while batches are in flight: a stuck cluster, not a
# slow engine. The batch taken next is the oldest submitted, so this is about
# the time of one batch (up to 8 clips, e.g. 8 clips of 7 minutes each at real
# time) plus its wait for a thread; a slower batch needs a larger value.
DEFAULT_STALL_SECONDS = 3600.0


def stall_seconds() -> float | None:
    """``$NSBENCH_DASK_STALL`` seconds (0: wait for ever), else the default."""
    text = os.environ.get(STALL_VARIABLE, "").strip()
    if not text:
        return DEFAULT_STALL_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        raise UserError(f"${STALL_VARIABLE} must be a number of seconds (0: no limit), not {text!r}") from None
    return seconds if seconds > 0 else None


def cluster_threads(client: Any) -> int:
    return sum(client.nthreads().values()) or 1


def in_flight_limit(client: Any) -> int:
    """Batches in flight at once: twice the cluster's threads, plus one, so
    every thread has the next batch at hand as it finishes one. The one more
    makes the batches' task group larger than twice the threads, which is
    what the scheduler needs to call them root tasks and queue them itself,
    handing each worker only what it runs (worker-saturation): a worker that
    dies then costs only the batch it was running."""
    return 2 * cluster_threads(client) + 1


def batch_size(clips: int, threads: int) -> int:
    """Clips a task runs: up to MAX_BATCH, but at least four batches a thread,
    so that a short run still reaches every worker and the last batches,
    which leave threads idle as they finish, are short."""
    return max(1, min(MAX_BATCH, clips // (4 * threads)))


def run_on_dask(client: Any, run: EngineRun, sources: Sequence[ClipSource], notes: list[str]) -> Iterator[Outcome]:
    """The clips' outcomes, in clip order, with at most ``in_flight_limit``
    batches of ``batch_size`` clips submitted at a time: the parent (and a
    local cluster's scheduler, which runs in it) holds a task per batch in
    flight, not per clip of the set, and each result is released once
    consumed, so the workers drop it."""
    token = uuid.uuid4().hex
    stall, run_batch = stall_seconds(), worker_probe("run_batch")  # by value: a worker without nsbench says so
    run_blob = packed(run)  # once: each task carries the same bytes; a worker unpickles it once
    size = batch_size(len(sources), cluster_threads(client))
    batches = (list(sources[start:start + size]) for start in range(0, len(sources), size))
    window: collections.deque[tuple[list[ClipSource], Any]] = collections.deque()

    def submit(chosen: list[list[ClipSource]]) -> None:
        count = len(chosen)
        futures = client.map(run_batch, [token] * count, [run_blob] * count, [packed(b) for b in chosen], pure=False)
        window.extend(zip(chosen, futures))

    try:
        submit(list(itertools.islice(batches, in_flight_limit(client))))  # at once: the scheduler sees the group whole
        while window:
            batch, future = window.popleft()
            outcomes, worker_notes = result_of(future, run, batch, stall, len(window) + 1)
            future.release()  # the workers drop the result
            del future
            submit(list(itertools.islice(batches, 1)))  # refill before the caller's turn: the workers keep going
            notes.extend(note for note in worker_notes if note not in notes)
            while outcomes:
                yield outcomes.pop(0)  # each outcome dropped here once the caller has it
    finally:
        client.cancel([future for _, future in window])
        window.clear()
        with contextlib.suppress(Exception):  # a cluster going away has nothing left to close
            client.run(close_on_worker, token)


def result_of(future: Any, run: EngineRun, batch: list[ClipSource], stall: float | None,
              in_flight: int) -> tuple[list[Outcome], list[str]]:
    """The batch's outcomes and the worker's notes; each clip of a batch whose
    workers died is recorded as failed; a worker that cannot unpickle the task
    or import nsbench, or no result within ``stall`` seconds, stops the run."""
    from distributed import KilledWorker

    try:
        result = future.result(timeout=stall)
    except TimeoutError as error:
        if future.done():  # the task's own error, not the wait's
            raise
        raise ClusterCannotGoOn(
            f"no result in {stall:g} s for the Dask batch from clip {batch[0].clip_id} ({plural(len(batch), 'clip')}; "
            f"{plural(in_flight, 'batch', 'batches')} in flight): "
            f"are its workers alive and able to run nsbench? (${STALL_VARIABLE} sets the limit, 0 none); "
            "the clips done so far are kept"
        ) from error
    except ModuleNotFoundError as error:  # a worker that joined after the check
        raise UserError(
            f"a Dask worker cannot import {error.name}: install it on every worker; the clips done so far are kept"
        ) from error
    except KilledWorker as error:
        return [Outcome(killed(run, source, error, len(batch)), None, 0) for source in batch], []
    if isinstance(result, tuple) and result[:1] == (CANNOT_RUN,):
        raise worker_cannot_run(*result[1:])
    if isinstance(result, CannotUnpack):
        stop = WorkersCannotLoadClips if CLIPS in str(result) else UserError
        raise stop(f"{result}: install it on every worker; the clips done so far are kept")
    return result


def worker_cannot_run(worker: str, module: str, error: str) -> ClusterCannotGoOn:
    """A worker that joined after the start-up check without nsbench (or a
    module nsbench imports) answered a batch with why it cannot run it."""
    install = needed_modules(()).get(module, module)
    return ClusterCannotGoOn(
        f"the Dask worker {worker}, which joined after the start-up check, cannot import {module} ({error}): "
        f"install {install} there, or stop that worker, then run again; the clips done so far are kept"
    )


def killed(run: EngineRun, source: ClipSource, error: Exception, batch_clips: int) -> ClipRecord:
    return run.record_for(
        source,
        f"the Dask workers running this clip died, as often as the scheduler allows (allowed-failures), in a batch of "
        f"{batch_clips} clips that fail together: a crash in the engine's native code, or the system killed them ({error})",
    )
