"""``--executor dask``: clips run as tasks on a Dask cluster (dask.distributed).

With ``--scheduler ADDRESS`` the run uses an existing cluster; without one it
starts a local cluster of ``--jobs`` single-threaded worker processes and stops
it at the end. Each worker builds an engine once per run and keeps it for the
run's clips; the parent closes them on every worker when the engine is done.

A worker that dies takes its clip with it: the scheduler gives the clip to
another worker once (``distributed.scheduler.allowed-failures`` is 1 on a local
cluster, and each worker holds only the clip it runs, so a death counts
against that clip alone; an existing scheduler keeps its own settings), then
the clip is recorded as failed and the run goes on.

Workers need nsbench, the engines' packages and the plugins importable; a
plugin given by file path (``--plugin file.py``) is sent by value. On an
existing cluster this is checked on every worker before anything runs: a
worker that cannot import one of them stops the run in one line naming the
module, the workers and what to install there. The cache
(nsbench.store.cache) is written where each worker runs: on a remote cluster, point
``NSBENCH_CACHE`` at a shared filesystem for runs to resume there.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from nsbench.run.clips import run_clip
from nsbench.run.engine_run import EngineHolder, EngineRun, Outcome
from nsbench.run.runner import in_process, sources_pickle
from nsbench.plugins.errors import UserError
from nsbench.plugins.records import ClipRecord, ClipSource
from nsbench.plugins.specs import EngineSpec

CONNECT_TIMEOUT = "5s"
LOCAL_PLUGIN_PREFIX = "nsbench_local_plugin_"

# Engines built on this worker, by run token.
_holders: dict[str, EngineHolder] = {}


@dataclass(frozen=True)
class DaskExecutor:
    """The clips as tasks on a connected Dask client (nsbench.run.runner.Executor)."""

    client: Any

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
    send_local_plugins_by_value()
    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise UserError(f"cannot reach the Dask scheduler at {scheduler} within {CONNECT_TIMEOUT}: {error}") from error
        with client:
            check_workers(client, scheduler, engines)
            yield client
        return
    # One retry elsewhere for a clip whose worker died, then it fails. A worker
    # holds only the clip it runs (saturation 1.0): a clip queued on a worker
    # that died would otherwise count that death against it too.
    settings = {"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(settings):
        with sigint_ignored():  # inherited: a Ctrl-C reaches only this process, which stops the workers
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        with cluster, Client(cluster, set_as_default=False) as client:
            yield client


def worker_probe() -> Any:
    """nsbench.run.worker_probe's function, sent by value: it runs on workers
    that may lack nsbench."""
    import cloudpickle

    from nsbench.run import worker_probe as probe

    cloudpickle.register_pickle_by_value(probe)
    return probe.missing_modules


def needed_modules(engines: Sequence[EngineSpec]) -> dict[str, str]:
    """Module -> what to install for it, on each worker: nsbench, each
    engine's plugin module (not one sent by value) and its ``requires``."""
    from nsbench import __version__

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


def send_local_plugins_by_value() -> None:
    """Plugins loaded from a file are not importable on the workers."""
    import cloudpickle

    for name, module in list(sys.modules.items()):
        if name.startswith(LOCAL_PLUGIN_PREFIX):
            cloudpickle.register_pickle_by_value(module)


def run_on_dask(client: Any, run: EngineRun, sources: Sequence[ClipSource], notes: list[str]) -> Iterator[Outcome]:
    """The clips' outcomes, in clip order."""
    from distributed import KilledWorker

    token = uuid.uuid4().hex
    futures = client.map(work_on_worker, sources, token=token, run=run, pure=False)
    try:
        for source, future in zip(sources, futures):
            try:
                outcome, worker_notes = future.result()
            except ModuleNotFoundError as error:  # a worker that joined after the check
                raise UserError(
                    f"a Dask worker cannot import {error.name}: install it on every worker; "
                    "the clips done so far are kept"
                ) from error
            except KilledWorker as error:
                outcome, worker_notes = Outcome(killed(run, source, error), None, 0), []
            notes.extend(note for note in worker_notes if note not in notes)
            yield outcome
    finally:
        client.cancel(futures)
        with contextlib.suppress(Exception):  # a cluster going away has nothing left to close
            client.run(close_on_worker, token)


def work_on_worker(source: ClipSource, token: str, run: EngineRun) -> tuple[Outcome, list[str]]:
    if token not in _holders:
        _holders[token] = EngineHolder(run.spec, run.options)
    holder = _holders[token]
    return run_clip(holder, source, run), holder.all_notes()


def close_on_worker(token: str) -> None:
    holder = _holders.pop(token, None)
    if holder is not None:
        holder.discard()


def killed(run: EngineRun, source: ClipSource, error: Exception) -> ClipRecord:
    return run.record_for(
        source,
        f"the Dask workers running this clip died, twice or more ({error}): a crash in the engine's native code, "
        "or the system killed them",
    )
