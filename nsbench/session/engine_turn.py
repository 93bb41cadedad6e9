"""One engine's turn in the run: its clips (nsbench.run.runner), each record
logged as it comes, a second pass for a constant lag if asked, and its
summary, the ``<engine>.json`` payload.

While the engine's clips run in worker processes, the next engine is built
here (``build_next_engine``), so the cores do not wait on the parent between
engines.
"""
from __future__ import annotations

import argparse
import itertools
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from nsbench.run.engine_run import LAG_COMPENSATION, EngineHolder, EngineRun, engine_faults
from nsbench.run.interrupts import Interrupted, as_interrupted, deferred, held
from nsbench.session.plan import RunPlan
from nsbench.run.progress import engine_progress, say
from nsbench.run.runner import run_engine
from nsbench.session.state import Run, Stopped
from nsbench.report import conditions_summary, streaming_summary
from nsbench.report.baselines import baselines_of
from nsbench.report.model import engine_result
from nsbench.report.summary import alignment_summary, summarise
from nsbench.plugins.registry import Registered
from nsbench.report.record_table import RecordTable
from nsbench.plugins.specs import EngineSpec


@dataclass
class Turn:
    """One engine's turn: the engine, the one after it (built ahead), and
    what its clips give back as they come."""

    engine: EngineSpec
    next_engine: EngineSpec | None
    table: RecordTable  # its records, as columns (nsbench.report.record_table)
    notes: list[str] = field(default_factory=list)


def run_one(run: Run, engine: EngineSpec, next_engine: EngineSpec | None, results: list[dict[str, Any]]) -> Stopped | None:
    """One engine: its clips (logged as they come), a second pass for a
    constant lag if asked, its summary, added to ``results``. An interrupt
    keeps the clips done, summarised and marked; one as the summary is made
    is raised once it is in ``results``. UserError (the engine cannot start) goes up."""
    turn = Turn(engine, next_engine, run.writer.new_table(engine.name))
    compensation, stop = None, None
    try:
        run_and_log(run, turn, run.plan.engine_options(engine), turn.table)
        compensation = align_constant_lag(run, turn)
    except (Interrupted, KeyboardInterrupt) as error:
        # Every clip done is already in the .clips.jsonl (and the cache).
        stop = Stopped(as_interrupted(error), engine, len(turn.table), run.plan.planned_runs(engine))
        if not len(turn.table):
            return stop
    with held():
        if not results:  # input notes are the same for every engine: say them once
            print_clip_notes(turn.table)
        result = summarise_engine(run.plan, turn, compensation, stop)
        run.writer.engine_done(result, turn.table)
        results.append(result)
    return stop


def run_and_log(run: Run, turn: Turn, options: dict[str, Any], table: RecordTable, lag_compensation: float = 0.0) -> None:
    """Runs the engine, adding each clip's record to ``table`` (and its line
    to the .clips.jsonl) as it comes, so an interrupt keeps every clip done."""
    plan, engine = run.plan, turn.engine
    seeds = plan.seeds(engine)
    if plan.config.seeds and not engine.seeded:
        turn.notes.append("deterministic: run once, --seeds does not apply")
    log = run.writer.clip_log(engine.name)
    progress = engine_progress(len(plan.sources) * len(seeds), engine.name, plan.config.quiet)
    outcomes = (outcome for seed in seeds for outcome in run_seed(run, turn, {**options, "seed": seed}, lag_compensation))
    try:
        for done, outcome in enumerate(outcomes):
            if not done:  # this engine's workers are busy: build the next one meanwhile
                build_next_engine(run, turn.next_engine)
            record = outcome.record
            with deferred():
                table.append(record, run.writer.add(log, engine.name, record, outcome.output, outcome.sample_rate))
            for warning in outcome.warnings:
                if warning not in run.state.warned:
                    run.state.warned.add(warning)
                    say(f"nsbench: {warning}")
            if record.failed:
                say(f"nsbench: {engine.name} failed on {record.clip_id}: {record.error}")
            progress.update()
    finally:
        outcomes.close()  # an interrupt here, not in the engine: close it (and stop its workers) now
        progress.close()
        log.close()


def run_seed(run: Run, turn: Turn, options: dict[str, Any], lag_compensation: float):
    """The engine's outcomes for one seed, built ahead if it was, for these options."""
    plan, engine = run.plan, turn.engine
    keyed = {**options, LAG_COMPENSATION: lag_compensation} if lag_compensation else options
    identity = plan.cache_identity(engine, keyed) if plan.cache else None
    built = run.state.take_built(engine)
    if built is not None and built.options != options:  # built for another seed
        built.discard()
        built = None
    engine_run = EngineRun(engine, options, plan.metrics, plan.cache, identity, lag_compensation,
                           plan.config.voice_drop_db, plan.blocks)
    return run_engine(engine_run, plan.sources, turn.notes, executor=run.executor, built=built)


def build_next_engine(run: Run, engine: EngineSpec | None) -> None:
    """Builds the next engine (loads its model, measures its delay) while the
    current one's clips run in worker processes, rather than after, when the
    workers have gone and the cores would wait on the parent alone. Only when
    clips run elsewhere, and not for an engine the cache may serve whole (it
    is then never built). A build that fails is dropped: the engine's own turn
    builds it again and reports why, as without this."""
    plan = run.plan
    # Clips run here, or in one worker (--jobs 1): one model at a time, one core.
    if run.executor is None or not run.executor.parallel or len(plan.sources) < 2 or engine is None:
        return
    if engine.name in run.state.built_ahead:
        return
    options = {**plan.engine_options(engine), "seed": plan.seeds(engine)[0]}
    holder = EngineHolder(engine, options)
    try:
        if plan.cache and plan.cache.knows(plan.cache_identity(engine, options).engine):
            return
        holder.get()
    except engine_faults():
        holder.discard()
        return
    run.state.built_ahead[engine.name] = holder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--align-constant-lag", action="store_true",
        help="if an engine's output lags the clean voice by the same amount on most clips, remove that lag "
             "and run the engine again (the report says so)",
    )


def align_constant_lag(run: Run, turn: Turn) -> dict[str, Any] | None:
    """--align-constant-lag: if the first pass found a constant lag, run the
    engine again with that lag removed on top of its declared delay; its
    records replace the first pass's (so do its .clips.jsonl and audio).
    Returns what was done, for the report; None if nothing was."""
    if not run.plan.config.align_constant_lag:
        return None
    records = turn.table
    first = alignment_summary(records)
    lag = first["constant_lag"]
    if lag is None:
        return None
    seconds = lag["samples"] / lag["sample_rate"]
    declared = removed_delay_seconds(records)
    if seconds + declared < 0:  # earlier than the input itself: nothing to remove
        turn.notes.append(f"output early by {-lag['samples']} samples, more than its declared delay: not compensated")
        return None
    second = run.writer.new_table(turn.engine.name)
    try:
        run_and_log(run, turn, run.plan.engine_options(turn.engine), second, lag_compensation=seconds)
    finally:
        turn.table = second  # the files now hold the second pass
    return {**lag, "first_pass": {key: first[key] for key in ("text", "measured_clips", "lags")}}


def removed_delay_seconds(table: RecordTable) -> float:
    """The delay the first pass removed (declared or measured), in seconds."""
    for delay, _ in table.counted("delay"):  # in order of first appearance: the first record's that matches
        match = re.fullmatch(r"(-?\d+) samples at (\d+) Hz", delay)
        if match:
            return int(match[1]) / int(match[2])
    return 0.0


def print_clip_notes(table: RecordTable, shown: int = 5) -> None:
    """Treatments applied to the input (downmix, resample, trim), a few shown;
    every one is in the .clips.jsonl files."""
    total = sum(len(notes) * count for notes, count in table.counted("notes"))
    noted = itertools.islice(((table.clip_id(row), note) for row in table.rows_where("notes", bool)
                              for note in table.value(table.column("notes")[row])), shown)
    for clip_id, note in noted:
        print(f"nsbench: note on {clip_id}: {note}", file=sys.stderr)
    if total > shown:
        print(f"nsbench: ... and {total - shown} more notes in the .clips.jsonl files", file=sys.stderr)


def summarise_engine(plan: RunPlan, turn: Turn, compensation: dict[str, Any] | None, stop: Stopped | None) -> dict[str, Any]:
    """The engine's ``<engine>.json`` payload."""
    dataset, engine, records, reported = plan.dataset, turn.engine, turn.table, plan.reported
    summary = summarise(records, reported, dataset.cell_keys, dataset.headline_metric, dataset.pooled_cells,
                        plan.config.voice_drop_db, engine.expected_flags)
    if compensation:  # a new summary, not the one summarise built edited
        summary = {**summary, "alignment": {**summary["alignment"], "compensation": compensation}}
    cached = int(records.column("from_cache").sum())
    if cached:
        turn.notes.append(f"{cached} of {len(records)} outputs from the cache, with the timings of the run that made them")
    extra = {**plan.shared, "from_cache": {"outputs": cached, "runs": len(records)}}
    if stop:
        extra["interrupted"] = {"signal": stop.signal.name, "clips_done": stop.done, "clips_planned": stop.planned}
    info = engine_info(plan.registry.engines.get(engine.name), records, turn.notes, plan.baselines)
    if plan.conditions:  # the engine's gain under each condition (the passthrough's: the input's score)
        extra = {**extra, "conditions": conditions_summary.condition_cells(records, reported, plan.conditions)}
    streamed = streaming_summary.engine_summary(records)
    if streamed is not None:
        extra = {**extra, "streaming": streamed}
    return engine_result(engine.name, dataset.name, summary, reported, {**extra, "engine_info": info}, plan.view)


def engine_info(record: Registered[EngineSpec], records: RecordTable, notes: list[str], baselines: list[str] = ()) -> dict[str, Any]:
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
        "delays_removed": {delay: count for delay, count in records.counted("delay") if delay},
        "notes": list(dict.fromkeys(notes)),  # once each, however many seeds ran
    }
