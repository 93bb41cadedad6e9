"""The registry: every engine, dataset and metric the plugins declared.

The host calls each plugin's hook with a ``register`` callback and keeps, for
each record, the plugin it came from (shown by ``--list``). Names are unique
across plugins; unknown names get a "did you mean" (as lm-evaluation-harness).
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import sys
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

import pluggy

from nsbench.plugins.specs import ConditionSpec
from nsbench.plugins.manager import plugin_origin
from nsbench.plugins.specs import DatasetSpec, EngineSpec, MetricSetSpec, MetricSpec, RecogniserSpec, spec_version
from nsbench.plugins.errors import UserError

SpecT = TypeVar("SpecT", EngineSpec, DatasetSpec, MetricSpec, ConditionSpec, RecogniserSpec, MetricSetSpec)


@dataclass(frozen=True)
class Registered(Generic[SpecT]):
    spec: SpecT
    origin: str
    plugin_version: str
    plugin: str = ""  # the plugin manager's name for the plugin that registered it

    @property
    def missing_modules(self) -> list[str]:
        return [name for name in self.spec.requires if not module_installed(name)]

    @property
    def unsupported_reason(self) -> str:
        """Why an engine whose modules are installed cannot run on this machine ('' when it can)."""
        check = getattr(self.spec, "unsupported_here", None)
        return check() if check is not None and not self.missing_modules else ""

    @property
    def available(self) -> bool:
        return not self.missing_modules and not self.unsupported_reason

    @property
    def unavailable_note(self) -> str:
        """What --list and a default run say of an unavailable record: why it cannot run here, else its install line."""
        return self.unsupported_reason or self.spec.install

    @property
    def version(self) -> str:
        """The spec's own version (engine or package), else its plugin's."""
        if not self.available:
            return ""
        return spec_version(self.spec) or self.plugin_version


def build_with_argument(factory: Callable, argument: str, options: dict) -> object:
    return factory({**options, "engine_argument": argument})


def module_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def closest_name(name: str, names: list[str]) -> str | None:
    """The registered name ``name`` was meant to be: one differing only in
    case (``RNNoise``) first, then the closest spelling."""
    same_but_case = [known for known in names if known.lower() == name.lower()]
    guess = same_but_case or difflib.get_close_matches(name.lower(), names, n=1)
    return guess[0] if guess else None


@dataclass
class Kind(Generic[SpecT]):
    """All registered records of one kind (engine, dataset or metric)."""

    noun: str
    entries: dict[str, Registered[SpecT]] = field(default_factory=dict)

    def add(self, record: Registered[SpecT]) -> None:
        name = record.spec.name
        if name in self.entries:
            raise UserError(
                f"{self.noun} '{name}' is registered twice: by {self.entries[name].origin} "
                f"and by {record.origin}"
            )
        self.entries[name] = record

    def get(self, name: str) -> Registered[SpecT]:
        if name in self.entries:
            return self.entries[name]
        family = self.family_member(name)
        if family is not None:
            return family
        names = sorted(self.entries)
        hint = f" Did you mean: {guess}?" if (guess := closest_name(name, names)) else ""
        raise UserError(f"Unknown {self.noun} '{name}'.{hint} Available: {', '.join(names)}")

    def family_member(self, name: str) -> Registered[SpecT] | None:
        """``python:pkg.mod:fn`` -> the ``python`` spec, renamed, its argument bound."""
        prefix, _, argument = name.partition(":")
        record = self.entries.get(prefix)
        if not argument or record is None or not getattr(record.spec, "takes_argument", False):
            return None
        bound = {"factory": functools.partial(build_with_argument, record.spec.factory, argument)}
        for reader in ("fingerprint", "declared_by", "check"):  # they read the argument too
            if getattr(record.spec, reader, None) is not None:
                bound[reader] = functools.partial(build_with_argument, getattr(record.spec, reader), argument)
        spec = dataclasses.replace(record.spec, name=name, takes_argument=False, **bound)
        return dataclasses.replace(record, spec=spec)

    def require_available(self, name: str) -> Registered[SpecT]:
        record = self.get(name)
        if record.unsupported_reason:
            raise UserError(f"{self.noun} '{name}' is unavailable on this machine: {record.unsupported_reason}")
        if not record.available:
            missing = ", ".join(record.missing_modules)
            raise UserError(
                f"{self.noun} '{name}' is unavailable: missing {missing}. Install: {record.spec.install}"
            )
        return record

    def __iter__(self):
        return iter(self.entries.values())

    def __contains__(self, name: str) -> bool:
        return name in self.entries


@dataclass
class Registry:
    engines: Kind[EngineSpec]
    datasets: Kind[DatasetSpec]
    metrics: Kind[MetricSpec]
    conditions: Kind[ConditionSpec] = field(default_factory=lambda: Kind("condition"))
    recognisers: Kind[RecogniserSpec] = field(default_factory=lambda: Kind("recogniser"))
    # Named sets of metrics (--metric vbd-row): records of MetricSetSpec, whose
    # availability is their metrics' (metric_set_members).
    metric_sets: Kind[MetricSetSpec] = field(default_factory=lambda: Kind("metric set"))

    def metric_names(self, names: list[str]) -> list[str]:
        """``--metric``'s names with each set's name replaced by its metrics, in
        order, each once; an unknown name is left for ``metrics.get`` to refuse."""
        expanded = [member for name in names for member in self.set_members(name)]
        return list(dict.fromkeys(expanded))

    def set_members(self, name: str) -> tuple[str, ...]:
        """A set's metrics, checked available together (one line naming every
        install they need); any other name, as it is."""
        if name in self.metrics or name not in self.metric_sets:
            return (name,)
        record = self.metric_sets.get(name)
        if record.spec.partial:
            return self.partial_members(record.spec)
        members = [self.metrics.get(member) for member in record.spec.metrics]
        missing = [member for member in members if not member.available]
        if missing:
            modules = ", ".join(dict.fromkeys(m for member in missing for m in member.missing_modules))
            installs = "; ".join(dict.fromkeys(member.spec.install for member in missing))
            names = ", ".join(member.spec.name for member in missing)
            raise UserError(f"metric set '{name}' needs {names}, unavailable: missing {modules}. Install: {installs}")
        return record.spec.metrics

    def partial_members(self, spec: MetricSetSpec) -> tuple[str, ...]:
        """A partial set's members this installation has (--metric urgent:
        what nsbench has of URGENT's list); those it lacks named on stderr."""
        here = [m for m in spec.metrics if m in self.metrics and self.metrics.get(m).available]
        lacking = [m for m in spec.metrics if m not in here]
        if not here:
            raise UserError(f"metric set '{spec.name}': none of its metrics is available here ({', '.join(lacking)})")
        if lacking:
            print(f"nsbench: metric set '{spec.name}' runs {', '.join(here)}; not available here: {', '.join(lacking)}",
                  file=sys.stderr)
        return tuple(here)


def default_dataset(registry: Registry) -> str:
    """The dataset a run uses without --dataset: the first whose spec says ``default``."""
    found = next((record.spec.name for record in registry.datasets if record.spec.default), None)
    if found is None:
        raise UserError("no dataset is marked default: name one with --dataset")
    return found


def build_registry(manager: pluggy.PluginManager) -> Registry:
    registry = Registry(Kind("engine"), Kind("dataset"), Kind("metric"))
    collect(manager, "register_engines", EngineSpec, registry.engines)
    collect(manager, "register_datasets", DatasetSpec, registry.datasets)
    collect(manager, "register_metrics", MetricSpec, registry.metrics)
    collect(manager, "register_conditions", ConditionSpec, registry.conditions)
    collect(manager, "register_recognisers", RecogniserSpec, registry.recognisers)
    collect(manager, "register_metric_sets", MetricSetSpec, registry.metric_sets)
    for record in registry.metric_sets:
        check_metric_set(record, registry)
    return registry


def check_metric_set(record: Registered[MetricSetSpec], registry: Registry) -> None:
    """A set's name is not a metric's (``--metric`` would not know which), and
    its paper table has a column title per metric."""
    spec = record.spec
    if spec.name in registry.metrics:
        raise UserError(f"{record.origin} registered a metric set '{spec.name}', the name of a metric")
    if spec.columns and len(spec.columns) != len(spec.metrics):
        raise UserError(f"{record.origin}: metric set '{spec.name}' has {len(spec.metrics)} metrics "
                        f"but {len(spec.columns)} column titles")


def collect(manager: pluggy.PluginManager, hook_name: str, spec_type: type, kind: Kind) -> None:
    # Each implementation is called on its own so that every record keeps the
    # plugin it came from. get_hookimpls() is in registration order: built-ins
    # first, then entry points, then --plugin files.
    for impl in getattr(manager.hook, hook_name).get_hookimpls():
        origin, version = plugin_origin(manager, impl.plugin)
        impl.function(register=make_register(spec_type, kind, origin, version, manager.get_name(impl.plugin)))


def make_register(spec_type: type, kind: Kind, origin: str, version: str, plugin: str = "") -> Callable[[object], None]:
    def register(spec: object) -> None:
        if not isinstance(spec, spec_type):
            raise UserError(f"{origin} registered {spec!r}, expected a {spec_type.__name__}")
        if not spec.name or not spec.name.replace("-", "_").replace(":", "_").isidentifier():
            raise UserError(f"{origin} registered a {kind.noun} with an invalid name {spec.name!r}")
        kind.add(Registered(spec, origin, version, plugin))

    return register
