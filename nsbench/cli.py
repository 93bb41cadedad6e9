"""``python benchmark.py``: parse flags, run engines over a dataset, write results.

Flag names follow Picovoice's benchmark where it has them (``--engine``,
``--dataset``, ``--data-folder``, ``--output-folder``). ``main(argv)`` takes a
list so tests call the CLI directly (as museval does).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from nsbench.store import cache

from nsbench.run import conditions, malloc_tuning, no_reference, streaming

from nsbench.report import coverage, failures, provenance
from nsbench.run.config import RunConfig
from nsbench.report.writer import ResultsWriter
from nsbench.report.writer import add_arguments as add_report_arguments
from nsbench.run.interrupts import Interrupted, as_interrupted, deferred, signals_interrupt
from nsbench.plugins.manager import get_plugin_manager
from nsbench.run.progress import engine_progress, say
from nsbench.plugins.registry import Registered, Registry, build_registry
from nsbench.report.tables import engine_result, file_stem
from nsbench.run.executors import executor_for
from nsbench.run.runner import ENGINE_FAULTS, LAG_COMPENSATION, EngineHolder, Executor, run_engine
from nsbench.report.summary import alignment_summary, baselines_of, summarise
from nsbench.report.terminal import run_notes_lines, summary_text
from nsbench.text import fit_rows
from nsbench.plugins.metric_options import bind_options, metric_context, metric_provenance
from nsbench.model_files import ModelFileMismatch
from nsbench.plugins.records import ClipRecord, ClipSource
from nsbench.plugins.specs import DatasetSpec, EngineSpec, MetricSpec, reported_values
from nsbench.plugins.errors import UserError

LIST_CHOICES = ("engines", "datasets", "metrics", "conditions", "recognisers", "plugins", "cache")
EXIT_USER_ERROR = 2


def build_parser(manager) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        # "nsbench" when installed, "benchmark.py" from the checkout: the name the user typed.
        prog=Path(sys.argv[0]).name if sys.argv[0].endswith("benchmark.py") else "nsbench",
        description="Compare noise-suppression engines on a test set. Also: nsbench new-plugin NAME; nsbench listen RESULTS_FOLDER.",
    )
    parser.add_argument("--engine", action="append", default=[], help="engine to run (repeatable); default: all available")
    parser.add_argument("--dataset", default="demo", help="dataset to run on (default: demo, generated locally)")
    parser.add_argument("--data-folder", help="root folder of the dataset, where it needs one")
    parser.add_argument("--output-folder", help="save each engine's processed audio here")
    parser.add_argument("--results-folder", default="results", help="where result files go (default: results)")
    parser.add_argument("--metric", action="append", default=[], help="metric to compute (repeatable); default: all available")
    parser.add_argument("--condition", action="append", default=[], metavar="NAME[+NAME...]",
                        help="run the set once per input condition (repeatable; a+b applies a, then b); "
                             "'none', the input as it is, is always added; --list conditions shows them")
    parser.add_argument("--limit", type=int, help="run only the first N clips (the demo set orders them to cover every cell early)")
    parser.add_argument("--plugin", action="append", default=[], help="load a plugin: path/to/file.py or package.module")
    parser.add_argument("--list", choices=LIST_CHOICES, help="list what is registered and exit")
    parser.add_argument(
        "--jobs", type=int, default=usable_cores(),
        help=f"worker processes for the clips (default: the {usable_cores()} usable cores; 1 runs serially, e.g. for a GPU model)",
    )
    parser.add_argument("--executor", choices=("local", "dask"), default="local",
                        help="local: --jobs worker processes here; dask: tasks on a Dask cluster (--scheduler, "
                             "or a local cluster of --jobs workers)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="with --executor dask: an existing scheduler, e.g. tcp://host:8786")
    parser.add_argument("--seeds", type=parse_seeds, help="run seeded engines once per seed: 0-9, or 0,3,7")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary at the end")
    parser.add_argument("--verbose", action="store_true", help="print the whole of report.md at the end, before the summary; "
                             "with --list, every cell whole instead of cut to the terminal's width (piped output is whole)")
    cache = parser.add_argument_group("cache (outputs and scores are kept by content, so a rerun or a resumed run recomputes only what is missing)")
    cache.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    cache.add_argument("--rerun", action="store_true", help="recompute everything, replacing what the cache holds")
    cache.add_argument("--clear-cache", action="store_true", help="empty the cache and exit (--list cache shows where and how big)")
    add_report_arguments(parser)
    streaming.add_arguments(parser)
    # The flags so far shape the run, not an engine's output: the cache keys
    # leave them out. Plugins' flags (an engine's options) go in.
    parser.set_defaults(harness_options=frozenset(action.dest for action in parser._actions))
    parser.set_defaults(plugin_options=add_plugin_arguments(manager, parser))
    return parser


def add_plugin_arguments(manager, parser: argparse.ArgumentParser) -> dict[str, frozenset[str]]:
    """Each plugin's flags, by plugin name: an engine, dataset or metric receives its own plugin's only."""
    added: dict[str, frozenset[str]] = {}
    for impl in manager.hook.add_arguments.get_hookimpls():
        before = {action.dest for action in parser._actions}
        impl.function(parser=parser)
        added[manager.get_name(impl.plugin)] = frozenset(action.dest for action in parser._actions) - before
    return added


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            seeds += list(range(int(first), int(last or first) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 0-9 or 0,3,7, got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}")
    return seeds


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    malloc_tuning.keep_freed_memory()  # before any worker forks (nsbench.run.malloc_tuning says why)
    with signals_interrupt():
        try:
            return run_cli(argv)
        except UserError as error:
            print(f"nsbench: error: {error}", file=sys.stderr)
            return EXIT_USER_ERROR
        except (Interrupted, KeyboardInterrupt) as error:
            stop = as_interrupted(error)
            if not getattr(stop, "reported", False):  # before or between engines: nothing partial to save
                print(f"nsbench: interrupted by {stop.name}", file=sys.stderr)
            return stop.exit_code


def run_cli(argv: list[str]) -> int:
    if argv[:1] == ["new-plugin"]:  # a command; anything else is the benchmark's flags
        from nsbench.plugins.scaffold import new_plugin

        return new_plugin(argv[1:])
    if argv[:1] == ["listen"]:  # a blind listening test from a results folder (nsbench.listen)
        from nsbench.listen import main as listen

        return listen(argv[1:])
    # --plugin is read first: a plugin may add flags the full parser must know.
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--plugin", action="append", default=[])
    plugins = early.parse_known_args(argv)[0].plugin
    manager = get_plugin_manager(plugins)
    args = build_parser(manager).parse_args(argv)
    registry = build_registry(manager)
    if args.clear_cache:
        print(cache.clear(cache.cache_root()))
        return 0
    if args.list == "cache":
        print(cache.usage_text(cache.cache_root()))
        return 0
    if args.list:
        print(list_text(args.list, registry, manager, width=None if args.verbose else list_width()))
        return 0
    return benchmark(RunConfig.from_args(args, argv), registry)


@dataclass
class RunSettings:
    """What every engine of one run shares."""

    config: RunConfig
    registry: Registry
    dataset: DatasetSpec
    sources: list[ClipSource]
    metrics: list[MetricSpec]
    writer: ResultsWriter
    cache: cache.Cache | None
    shared: dict[str, Any]  # in every <engine>.json: the dataset's description, the provenance
    executor: Executor | None = None  # how clips run (nsbench.run.executors.executor_for); None: here
    warned: set[str] = field(default_factory=set)  # cache warnings already printed
    # With a cache: each metric's digest (name, version, code), the same for every engine.
    metric_identities: dict[str, str] = field(default_factory=dict)
    conditions: list[str] = field(default_factory=list)  # --condition, none first; [] without
    blocks: streaming.Blocks | None = None  # --block-size or --block-ms
    upcoming: list[EngineSpec] = field(default_factory=list)  # the engines after the one running
    built: dict[str, EngineHolder] = field(default_factory=dict)  # built ahead: build_next_engine

    def engine_options(self, engine: EngineSpec) -> dict[str, Any]:
        """What the engine's factory receives: the flags its plugin added (the
        run adds ``seed``; the registry binds a family's ``engine_argument``)."""
        return self.config.engine_options(self.registry.engines.get(engine.name).plugin)

    @property
    def baselines(self) -> list[str]:
        return baseline_names(self.registry)

    def planned_runs(self, engine: EngineSpec) -> int:
        return len(self.sources) * len(self.seeds(engine))

    def seeds(self, engine: EngineSpec) -> list[int | None]:
        """--seeds for a seeded engine; one run (seed None) for the others."""
        return list(self.config.seeds) if self.config.seeds and engine.seeded else [None]


@dataclass
class Stopped:
    """An interrupt during an engine, and how far that engine got."""

    signal: Interrupted
    engine: EngineSpec
    done: int
    planned: int


def benchmark(config: RunConfig, registry: Registry) -> int:
    dataset = registry.datasets.require_available(config.dataset).spec
    check_arguments(config, dataset)
    # Named engines, metrics and conditions are checked before the clips are
    # listed (a misspelt flag says so at once); the defaults depend on the clips.
    engines = select_engines(list(config.engines), registry) if config.engines else []
    named_metrics = select_metrics(list(config.metrics), registry) if config.metrics else []
    chosen = conditions.resolve(list(config.conditions), registry.conditions)  # a missing codec stops the run here
    dataset_options = config.dataset_options(registry.datasets.get(dataset.name).plugin)  # its own flags only
    sources = dataset.clips(dataset_options)[: config.limit]
    if not sources:
        raise UserError(f"dataset '{dataset.name}' has no clips")
    engines = [declared_by_flags(spec, config, registry) for spec in engines or select_engines([], registry, sources)]
    metrics, metric_options = bind_options(named_metrics or select_metrics([], registry, sources),
                                           lambda metric: config.plugin_flags(registry.metrics.get(metric.name).plugin),
                                           metric_context(registry, config.use_cache, config.rerun))
    dataset = dataclasses.replace(dataset, headline_metric=no_reference.headline(
        dataset.headline_metric, [value.name for value in reported_values(metrics)], sources))
    shared = {
        "dataset_description": dataset.describe(dataset_options),
        "reference_use": no_reference.reference_use(sources, metrics, reported_values(metrics)),
        # Workers share the cores: wall-clock RTF grows with contention, CPU RTF far less.
        "provenance": {**provenance.collect(list(config.argv)), "jobs": config.jobs, **metric_provenance(metric_options)},
    }
    if chosen:  # each clip once per condition, a cell each
        dataset = dataclasses.replace(dataset, cell_keys=conditions.with_condition_cells(dataset.cell_keys))
        store = (str(cache.cache_root()), not config.rerun) if config.use_cache else None
        sources = conditions.conditioned_sources(sources, chosen, store)
        shared["provenance"]["conditions"] = conditions.provenance(chosen, registry.conditions)
    names = [condition.name for condition in chosen]
    writer = ResultsWriter(config, dataset, sources, reported_values(metrics), baseline_names(registry), conditions=names)
    run_cache = cache.Cache(cache.cache_root(), read=not config.rerun) if config.use_cache else None
    settings = RunSettings(config, registry, dataset, sources, metrics, writer, run_cache, shared, conditions=names,
                           blocks=streaming.blocks_from(config))
    identities = metric_identities(metrics, registry, metric_options)
    if run_cache:
        settings.metric_identities = identities
    # The report covers the folder's earlier results made on the same (nsbench.report.coverage).
    writer.identity = shared["run_identity"] = coverage.run_identity(
        dataset.name, shared["dataset_description"], [source.clip_id for source in sources], identities, names,
        config.block_size, config.block_ms)
    with executor_for(config.executor, config.jobs, config.scheduler, engines) as settings.executor:
        return run_engines(settings, engines)


def run_engines(settings: RunSettings, engines: list[EngineSpec]) -> int:
    """The run loop's top: each engine in turn; then the writer writes every file."""
    results, not_run, stop = [], {}, None
    try:
        for index, engine in enumerate(engines):
            settings.upcoming = engines[index + 1 :]
            try:
                result, stop = run_one(engine, settings, first=not results)
            except ModelFileMismatch:  # a broken install, not one engine's trouble: stop, exit 2
                raise
            except UserError as error:
                print(f"nsbench: {engine.name} skipped: {error}", file=sys.stderr)
                not_run[engine.name] = str(error)
                continue
            results += [result] if result else []
            if stop:
                not_run.update((later.name, f"not run: interrupted by {stop.signal.name}") for later in engines[index + 1 :])
                break
    finally:
        for holder in settings.built.values():  # built ahead for an engine that did not run
            holder.discard()
    report, exit_code = settings.writer.finish(results, not_run, interruption_note(stop))
    exit_code = failures.exit_code(results, not_run, settings.config.engines, exit_code)
    if stop:
        print_interruption(stop, settings, engines[index + 1 :])
        stop.signal.reported = True
        raise stop.signal
    folder = settings.writer.folder
    if settings.config.verbose:
        print(report)
    if not settings.config.quiet:
        reports = [folder / "report.md", *([folder / "report.html"] if settings.config.html else [])]
        print(summary_text(settings.dataset.name, results, reports, not_run))
        for line in run_notes_lines(results, settings.writer.coverage, not_run, settings.config.engines):
            print(line)
    print(f"nsbench: results in {folder}/", file=sys.stderr)
    return exit_code


def run_one(engine: EngineSpec, settings: RunSettings, first: bool) -> tuple[dict[str, Any] | None, Stopped | None]:
    """One engine: its clips (logged as they come), a second pass for a
    constant lag if asked, its summary. An interrupt keeps the clips done,
    summarised and marked; UserError (the engine cannot start) goes up."""
    notes: list[str] = []
    records: list[ClipRecord] = []
    compensation, stop = None, None
    try:
        run_and_log(engine, settings, settings.engine_options(engine), notes, records)
        compensation = align_constant_lag(engine, settings, notes, records)
    except (Interrupted, KeyboardInterrupt) as error:
        # Every clip done is already in the .clips.jsonl (and the cache).
        stop = Stopped(as_interrupted(error), engine, len(records), settings.planned_runs(engine))
        if not records:
            return None, stop
    if first:  # input notes are the same for every engine: say them once
        print_clip_notes(records)
    result = summarise_engine(settings, engine, records, notes, compensation, stop)
    settings.writer.engine_done(result, records)
    return result, stop


def summarise_engine(
    settings: RunSettings, engine: EngineSpec, records: list[ClipRecord], engine_notes: list[str],
    compensation: dict[str, Any] | None, stop: Stopped | None,
) -> dict[str, Any]:
    """The engine's ``<engine>.json`` payload."""
    dataset = settings.dataset
    summary = summarise(records, reported_values(settings.metrics), dataset.cell_keys, dataset.headline_metric, dataset.pooled_cells,
                        settings.config.voice_drop_db, engine.expected_flags)
    if compensation:
        summary["alignment"]["compensation"] = compensation
    cached = sum(record.from_cache for record in records)
    if cached:
        engine_notes.append(f"{cached} of {len(records)} outputs from the cache, with the timings of the run that made them")
    extra = {**settings.shared, "from_cache": {"outputs": cached, "runs": len(records)}}
    if stop:
        extra["interrupted"] = {"signal": stop.signal.name, "clips_done": stop.done, "clips_planned": stop.planned}
    info = engine_info(settings.registry.engines.get(engine.name), records, engine_notes, settings.baselines)
    if settings.conditions:  # the engine's gain under each condition (the passthrough's: the input's score)
        extra = {**extra, "conditions": conditions.condition_cells(records, reported_values(settings.metrics), settings.conditions)}
    streamed = streaming.engine_summary(records)
    if streamed is not None:
        extra = {**extra, "streaming": streamed}
    return engine_result(engine.name, dataset.name, summary, reported_values(settings.metrics), {**extra, "engine_info": info})


def check_arguments(config: RunConfig, dataset: DatasetSpec) -> None:
    if dataset.needs_data_folder and not config.data_folder:
        raise UserError(f"dataset '{dataset.name}' needs --data-folder")
    if config.data_folder and not Path(config.data_folder).is_dir():
        raise UserError(f"data folder not found: {config.data_folder}")
    if config.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {config.jobs}")
    if config.limit is not None and config.limit < 0:
        raise UserError(f"--limit must be at least 0, got {config.limit}")
    if not config.use_cache and config.rerun:
        raise UserError("--rerun replaces what the cache holds, --no-cache leaves it alone: choose one")
    if config.scheduler and config.executor != "dask":
        raise UserError("--scheduler is for --executor dask")


def run_and_log(
    engine: EngineSpec, settings: RunSettings, options: dict[str, Any], engine_notes: list[str], records: list[ClipRecord],
    lag_compensation: float = 0.0,
) -> None:
    """Runs the engine, adding each clip's record to ``records`` (and its line
    to the .clips.jsonl) as it comes, so an interrupt keeps every clip done."""
    config = settings.config
    seeds = settings.seeds(engine)
    if config.seeds and not engine.seeded:
        engine_notes.append("deterministic: run once, --seeds does not apply")
    log = settings.writer.clip_log(engine.name)
    total = len(settings.sources) * len(seeds)
    progress = engine_progress(total, engine.name, config.quiet)
    outcomes = (
        outcome
        for seed in seeds
        for outcome in run_seed(engine, settings, {**options, "seed": seed}, engine_notes, lag_compensation)
    )
    try:
        for done, outcome in enumerate(outcomes):
            if not done:  # this engine's workers are busy: build the next one meanwhile
                build_next_engine(settings)
            record = outcome.record
            with deferred():
                records.append(record)
                settings.writer.add(log, engine.name, record, outcome.output, outcome.sample_rate)
            for warning in outcome.warnings:
                if warning not in settings.warned:
                    settings.warned.add(warning)
                    say(f"nsbench: {warning}")
            if record.failed:
                say(f"nsbench: {engine.name} failed on {record.clip_id}: {record.error}")
            progress.update()
    finally:
        outcomes.close()  # an interrupt here, not in the engine: close it (and stop its workers) now
        progress.close()
        log.close()


def run_seed(engine: EngineSpec, settings: RunSettings, options: dict[str, Any], engine_notes: list[str], lag_compensation: float):
    keyed = {**options, LAG_COMPENSATION: lag_compensation} if lag_compensation else options
    identity = cache_identity(engine, settings, keyed) if settings.cache else None
    built = settings.built.pop(engine.name, None)
    if built is not None and built.options != options:  # built for another seed
        built.discard()
        built = None
    return run_engine(
        engine, options, settings.sources, settings.metrics, engine_notes, executor=settings.executor, cache=settings.cache,
        identity=identity, lag_compensation=lag_compensation, voice_drop_db=settings.config.voice_drop_db,
        blocks=settings.blocks, built=built,
    )


def build_next_engine(settings: RunSettings) -> None:
    """Builds the next engine (loads its model, measures its delay) while the
    current one's clips run in worker processes, rather than after, when the
    workers have gone and the cores would wait on the parent alone. Only when
    clips run elsewhere, and not for an engine the cache may serve whole (it
    is then never built). A build that fails is dropped: the engine's own turn
    builds it again and reports why, as without this."""
    if settings.executor is None or len(settings.sources) < 2 or not settings.upcoming:  # clips run here
        return
    engine = settings.upcoming[0]
    if engine.name in settings.built:
        return
    options = {**settings.engine_options(engine), "seed": settings.seeds(engine)[0]}
    holder = EngineHolder(engine, options)
    try:
        if settings.cache and settings.cache.knows(cache_identity(engine, settings, options).engine):
            return
        holder.get()
    except ENGINE_FAULTS:
        holder.discard()
        return
    settings.built[engine.name] = holder


def cache_identity(engine: EngineSpec, settings: RunSettings, options: dict[str, Any]) -> cache.Identity:
    """What the engine's outputs and scores depend on, besides the clips: the
    engine (name, version, code, fingerprint), the options it reads (its own
    flags, the seed, a lag compensation), and each metric (computed once per run)."""
    try:
        fingerprint = engine.fingerprint(options) if engine.fingerprint else ""
    except OSError as error:
        raise UserError(f"cannot read {error.filename} to key the cache: {error.strerror}; try --no-cache") from error
    version = settings.registry.engines.get(engine.name).version
    engine_key = cache.engine_identity(engine.name, version, engine.factory, fingerprint, options)
    return cache.Identity(engine_key, settings.metric_identities, cache.checks_identity())


def metric_identities(metrics: list[MetricSpec], registry: Registry, options: dict[str, Any] = {}) -> dict[str, str]:
    return {
        metric.name: cache.metric_identity(metric.name, registry.metrics.get(metric.name).version, metric.func,
                                           options.get(metric.name, {}).get("fingerprint", ""))
        for metric in metrics
    }


def align_constant_lag(
    engine: EngineSpec, settings: RunSettings, engine_notes: list[str], records: list[ClipRecord]
) -> dict[str, Any] | None:
    """--align-constant-lag: if the first pass found a constant lag, run the
    engine again with that lag removed on top of its declared delay; its
    records replace the first pass's (so do its .clips.jsonl and audio).
    Returns what was done, for the report; None if nothing was."""
    if not settings.config.align_constant_lag:
        return None
    first = alignment_summary(records)
    lag = first["constant_lag"]
    if lag is None:
        return None
    seconds = lag["samples"] / lag["sample_rate"]
    declared = removed_delay_seconds(records)
    if seconds + declared < 0:  # earlier than the input itself: nothing to remove
        engine_notes.append(f"output early by {-lag['samples']} samples, more than its declared delay: not compensated")
        return None
    second: list[ClipRecord] = []
    try:
        run_and_log(engine, settings, settings.engine_options(engine), engine_notes, second, lag_compensation=seconds)
    finally:
        records[:] = second  # the files now hold the second pass
    return {**lag, "first_pass": {key: first[key] for key in ("text", "measured_clips", "lags")}}


def removed_delay_seconds(records: list[ClipRecord]) -> float:
    """The delay the first pass removed (declared or measured), in seconds."""
    for record in records:
        match = re.fullmatch(r"(-?\d+) samples at (\d+) Hz", record.delay)
        if match:
            return int(match[1]) / int(match[2])
    return 0.0


def interruption_note(stop: Stopped | None) -> str:
    """report.md's paragraph, after its title, saying it is incomplete."""
    if stop is None:
        return ""
    return f"**Interrupted by {stop.signal.name}: incomplete.** {stop.engine.name} ran {stop.done} of {stop.planned} clips."


def print_interruption(stop: Stopped, settings: RunSettings, later: list[EngineSpec]) -> None:
    """Where the results are, and how to get the rest."""
    engine, stem = stop.engine, file_stem(stop.engine.name)
    lines = [f"interrupted by {stop.signal.name} during {engine.name}, after {stop.done} of {stop.planned} clips"]
    if stop.done:
        lines.append(f"{stem}.clips.jsonl holds every clip done; {stem}.json summarises them, marked \"interrupted\"")
    lines.append(f"results so far in {settings.writer.folder}/ (report.md covers the engines that ran)")
    if settings.cache is not None:
        lines.append("to resume, run the same command again: every clip done comes from the cache")
    else:
        missing = [engine, *later]
        lines.append(
            "with --no-cache there is no resume: rerun the same command, or run only what is missing with "
            + " ".join(f"--engine {shlex.quote(e.name)}" for e in missing)
            + " (the baseline is always added)"
        )
    for line in lines:
        print(f"nsbench: {line}", file=sys.stderr)


def print_clip_notes(records: list[ClipRecord], shown: int = 5) -> None:
    """Treatments applied to the input (downmix, resample, trim), a few shown;
    every one is in the .clips.jsonl files."""
    noted = [(r.clip_id, note) for r in records for note in r.notes]
    for clip_id, note in noted[:shown]:
        print(f"nsbench: note on {clip_id}: {note}", file=sys.stderr)
    if len(noted) > shown:
        print(f"nsbench: ... and {len(noted) - shown} more notes in the .clips.jsonl files", file=sys.stderr)


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
            print(f"nsbench: {record.spec.name} not available ({record.spec.install})", file=sys.stderr)
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


def baseline_names(registry: Registry) -> list[str]:
    """The engines every other is compared with (their spec says ``baseline``), in registration order."""
    return [record.spec.name for record in registry.engines if record.spec.baseline]


def select_metrics(names: list[str], registry: Registry, sources: Sequence[ClipSource] = ()) -> list[MetricSpec]:
    if names:
        return [registry.metrics.require_available(name).spec for name in names]
    # Without references the no-reference panel runs by default (nsbench.run.no_reference).
    return no_reference.default_metrics([r.spec for r in registry.metrics if r.available], sources)


def engine_info(record: Registered[EngineSpec], records: list[ClipRecord], notes: list[str], baselines: list[str] = ()) -> dict[str, Any]:
    spec = record.spec
    return {
        "name": spec.name,
        "description": spec.description,
        "version": record.version,
        "origin": record.origin,
        "sample_rate": spec.sample_rate,
        "declared_delay": spec.delay,  # "measured": see delays_removed
        "oracle": spec.oracle,
        "baseline": spec.baseline,
        "compared_with": list(baselines_of(spec.name, baselines)),
        # The delay actually removed, with the number of clips: an estimated
        # delay (rnnoise with a user's binary) shows here.
        "delays_removed": dict(Counter(r.delay for r in records if r.delay)),
        "notes": list(dict.fromkeys(notes)),  # once each, however many seeds ran
    }


def list_width() -> int | None:
    """The terminal's width, where ``--list`` prints to one (or $COLUMNS says
    it); None, every cell whole, when piped to a file or another program."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def list_text(what: str, registry: Registry, manager, width: int | None = None) -> str:
    """The ``--list`` table; with ``width``, cells cut to fit it (a line then says so)."""
    if what == "plugins":
        from nsbench.plugins.manager import plugin_origin

        rows = [("plugin", "origin", "version")]
        for plugin in manager.get_plugins():
            rows.append((manager.get_name(plugin), *plugin_origin(manager, plugin)))
        return format_rows(rows, width)
    kind = getattr(registry, what)
    rows = [("name", "status", "version", "from", *extra_header(what), "description")]
    for record in kind:
        status = "available" if record.available else f"unavailable: {record.spec.install}"
        rows.append((record.spec.name, status, record.version, record.origin, *extra_columns(what, record.spec), record.spec.description))
    return format_rows(rows, width)


def extra_header(what: str) -> tuple[str, ...]:
    return {"engines": ("rate", "delay", "oracle"), "metrics": ("unit", "better", "ignores"), "conditions": ("reference",)}.get(what, ())


def extra_columns(what: str, spec: Any) -> tuple[str, ...]:
    if what == "engines":
        return (str(spec.sample_rate or "any"), str(spec.delay), "oracle" if spec.oracle else "")
    if what == "metrics":
        return (spec.unit, "higher" if spec.higher_is_better else "lower", spec.ignores)
    if what == "conditions":
        return ("also" if spec.reference else "untouched",)
    return ()


def format_rows(rows: list[tuple[str, ...]], width: int | None = None) -> str:
    text, cut = fit_rows(rows, width)
    return text + (f"\n(cut to {width} columns; --verbose prints every cell whole)" if cut else "")
