"""``python benchmark.py``: parse flags, run engines over a dataset, write results.

Flag names follow Picovoice's benchmark where it has them (``--engine``,
``--dataset``, ``--data-folder``, ``--output-folder``). ``main(argv)`` takes a
list so tests call the CLI directly (as museval does).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import shlex
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from tqdm import tqdm

from nsbench import cache, conditions, provenance
from nsbench.extras import RunExtras
from nsbench.extras import add_arguments as add_report_arguments
from nsbench.interrupts import Interrupted, as_interrupted, deferred, signals_interrupt
from nsbench.metric_options import bind_options, metric_flags, metric_provenance
from nsbench.plugins import get_plugin_manager
from nsbench.progress import engine_progress
from nsbench.registry import Registered, Registry, build_registry
from nsbench.report import ClipLog, engine_result, file_stem, report_markdown, write_json
from nsbench.runner import LAG_COMPENSATION, run_engine
from nsbench.summary import alignment_summary, baselines_of, summarise
from nsbench.terminal_summary import summary_text
from nsbench.types import ClipRecord, ClipSource, DatasetSpec, EngineSpec, MetricSpec, UserError, reported_values

LIST_CHOICES = ("engines", "datasets", "metrics", "conditions", "recognisers", "plugins", "cache")
EXIT_USER_ERROR = 2


def build_parser(manager) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmark.py", description="Compare noise-suppression engines on a test set."
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
    parser.add_argument("--verbose", action="store_true", help="print the whole of report.md at the end, before the summary")
    cache = parser.add_argument_group("cache (outputs and scores are kept by content, so a rerun or a resumed run recomputes only what is missing)")
    cache.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    cache.add_argument("--rerun", action="store_true", help="recompute everything, replacing what the cache holds")
    cache.add_argument("--clear-cache", action="store_true", help="empty the cache and exit (--list cache shows where and how big)")
    add_report_arguments(parser)
    # The flags so far shape the run, not an engine's output: the cache keys
    # leave them out. Plugins' flags (an engine's options) go in.
    parser.set_defaults(harness_options=frozenset(action.dest for action in parser._actions))
    parser.set_defaults(plugin_options=add_plugin_arguments(manager, parser))
    return parser


def add_plugin_arguments(manager, parser: argparse.ArgumentParser) -> dict[str, frozenset[str]]:
    """Each plugin's flags, by plugin name: an engine receives its own plugin's only."""
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
        from nsbench.scaffold import new_plugin

        return new_plugin(argv[1:])
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
        print(list_text(args.list, registry, manager))
        return 0
    return benchmark(args, registry, argv)


@dataclass
class RunSettings:
    """What every engine of one run shares."""

    args: argparse.Namespace
    registry: Registry
    sources: list[ClipSource]
    metrics: list[MetricSpec]
    folder: Path  # results/<dataset>
    # Writes each output as it comes (engine, run id, audio, rate): to --output-folder,
    # or for report.html's listening grid; None: nowhere.
    keep_output: Callable[[str, str, np.ndarray, int], None] | None
    cache: cache.Cache | None
    dask_client: Any = None  # with --executor dask
    warned: set[str] = field(default_factory=set)  # cache warnings already printed
    # With a cache: each metric's digest (name, version, code), the same for every engine.
    metric_identities: dict[str, str] = field(default_factory=dict)
    conditions: list[str] = field(default_factory=list)  # --condition, none first; [] without

    def engine_options(self, engine: EngineSpec) -> dict[str, Any]:
        """What the engine's factory receives: the flags its plugin added, and
        ``seed`` (set per run); a family's ``engine_argument`` is bound by the registry."""
        plugin = self.registry.engines.get(engine.name).plugin
        return {name: getattr(self.args, name) for name in sorted(self.args.plugin_options.get(plugin, ()))}

    @property
    def baselines(self) -> list[str]:
        return baseline_names(self.registry)


def benchmark(args: argparse.Namespace, registry: Registry, argv: list[str]) -> int:
    dataset = registry.datasets.require_available(args.dataset).spec
    check_arguments(args, dataset)
    engines = select_engines(args.engine, registry)
    metrics, metric_options = bind_options(select_metrics(args.metric, registry), vars(args), registry)
    chosen = conditions.resolve(args.condition, registry.conditions)  # a missing codec stops the run here
    sources = dataset.clips(vars(args))[: args.limit]
    if not sources:
        raise UserError(f"dataset '{dataset.name}' has no clips")
    folder = Path(args.results_folder) / dataset.name
    shared = {
        "dataset_description": dataset.describe(vars(args)),
        # Workers share the cores: wall-clock RTF grows with contention, CPU RTF far less.
        "provenance": {**provenance.collect(argv), "jobs": args.jobs, **metric_provenance(metric_options)},
    }
    if chosen:  # each clip once per condition, a cell each
        dataset = dataclasses.replace(dataset, cell_keys=conditions.with_condition_cells(dataset.cell_keys))
        store = None if args.no_cache else (str(cache.cache_root()), not args.rerun)
        sources = conditions.conditioned_sources(sources, chosen, store)
        shared["provenance"]["conditions"] = conditions.provenance(chosen, registry.conditions)
    extras = RunExtras(args, folder, dataset, sources, reported_values(metrics), baseline_names(registry))
    run_cache = None if args.no_cache else cache.Cache(cache.cache_root(), read=not args.rerun)
    settings = RunSettings(args, registry, sources, metrics, folder, extras.keep_output if extras.keeps_outputs else None, run_cache,
                           conditions=[condition.name for condition in chosen])
    if run_cache:
        settings.metric_identities = metric_identities(metrics, registry, metric_options)
    with executor(args, engines) as settings.dask_client:
        return run_engines(settings, dataset, engines, extras, shared)


@contextlib.contextmanager
def executor(args: argparse.Namespace, engines: list[EngineSpec]) -> Iterator[Any]:
    """The Dask client with --executor dask, connected before any engine runs
    (a scheduler that does not answer stops the run before it computes anything)."""
    if args.executor != "dask":
        yield None
        return
    from nsbench.dask_executor import dask_client

    with dask_client(args.scheduler, args.jobs, engines) as client:
        yield client


def run_engines(settings: RunSettings, dataset: DatasetSpec, engines: list[EngineSpec], extras: RunExtras, shared: dict[str, Any]) -> int:
    args, sources, metrics, folder = settings.args, settings.sources, settings.metrics, settings.folder
    results, not_run = [], {}
    interrupted: Interrupted | None = None
    for index, engine in enumerate(engines):
        engine_notes: list[str] = []
        records: list[ClipRecord] = []
        compensation = None
        try:
            run_and_log(engine, settings, settings.engine_options(engine), engine_notes, records)
            compensation = align_constant_lag(engine, settings, engine_notes, records)
        except UserError as error:
            print(f"nsbench: {engine.name} skipped: {error}", file=sys.stderr)
            not_run[engine.name] = str(error)
            continue
        except (Interrupted, KeyboardInterrupt) as error:
            # Every clip done is already in the .clips.jsonl (and the cache);
            # the clips done also get their summary below, marked as interrupted.
            interrupted = as_interrupted(error)
            not_run.update((later.name, f"not run: interrupted by {interrupted.name}") for later in engines[index + 1 :])
            if not records:
                break
        if not results:  # input notes are the same for every engine: say them once
            print_clip_notes(records)
        extra = dict(shared)
        if interrupted:
            extra["interrupted"] = {"signal": interrupted.name, "clips_done": len(records), "clips_planned": planned_runs(engine, sources, args)}
        result = summarise_engine(settings, dataset, engine, records, engine_notes, compensation, extra)
        extras.after_engine(result, records)
        write_json(folder / f"{file_stem(engine.name)}.json", result)
        results.append(result)
        if interrupted:
            break
    sections, exit_code = extras.finish(results)
    top, by_condition = conditions.report_parts(results) if settings.conditions else ([], [])
    report = report_markdown(dataset.name, results, dataset.cell_keys, reported_values(metrics), not_run, dataset.table_metrics, args.jobs,
                             [*by_condition, *sections], top=top)
    if interrupted:
        report = interruption_report(report, interrupted, engine, records, planned_runs(engine, sources, args))
    (folder / "report.md").write_text(report)
    if interrupted:
        print_interruption(interrupted, folder, engine, records, planned_runs(engine, sources, args), engines[index + 1 :], settings.cache)
        interrupted.reported = True
        raise interrupted
    if args.verbose:
        print(report)
    if not args.quiet:
        reports = [folder / "report.md", *([] if args.no_html else [folder / "report.html"])]
        print(summary_text(dataset.name, results, reports, not_run))
    print(f"nsbench: results in {folder}/", file=sys.stderr)
    return exit_code


def summarise_engine(
    settings: RunSettings, dataset: DatasetSpec, engine: EngineSpec, records: list[ClipRecord], engine_notes: list[str],
    compensation: dict[str, Any] | None, extra: dict[str, Any],
) -> dict[str, Any]:
    """The engine's ``<engine>.json`` payload."""
    summary = summarise(records, reported_values(settings.metrics), dataset.cell_keys, dataset.headline_metric, dataset.pooled_cells,
                        settings.args.voice_drop_db, engine.expected_flags)
    if compensation:
        summary["alignment"]["compensation"] = compensation
    cached = sum(record.from_cache for record in records)
    if cached:
        engine_notes.append(f"{cached} of {len(records)} outputs from the cache, with the timings of the run that made them")
    info = engine_info(settings.registry.engines.get(engine.name), records, engine_notes, settings.baselines)
    if settings.conditions:  # the engine's gain under each condition (the passthrough's: the input's score)
        extra = {**extra, "conditions": conditions.condition_cells(records, reported_values(settings.metrics), settings.conditions)}
    return engine_result(engine.name, dataset.name, summary, reported_values(settings.metrics), {**extra, "engine_info": info})


def check_arguments(args: argparse.Namespace, dataset: DatasetSpec) -> None:
    if dataset.needs_data_folder and not args.data_folder:
        raise UserError(f"dataset '{dataset.name}' needs --data-folder")
    if args.data_folder and not Path(args.data_folder).is_dir():
        raise UserError(f"data folder not found: {args.data_folder}")
    if args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    if args.limit is not None and args.limit < 0:
        raise UserError(f"--limit must be at least 0, got {args.limit}")
    if args.no_cache and args.rerun:
        raise UserError("--rerun replaces what the cache holds, --no-cache leaves it alone: choose one")
    if args.scheduler and args.executor != "dask":
        raise UserError("--scheduler is for --executor dask")


def run_and_log(
    engine: EngineSpec, settings: RunSettings, options: dict[str, Any], engine_notes: list[str], records: list[ClipRecord],
    lag_compensation: float = 0.0,
) -> None:
    """Runs the engine, adding each clip's record to ``records`` (and its line
    to the .clips.jsonl) as it comes, so an interrupt keeps every clip done."""
    args = settings.args
    seeds: list[int | None] = [None]
    if args.seeds and engine.seeded:
        seeds = list(args.seeds)
    elif args.seeds:
        engine_notes.append("deterministic: run once, --seeds does not apply")
    log = ClipLog(settings.folder / f"{file_stem(engine.name)}.clips.jsonl")
    total = len(settings.sources) * len(seeds)
    progress = engine_progress(total, engine.name, args.quiet)
    outcomes = (
        outcome
        for seed in seeds
        for outcome in run_seed(engine, settings, {**options, "seed": seed}, engine_notes, lag_compensation)
    )
    try:
        for outcome in outcomes:
            record = outcome.record
            with deferred():
                records.append(record)
                log.add(record)
            for warning in outcome.warnings:
                if warning not in settings.warned:
                    settings.warned.add(warning)
                    tqdm.write(f"nsbench: {warning}", file=sys.stderr)
            if record.failed:
                tqdm.write(f"nsbench: {engine.name} failed on {record.clip_id}: {record.error}", file=sys.stderr)
            elif settings.keep_output:
                settings.keep_output(engine.name, record.run_id, outcome.output, outcome.sample_rate)
            progress.update()
    finally:
        outcomes.close()  # an interrupt here, not in the engine: close it (and stop its workers) now
        progress.close()
        log.close()


def run_seed(engine: EngineSpec, settings: RunSettings, options: dict[str, Any], engine_notes: list[str], lag_compensation: float):
    keyed = {**options, LAG_COMPENSATION: lag_compensation} if lag_compensation else options
    identity = cache_identity(engine, settings, keyed) if settings.cache else None
    return run_engine(
        engine, options, settings.sources, settings.metrics, engine_notes, settings.args.jobs, settings.cache, identity,
        settings.dask_client, lag_compensation=lag_compensation, voice_drop_db=settings.args.voice_drop_db,
    )


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
    if not settings.args.align_constant_lag:
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


def planned_runs(engine: EngineSpec, sources: list[ClipSource], args: argparse.Namespace) -> int:
    return len(sources) * (len(args.seeds) if args.seeds and engine.seeded else 1)


def interruption_report(report: str, stop: Interrupted, engine: EngineSpec, records: list[ClipRecord], planned: int) -> str:
    """The report with a paragraph, after its title, saying it is incomplete."""
    title, _, rest = report.partition("\n\n")
    return f"{title}\n\n**Interrupted by {stop.name}: incomplete.** {engine.name} ran {len(records)} of {planned} clips.\n\n{rest}"


def print_interruption(
    stop: Interrupted, folder: Path, engine: EngineSpec, records: list[ClipRecord], planned: int, later: list[EngineSpec],
    run_cache: cache.Cache | None,
) -> None:
    """Where the results are, and how to get the rest."""
    stem = file_stem(engine.name)
    lines = [f"interrupted by {stop.name} during {engine.name}, after {len(records)} of {planned} clips"]
    if records:
        lines.append(f"{stem}.clips.jsonl holds every clip done; {stem}.json summarises them, marked \"interrupted\"")
    lines.append(f"results so far in {folder}/ (report.md covers the engines that ran)")
    if run_cache is not None:
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


def select_engines(names: list[str], registry: Registry) -> list[EngineSpec]:
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
    return chosen


def baseline_names(registry: Registry) -> list[str]:
    """The engines every other is compared with (their spec says ``baseline``), in registration order."""
    return [record.spec.name for record in registry.engines if record.spec.baseline]


def select_metrics(names: list[str], registry: Registry) -> list[MetricSpec]:
    if names:
        return [registry.metrics.require_available(name).spec for name in names]
    return [r.spec for r in registry.metrics if r.spec.default and r.available]


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


def list_text(what: str, registry: Registry, manager) -> str:
    if what == "plugins":
        from nsbench.plugins import plugin_origin

        rows = [("plugin", "origin", "version")]
        for plugin in manager.get_plugins():
            rows.append((manager.get_name(plugin), *plugin_origin(manager, plugin)))
        return format_rows(rows)
    kind = getattr(registry, what)
    rows = [("name", "status", "version", "from", *extra_header(what), "description")]
    for record in kind:
        status = "available" if record.available else f"unavailable: {record.spec.install}"
        rows.append((record.spec.name, status, record.version, record.origin, *extra_columns(what, record.spec), record.spec.description))
    return format_rows(rows)


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


def format_rows(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)
