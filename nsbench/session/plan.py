"""The run's plan: what the flags and the registry decide before any engine
runs, built once (``plan_run``) and frozen.

The engines in order (the first baseline always among them), the metrics
bound to their options, the clips (once per input condition under
``--condition``), the blocks of ``--block-size``, the cache and the metrics'
cache keys, and what every ``<engine>.json`` shares (the dataset's
description, the provenance, the run's identity). The loop
(nsbench.session.loop) reads it and never changes it; what does change as the
run goes is nsbench.session.state.RunState.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.store import cache
from nsbench.store.keys import Identity, checks_identity, engine_identity, metric_identity
from nsbench.run import conditions, flag_use, no_reference
from nsbench.config import Blocks, RunConfig, blocks_from
from nsbench.report import coverage, provenance
from nsbench.report.layout import View, read_view
from nsbench.plugins.metric_options import bind_options, metric_context, metric_provenance
from nsbench.plugins.registry import Registry, default_dataset
from nsbench.plugins.errors import UserError
from nsbench.plugins.records import ClipSource
from nsbench.plugins.specs import DatasetSpec, EngineSpec, MetricSpec, reported_values


@dataclass(frozen=True)
class RunPlan:
    """What every engine of one run shares; nothing in it changes once made."""

    config: RunConfig
    registry: Registry
    dataset: DatasetSpec  # with the run's headline metric, and the condition cell under --condition
    engines: tuple[EngineSpec, ...]  # in the order they run
    sources: tuple[ClipSource, ...]  # the clips; under --condition, each once per condition
    metrics: tuple[MetricSpec, ...]  # bound to their options (nsbench.plugins.metric_options)
    conditions: tuple[str, ...]  # --condition's names, none first; () without
    blocks: Blocks | None  # --block-size or --block-ms; None: whole clips
    cache: cache.Cache | None  # None: --no-cache
    # With a cache: each metric's digest (name, version, code), the same for every engine.
    metric_identities: Mapping[str, str]
    shared: Mapping[str, Any]  # in every <engine>.json: the dataset's description, the provenance, the run's identity
    # Where the reports place engines and metrics, read from this run's registry (nsbench.report.layout).
    view: View
    ratings: tuple[Any, ...] = ()  # a rated set's ratings (nsbench.ratings.RatedSet per cell); () for other sets

    def engine_options(self, engine: EngineSpec) -> dict[str, Any]:
        """What the engine's factory receives: the flags its plugin added (the
        run adds ``seed``; the registry binds a family's ``engine_argument``)."""
        return self.config.engine_options(self.registry.engines.get(engine.name).plugin)

    @property
    def baselines(self) -> list[str]:
        return baseline_names(self.registry)

    @property
    def reported(self) -> list[MetricSpec]:
        """One spec per value the metrics report (nsbench.plugins.types.reported_values)."""
        return reported_values(self.metrics)

    def planned_runs(self, engine: EngineSpec) -> int:
        return len(self.sources) * len(self.seeds(engine))

    def seeds(self, engine: EngineSpec) -> list[int | None]:
        """--seeds for a seeded engine; one run (seed None) for the others."""
        return list(self.config.seeds) if self.config.seeds and engine.seeded else [None]

    def cache_identity(self, engine: EngineSpec, options: Mapping[str, Any]) -> Identity:
        return cache_identity(engine, options, self.registry, self.metric_identities)


def plan_run(config: RunConfig, registry: Registry) -> RunPlan:
    """The plan, or UserError for what the flags ask that cannot be done."""
    dataset, view = dataset_of(config, registry), read_view(registry)
    flag_use.check_dataset_flags(config, registry, dataset)  # before "not found" for a --data-folder it does not take
    check_arguments(config, dataset)
    # Named engines, metrics and conditions are checked before the clips are
    # listed (a misspelt flag says so at once); the defaults depend on the clips.
    engines = select_engines(list(config.engines), registry) if config.engines else []
    if engines:
        flag_use.check_engine_flags(config, registry, engines)
    named_metrics = select_metrics(list(config.metrics), registry) if config.metrics else []
    chosen = conditions.resolve(list(config.conditions), registry.conditions)  # a missing codec stops the run here
    dataset_options = config.dataset_options(registry.datasets.get(dataset.name).plugin)  # its own flags only
    sources = dataset.clips(dataset_options)[: config.limit]
    if not sources:
        raise UserError(f"dataset '{dataset.name}' has no clips")
    ratings = tuple(dataset.ratings(dataset_options)) if dataset.ratings else ()
    if not engines:  # on a rated set the rated files are the passthrough's outputs: nothing else by default
        engines = select_engines(baseline_names(registry)[:1] if ratings else [], registry, sources)
        flag_use.check_engine_flags(config, registry, engines)
    engines = [declared_by_flags(spec, config, registry) for spec in engines]
    check_engines(engines, config, registry)
    metrics, metric_options = bind_options(named_metrics or select_metrics([], registry, sources, bool(ratings)),
                                           lambda metric: config.plugin_flags(registry.metrics.get(metric.name).plugin),
                                           metric_context(registry, config.use_cache, config.rerun))
    dataset = dataclasses.replace(dataset, headline_metric=no_reference.headline(
        view.headline(dataset.headline_metric), reported_values(metrics), sources))
    shared = shared_facts(config, dataset.describe(dataset_options), sources, metrics, metric_options)
    if chosen:  # each clip once per condition, a cell each
        dataset = dataclasses.replace(dataset, cell_keys=conditions.with_condition_cells(dataset.cell_keys))
        store = (str(cache.cache_root()), not config.rerun, config.cache_max_size) if config.use_cache else None
        sources = conditions.conditioned_sources(sources, chosen, store)
        shared["provenance"]["conditions"] = conditions.provenance(chosen, registry.conditions)
    names = tuple(condition.name for condition in chosen)
    identities = metric_identities(metrics, registry, metric_options)
    # The report covers the folder's earlier results made on the same (nsbench.report.coverage).
    shared["run_identity"] = coverage.run_identity(
        dataset.name, shared["dataset_description"], [source.clip_id for source in sources], identities, names,
        config.block_size, config.block_ms)
    run_cache = (cache.Cache(cache.cache_root(), read=not config.rerun, max_size=config.cache_max_size)
                 if config.use_cache else None)
    return RunPlan(config, registry, dataset, tuple(engines), tuple(sources), tuple(metrics), names,
                   blocks_from(config), run_cache, identities if run_cache else {}, shared, view, ratings)


def dataset_of(config: RunConfig, registry: Registry) -> DatasetSpec:
    """--dataset's spec, or the default dataset's without it."""
    return registry.datasets.require_available(config.dataset or default_dataset(registry)).spec


def shared_facts(config: RunConfig, description: Any, sources: Sequence[ClipSource], metrics: Sequence[MetricSpec],
                 metric_options: Mapping[str, Any]) -> dict[str, Any]:
    """What every ``<engine>.json`` of the run holds alike."""
    return {
        "dataset_description": description,
        "reference_use": no_reference.reference_use(sources, metrics, reported_values(metrics)),
        # Workers share the cores: wall-clock RTF grows with contention, CPU RTF far less.
        "provenance": {**provenance.collect(list(config.argv)), "jobs": config.jobs, **metric_provenance(metric_options)},
    }


def check_arguments(config: RunConfig, dataset: DatasetSpec) -> None:
    if dataset.needs_data_folder and not config.data_folder:
        raise UserError(f"dataset '{dataset.name}' needs --data-folder")
    if config.data_folder and not Path(config.data_folder).is_dir():
        raise UserError(f"data folder not found: {config.data_folder}")
    if config.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {config.jobs}")
    if config.limit is not None and config.limit < 1:
        raise UserError(f"--limit must be at least 1 (the number of clips to run), got {config.limit}")
    if not config.use_cache and config.rerun:
        raise UserError("--rerun replaces what the cache holds, --no-cache leaves it alone: choose one")
    if config.scheduler and config.executor != "dask":
        raise UserError("--scheduler is for --executor dask")


def select_engines(names: list[str], registry: Registry, sources: Sequence[ClipSource] = ()) -> list[EngineSpec]:
    if names:
        chosen = [registry.engines.require_available(name).spec for name in names]
        # The first baseline (the untrained passthrough) goes in every table,
        # so every number has its reference.
        first = baseline_names(registry)[:1]
        if first and first[0] not in names:
            chosen.insert(0, registry.engines.get(first[0]).spec)
        return chosen
    chosen = []
    for record in registry.engines:
        if not record.spec.default:
            continue
        if record.available:
            chosen.append(record.spec)
        else:
            print(f"nsbench: {record.spec.name} not available ({record.unavailable_note})", file=sys.stderr)
    # A set with no clean reference at all cannot feed an oracle.
    note = no_reference.oracle_note([spec.name for spec in chosen if spec.oracle], sources) if sources else ""
    if note:
        print(f"nsbench: {note}", file=sys.stderr)
        chosen = [spec for spec in chosen if not spec.oracle]
    return chosen


def declared_by_flags(spec: EngineSpec, config: RunConfig, registry: Registry) -> EngineSpec:
    """The spec with the facts its flags declare (``EngineSpec.declared_by``):
    a command: engine's delay goes into the spec's delay field, like any
    engine's, and a display name becomes the engine's name, registered so
    that everything that looks the engine up by name finds it."""
    if spec.declared_by is None:
        return spec
    record = registry.engines.get(spec.name)
    changes = dict(spec.declared_by(config.engine_options(record.plugin)))
    if not changes:
        return spec
    declared = dataclasses.replace(spec, declared_by=None, **changes)
    if declared.name != spec.name:
        if declared.name in registry.engines:
            raise UserError(f"engine name '{declared.name}' for {spec.name} is taken already: give each engine its own name")
        registry.engines.add(dataclasses.replace(record, spec=declared))
    return declared


def check_engines(engines: Sequence[EngineSpec], config: RunConfig, registry: Registry) -> None:
    """Each engine's own check before the first clip (``EngineSpec.check``)."""
    for spec in engines:
        if spec.check is not None:
            spec.check(config.engine_options(registry.engines.get(spec.name).plugin))


def baseline_names(registry: Registry) -> list[str]:
    """The engines every other is compared with (their spec says ``baseline``), in registration order."""
    return [record.spec.name for record in registry.engines if record.spec.baseline]


def select_metrics(names: list[str], registry: Registry, sources: Sequence[ClipSource] = (), rated: bool = False) -> list[MetricSpec]:
    if names:  # a set's name (--metric vbd-row) stands for its metrics
        return [registry.metrics.require_available(name).spec for name in registry.metric_names(names)]
    # Without references the no-reference panel runs by default (nsbench.run.no_reference);
    # on a rated set too: the models trained on ratings are the first to hold against them.
    available = [r.spec for r in registry.metrics if r.available]
    chosen = no_reference.default_metrics(available, sources)
    if rated:
        chosen += [spec for spec in available if spec not in chosen and not spec.needs_reference and spec.needs_voice]
    return chosen


def metric_identities(metrics: Sequence[MetricSpec], registry: Registry, options: Mapping[str, Any] = {}) -> dict[str, str]:
    return {
        metric.name: metric_identity(metric.name, registry.metrics.get(metric.name).version, metric.func,
                                           options.get(metric.name, {}).get("fingerprint", ""))
        for metric in metrics
    }


def cache_identity(engine: EngineSpec, options: Mapping[str, Any], registry: Registry,
                   metric_identities: Mapping[str, str]) -> Identity:
    """What the engine's outputs and scores depend on, besides the clips: the
    engine (name, version, code, fingerprint), the options it reads (its own
    flags, the seed, a lag compensation), and each metric (computed once per run)."""
    try:
        fingerprint = engine.fingerprint(options) if engine.fingerprint else ""
    except OSError as error:
        raise UserError(f"cannot read {error.filename} to key the cache: {error.strerror}; try --no-cache") from error
    version = registry.engines.get(engine.name).version
    engine_key = engine_identity(engine.name, version, engine.factory, fingerprint, options)
    return Identity(engine_key, metric_identities, checks_identity())
