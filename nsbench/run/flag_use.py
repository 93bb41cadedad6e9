"""A flag the run does not take is an error, not a silent no-op.

``--data-folder`` without ``--dataset`` once ran the 156-clip demo, and
``--command-name`` beside a ``python:`` engine named nothing. Each dataset
and engine takes the flags its spec lists (``takes_flags``), else every flag
its plugin adds (a dataset that needs a data folder takes ``--data-folder``
too). A flag that only datasets take, given to a dataset that does not, or
that only engines take, given when no engine of the run does, stops the run
before anything runs: one line naming the flag and what takes it. A flag
other parts take as well (a metric's, the harness's own) is not judged here:
whether it was used is not this module's to say.
"""
from __future__ import annotations

from typing import Sequence

from nsbench.plugins.errors import UserError
from nsbench.plugins.registry import Registered, Registry
from nsbench.plugins.specs import DatasetSpec, EngineSpec
from nsbench.config import RunConfig

DATA_FOLDER = "data_folder"
KINDS = ("datasets", "engines", "metrics", "conditions", "recognisers")  # the Registry's fields


def check_dataset_flags(config: RunConfig, registry: Registry, dataset: DatasetSpec) -> None:
    """A UserError for the first flag given that only other datasets take."""
    in_run = taken(config, registry.datasets.get(dataset.name))
    subject = f"dataset '{dataset.name}'" + ("" if config.dataset else " (the default without --dataset)")
    refuse_untaken(config, registry, "datasets", in_run, subject)


def check_engine_flags(config: RunConfig, registry: Registry, engines: Sequence[EngineSpec]) -> None:
    """A UserError for the first flag given that only engines not in the run take."""
    in_run = frozenset().union(*(taken(config, registry.engines.get(engine.name)) for engine in engines))
    subject = f"any engine of this run ({', '.join(engine.name for engine in engines)})"
    refuse_untaken(config, registry, "engines", in_run, subject)


def refuse_untaken(config: RunConfig, registry: Registry, kind: str, in_run: frozenset[str], subject: str) -> None:
    parts = {each: {record.spec.name: taken(config, record) for record in getattr(registry, each)} for each in KINDS}
    # A plugin that registers a dataset and a metric shares its flags between them: not judged.
    elsewhere = frozenset().union(*(flags for other in KINDS if other != kind for flags in parts[other].values()))
    for name, flag in config.given_flags.items():
        owners = sorted(part for part, flags in parts[kind].items() if name in flags)
        if owners and name not in in_run and name not in elsewhere:
            raise UserError(f"{flag} is not taken by {subject}; {kind} that take it: {', '.join(owners)}")


def taken(config: RunConfig, record: Registered) -> frozenset[str]:
    """The option names a part takes: its spec's ``takes_flags``, else its
    plugin's flags (and ``data_folder`` for a dataset that needs one)."""
    declared = getattr(record.spec, "takes_flags", None)
    if declared is not None:
        return frozenset(declared)
    folder = {DATA_FOLDER} if getattr(record.spec, "needs_data_folder", False) else set()
    return frozenset(config.plugin_flags(record.plugin)) | folder
