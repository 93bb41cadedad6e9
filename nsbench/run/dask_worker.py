"""What a Dask worker runs for nsbench.run.dask_executor: a batch of clips, with
the engine built once per run and kept for the run's clips (``work_on_worker``),
and the engine closed when the run is done (``close_on_worker``). Reached
through nsbench.run.worker_probe.run_batch, which a worker without nsbench
can decode; apart from the parent's module so that neither imports the other.
"""
from __future__ import annotations

from typing import Any

from nsbench.run.clips import run_clip
from nsbench.run.engine_run import EngineHolder, EngineRun, Outcome

CLIPS = "a clip of the dataset"

# The runs on this worker and their engines, built once per run, by run token.
_holders: dict[str, tuple[EngineRun, EngineHolder]] = {}


class CannotUnpack(RuntimeError):
    """A worker could not unpickle a task's arguments (a module it lacks).
    Returned by the task, not raised: a raised error is also a page of
    traceback in each worker's log."""


def unpacked(blob: bytes, what: str) -> Any:
    import pickle

    try:
        return pickle.loads(blob)
    except Exception as error:
        raise CannotUnpack(f"a Dask worker cannot unpickle {what}: {type(error).__name__}: {error}") from error


def work_on_worker(token: str, run_blob: bytes, batch_blob: bytes) -> tuple[list[Outcome], list[str]] | CannotUnpack:
    """The batch's outcomes in clip order; run_clip records a failing clip
    itself, so the batch's other clips go on."""
    try:
        if token not in _holders:
            run = unpacked(run_blob, "the engine's run (its engine, metrics and options)")
            _holders[token] = (run, EngineHolder(run.spec, run.options))
        run, holder = _holders[token]
        batch = unpacked(batch_blob, CLIPS)
    except CannotUnpack as error:
        return error
    return [run_clip(holder, source, run) for source in batch], holder.all_notes()


def close_on_worker(token: str) -> None:
    _, holder = _holders.pop(token, (None, None))
    if holder is not None:
        holder.discard()
