"""What a Dask worker runs to list the modules it cannot import.

This module is sent to the workers by value (``cloudpickle.register_pickle_by_value``
in nsbench.run.dask_executor): a worker without nsbench could not unpickle a
reference to nsbench's code, so it must import nothing of nsbench.
"""
from __future__ import annotations

import importlib.util


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
