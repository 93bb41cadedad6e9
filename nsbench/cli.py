"""``python benchmark.py``: parse flags, run engines over a dataset, write results.

Flag names follow Picovoice's benchmark where it has them (``--engine``,
``--dataset``, ``--data-folder``, ``--output-folder``). ``main(argv)`` takes a
list so tests call the CLI directly (as museval does).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from tqdm import tqdm

from nsbench import provenance
from nsbench.extras import RunExtras
from nsbench.extras import add_arguments as add_report_arguments
from nsbench.audio import write_audio
from nsbench.interrupts import Interrupted, as_interrupted, deferred, signals_interrupt
from nsbench.plugins import get_plugin_manager
from nsbench.registry import Registered, Registry, build_registry
from nsbench.report import BASELINE_ENGINE, ClipLog, engine_result, file_stem, report_markdown, write_json
from nsbench.runner import LAG_COMPENSATION, run_engine
from nsbench.summary import alignment_summary, summarise
from nsbench.types import ClipRecord, ClipSource, EngineSpec, MetricSpec, UserError

LIST_CHOICES = ("engines", "datasets", "metrics", "plugins")
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
    parser.add_argument("--limit", type=int, help="run only the first N clips (the demo set orders them to cover every cell early)")
    parser.add_argument("--plugin", action="append", default=[], help="load a plugin: path/to/file.py or package.module")
    parser.add_argument("--list", choices=LIST_CHOICES, help="list what is registered and exit")
    parser.add_argument(
        "--jobs", type=int, default=usable_cores(),
        help=f"worker processes for the clips (default: the {usable_cores()} usable cores; 1 runs serially, e.g. for a GPU model)",
    )
    parser.add_argument("--seeds", type=parse_seeds, help="run seeded engines once per seed: 0-9, or 0,3,7")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no table at the end")
    add_report_arguments(parser)
    manager.hook.add_arguments(parser=parser)
    return parser


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
    # --plugin is read first: a plugin may add flags the full parser must know.
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--plugin", action="append", default=[])
    plugins = early.parse_known_args(argv)[0].plugin
    manager = get_plugin_manager(plugins)
    args = build_parser(manager).parse_args(argv)
    registry = build_registry(manager)
    if args.list:
        print(list_text(args.list, registry, manager))
        return 0
    return benchmark(args, registry, argv)


def benchmark(args: argparse.Namespace, registry: Registry, argv: list[str]) -> int:
    options = vars(args)
    dataset = registry.datasets.require_available(args.dataset).spec
    if dataset.needs_data_folder and not args.data_folder:
        raise UserError(f"dataset '{dataset.name}' needs --data-folder")
    if args.data_folder and not Path(args.data_folder).is_dir():
        raise UserError(f"data folder not found: {args.data_folder}")
    engines = select_engines(args.engine, registry)
    metrics = select_metrics(args.metric, registry)
    sources = dataset.clips(options)
    if args.limit is not None:
        sources = sources[: args.limit]
    if not sources:
        raise UserError(f"dataset '{dataset.name}' has no clips")
    folder = Path(args.results_folder) / dataset.name
    if args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {args.jobs}")
    shared = {
        "dataset_description": dataset.describe(options),
        # Workers share the cores: wall-clock RTF grows with contention, CPU RTF far less.
        "provenance": {**provenance.collect(argv), "jobs": args.jobs},
    }
    extras = RunExtras(args, folder, dataset, sources, metrics)
    args.audio_folder = extras.audio_folder
    results, not_run = [], {}
    interrupted: Interrupted | None = None
    for index, engine in enumerate(engines):
        engine_notes: list[str] = []
        records: list[ClipRecord] = []
        compensation = None
        try:
            run_and_log(engine, options, sources, metrics, folder, args, engine_notes, records)
            compensation = align_constant_lag(engine, options, sources, metrics, folder, args, engine_notes, records)
        except UserError as error:
            print(f"nsbench: {engine.name} skipped: {error}", file=sys.stderr)
            not_run[engine.name] = str(error)
            continue
        except (Interrupted, KeyboardInterrupt) as error:
            # Every clip done is already in the .clips.jsonl; the clips done
            # also get their summary below, marked as interrupted.
            interrupted = as_interrupted(error)
            not_run.update((later.name, f"not run: interrupted by {interrupted.name}") for later in engines[index + 1 :])
            if not records:
                break
        if not results:  # input notes are the same for every engine: say them once
            print_clip_notes(records)
        summary = summarise(records, metrics, dataset.cell_keys, dataset.headline_metric, dataset.pooled_cells)
        if compensation:
            summary["alignment"]["compensation"] = compensation
        info = engine_info(registry.engines.get(engine.name), records, engine_notes)
        extra = {**shared, "engine_info": info}
        if interrupted:
            extra["interrupted"] = {"signal": interrupted.name, "clips_done": len(records), "clips_planned": planned_runs(engine, sources, args)}
        result = engine_result(engine.name, dataset.name, summary, metrics, extra)
        extras.after_engine(result, records)
        write_json(folder / f"{file_stem(engine.name)}.json", result)
        results.append(result)
        if interrupted:
            break
    sections, exit_code = extras.finish(results)
    report = report_markdown(dataset.name, results, dataset.cell_keys, metrics, not_run, dataset.table_metrics, args.jobs, sections)
    if interrupted:
        report = interruption_report(report, interrupted, engine, records, planned_runs(engine, sources, args))
    (folder / "report.md").write_text(report)
    if interrupted:
        print_interruption(interrupted, folder, engine, records, planned_runs(engine, sources, args), engines[index + 1 :])
        interrupted.reported = True
        raise interrupted
    if not args.quiet:
        print(report)
    print(f"nsbench: results in {folder}/", file=sys.stderr)
    return exit_code


def run_and_log(
    engine: EngineSpec,
    options: dict[str, Any],
    sources: list[ClipSource],
    metrics: list[MetricSpec],
    folder: Path,
    args: argparse.Namespace,
    engine_notes: list[str],
    records: list[ClipRecord],
) -> None:
    """Runs the engine, adding each clip's record to ``records`` (and its line
    to the .clips.jsonl) as it comes, so an interrupt keeps every clip done."""
    seeds: list[int | None] = [None]
    if args.seeds and engine.seeded:
        seeds = list(args.seeds)
    elif args.seeds:
        engine_notes.append("deterministic: run once, --seeds does not apply")
    log = ClipLog(folder / f"{file_stem(engine.name)}.clips.jsonl")
    total = len(sources) * len(seeds)
    progress = tqdm(total=total, desc=engine.name, unit="clip", disable=args.quiet or None, file=sys.stderr)
    outcomes = (
        outcome
        for seed in seeds
        for outcome in run_engine(engine, {**options, "seed": seed}, sources, metrics, engine_notes, args.jobs)
    )
    try:
        for outcome in outcomes:
            record = outcome.record
            with deferred():
                records.append(record)
                log.add(record)
            if record.failed:
                tqdm.write(f"nsbench: {engine.name} failed on {record.clip_id}: {record.error}", file=sys.stderr)
            elif args.audio_folder:  # --output-folder, or a temporary one for report.html's audio
                path = Path(args.audio_folder) / file_stem(engine.name) / f"{record.run_id}.wav"
                write_audio(path, outcome.output, outcome.sample_rate)
            progress.update()
    finally:
        outcomes.close()  # an interrupt here, not in the engine: close it (and stop its workers) now
        progress.close()
        log.close()


def align_constant_lag(
    engine: EngineSpec,
    options: dict[str, Any],
    sources: list[ClipSource],
    metrics: list[MetricSpec],
    folder: Path,
    args: argparse.Namespace,
    engine_notes: list[str],
    records: list[ClipRecord],
) -> dict[str, Any] | None:
    """--align-constant-lag: if the first pass found a constant lag, run the
    engine again with that lag removed on top of its declared delay; its
    records replace the first pass's (so do its .clips.jsonl and audio).
    Returns what was done, for the report; None if nothing was."""
    if not args.align_constant_lag:
        return None
    first = alignment_summary(records)
    lag = first["constant_lag"]
    if lag is None:
        return None
    seconds = lag["samples"] / lag["sample_rate"]
    declared = engine.delay / (engine.sample_rate or lag["sample_rate"])
    if seconds + declared < 0:  # earlier than the input itself: nothing to remove
        engine_notes.append(f"output early by {-lag['samples']} samples, more than its declared delay: not compensated")
        return None
    second: list[ClipRecord] = []
    try:
        run_and_log(engine, {**options, LAG_COMPENSATION: seconds}, sources, metrics, folder, args, engine_notes, second)
    finally:
        records[:] = second  # the files now hold the second pass
    return {**lag, "first_pass": {key: first[key] for key in ("text", "measured_clips", "lags")}}


def planned_runs(engine: EngineSpec, sources: list[ClipSource], args: argparse.Namespace) -> int:
    return len(sources) * (len(args.seeds) if args.seeds and engine.seeded else 1)


def interruption_report(report: str, stop: Interrupted, engine: EngineSpec, records: list[ClipRecord], planned: int) -> str:
    """The report with a paragraph, after its title, saying it is incomplete."""
    title, _, rest = report.partition("\n\n")
    return f"{title}\n\n**Interrupted by {stop.name}: incomplete.** {engine.name} ran {len(records)} of {planned} clips.\n\n{rest}"


def print_interruption(
    stop: Interrupted, folder: Path, engine: EngineSpec, records: list[ClipRecord], planned: int, later: list[EngineSpec]
) -> None:
    """Where the results are, and how to get the rest: there is no resume."""
    stem = file_stem(engine.name)
    lines = [f"interrupted by {stop.name} during {engine.name}, after {len(records)} of {planned} clips"]
    if records:
        lines.append(f"{stem}.clips.jsonl holds every clip done; {stem}.json summarises them, marked \"interrupted\"")
    lines.append(f"results so far in {folder}/ (report.md covers the engines that ran)")
    missing = [engine, *later]
    lines.append(
        "there is no resume: rerun the same command, or run only what is missing with "
        + " ".join(f"--engine {shlex.quote(e.name)}" for e in missing)
        + f" (the baseline {BASELINE_ENGINE} is always added)"
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
        # The untrained baseline goes in every table, so every number has its reference.
        if BASELINE_ENGINE not in names:
            chosen.insert(0, registry.engines.get(BASELINE_ENGINE).spec)
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


def select_metrics(names: list[str], registry: Registry) -> list[MetricSpec]:
    if names:
        return [registry.metrics.require_available(name).spec for name in names]
    return [r.spec for r in registry.metrics if r.spec.default and r.available]


def engine_info(record: Registered[EngineSpec], records: list[ClipRecord], notes: list[str]) -> dict[str, Any]:
    spec = record.spec
    return {
        "name": spec.name,
        "description": spec.description,
        "version": record.version,
        "origin": record.origin,
        "sample_rate": spec.sample_rate,
        "declared_delay": spec.delay,
        "oracle": spec.oracle,
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
    return {"engines": ("rate", "delay", "oracle"), "metrics": ("unit", "better", "ignores")}.get(what, ())


def extra_columns(what: str, spec: Any) -> tuple[str, ...]:
    if what == "engines":
        return (str(spec.sample_rate or "any"), str(spec.delay), "oracle" if spec.oracle else "")
    if what == "metrics":
        return (spec.unit, "higher" if spec.higher_is_better else "lower", spec.ignores)
    return ()


def format_rows(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)
