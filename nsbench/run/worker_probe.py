"""What a Dask worker runs before it can be trusted with nsbench's code: the
modules it cannot import (the start-up check), and the door of every task
(``run_batch``), which imports nsbench only when it runs.

This module is sent to the workers by value (``cloudpickle.register_pickle_by_value``
in nsbench.run.dask_executor): a worker without nsbench could not unpickle a
reference to nsbench's code, so it must import nothing of nsbench at the top.
A task whose function is such a reference kills a worker that joined after the
start-up check without nsbench as it decodes the message (or, when a worker
plugin refers to nsbench too, leaves it closing for ever with the batch); this
door is decoded there and answers why it cannot run.
"""
from __future__ import annotations

import importlib.util
from typing import Any

# The first item of what ``run_batch`` returns on a worker that cannot import
# nsbench's code: a plain tuple, since that worker has no class of nsbench's.
CANNOT_RUN = "nsbench-worker-cannot-run"


def missing_modules(names: list[str]) -> list[str]:
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def run_batch(token: str, run_blob: bytes, batch_blob: bytes) -> Any:
    """nsbench.run.dask_worker.work_on_worker's result, or (CANNOT_RUN,
    this worker's address, the module it lacks, the error) where it cannot
    be imported."""
    try:
        from nsbench.run.dask_worker import work_on_worker
    except ImportError as error:
        return CANNOT_RUN, worker_address(), error.name or "nsbench", f"{type(error).__name__}: {error}"
    return work_on_worker(token, run_blob, batch_blob)


def worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # not on a worker (a test calling it here): no address to name
        return "a Dask worker"
