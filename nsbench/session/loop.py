"""The run: its plan (nsbench.session.plan), each engine's turn in order
(nsbench.session.engine_turn), then every file written (nsbench.report.writer)
and the summary printed.

Following one run from the top: ``benchmark`` -> ``run_engines`` ->
engine_turn.run_one -> runner.run_engine -> clips.run_clip (load, produce)
-> scoring.score_and_check. How clips run (here, a pool of worker
processes, a Dask cluster) is chosen once, here at the top, by
executors.executor_for; nothing below it imports an execution strategy.
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from nsbench.config import RunConfig
from nsbench.run.dask_executor import ClusterCannotGoOn
from nsbench.session.engine_turn import run_one
from nsbench.run.executors import executor_for
from nsbench.run.interrupts import Interrupted, as_interrupted, held
from nsbench.session.plan import plan_run
from nsbench.session.state import Run, Stopped
from nsbench.report import failures, human_report
from nsbench.report.format import md
from nsbench.report.model import file_stem
from nsbench.report.terminal import run_notes_lines, summary_text
from nsbench.report.writer import ResultsWriter
from nsbench.model_files import ModelFileMismatch
from nsbench.store.folders import FolderRefused
from nsbench.plugins.registry import Registry
from nsbench.plugins.errors import UserError
from nsbench.plugins.specs import EngineSpec


def benchmark(config: RunConfig, registry: Registry) -> int:
    """The run's top: plan it, then run every engine where the clips run; the exit code."""
    plan = plan_run(config, registry)
    writer = ResultsWriter(config, plan.dataset, plan.sources, plan.reported, plan.baselines, conditions=plan.conditions,
                           identity=plan.shared["run_identity"], ratings=plan.ratings, view=plan.view)
    with writer.held([engine.name for engine in plan.engines]), \
            executor_for(config.executor, config.jobs, config.scheduler, list(plan.engines), config.clip_timeout) as executor:
        return run_engines(Run(plan, writer, executor))


@dataclass
class Turns:
    """What the engines' turns gave so far: each finished engine's result,
    the engines that did not run (with why), and an interrupt."""

    results: list[dict[str, Any]] = field(default_factory=list)
    not_run: dict[str, str] = field(default_factory=dict)
    stop: Stopped | None = None


def run_engines(run: Run) -> int:
    """Each engine in turn; then the writer writes every file. An interrupt
    anywhere in between (between two turns, as an engine's summary is kept)
    keeps every engine finished: the files are written for them."""
    turns = Turns()
    try:
        run_turns(run, turns)
    except (Interrupted, KeyboardInterrupt) as error:
        pending = waiting(run, turns)
        turns.stop = Stopped(as_interrupted(error), pending[0] if pending else None, 0,
                             run.plan.planned_runs(pending[0]) if pending else 0)
    return finish(run, turns)


def run_turns(run: Run, turns: Turns) -> None:
    engines = run.plan.engines
    try:
        for index, engine in enumerate(engines):
            try:
                turns.stop = run_one(run, engine, engines[index + 1] if index + 1 < len(engines) else None, turns.results)
            except (ModelFileMismatch, ClusterCannotGoOn, FolderRefused):  # not one engine's trouble: stop, exit 2
                raise
            except UserError as error:
                print(f"nsbench: {engine.name} skipped: {error}", file=sys.stderr)
                turns.not_run[engine.name] = str(error)
                continue
            if turns.stop:
                return
    finally:
        with held():
            run.state.discard_built()  # built ahead for an engine that did not run


def waiting(run: Run, turns: Turns) -> list[EngineSpec]:
    """The engines that neither finished, nor were skipped, in order."""
    finished = {result["engine"] for result in turns.results} | set(turns.not_run)
    return [engine for engine in run.plan.engines if engine.name not in finished]


def finish(run: Run, turns: Turns) -> int:
    """Every file written; then, after an interrupt, how to get the rest (and
    the interrupt raised again), else the summary. The exit code. An
    interrupt while the files are written waits until they are whole."""
    stop = turns.stop
    later = [engine for engine in waiting(run, turns) if stop is None or engine is not stop.engine]
    if stop:
        turns.not_run.update((spec.name, f"not run: interrupted by {stop.signal.name}") for spec in later)
    report, exit_code = "", 0
    try:
        with held():
            report, exit_code = run.writer.finish(turns.results, turns.not_run, interruption_note(stop))
    except Interrupted as error:  # every engine had run; the files are whole
        stop = Stopped(error, None, 0, 0)
    exit_code = failures.exit_code(turns.results, turns.not_run, run.plan.config.engines, exit_code)
    if stop:
        print_interruption(stop, run, later)
        stop.signal.reported = True
        raise stop.signal
    print_summary(run, run.writer.results, turns.not_run, report)  # as written: with their comparisons
    return exit_code


def print_summary(run: Run, results: list[dict[str, Any]], not_run: dict[str, str], report: str) -> None:
    config, folder = run.plan.config, run.writer.folder
    if config.verbose:
        print(report)
    if not config.quiet:
        reports = [folder / "report.md", *([folder / "report.html"] if run.writer.config.html else [])]
        print(summary_text(run.plan.dataset.name, results, reports, not_run, run.writer.ranking, view=run.plan.view))
        for line in run_notes_lines(results, run.writer.coverage, not_run, config.engines):
            print(line)
        for line in human_report.terminal_lines(run.writer.human):
            print(line)
    print(f"nsbench: results in {folder}/", file=sys.stderr)


def interruption_note(stop: Stopped | None) -> str:
    """report.md's paragraph, after its title, saying it is incomplete."""
    if stop is None or stop.engine is None:
        return ""
    return f"**Interrupted by {stop.signal.name}: incomplete.** {md(stop.engine.name)} ran {stop.done} of {stop.planned} clips."


def print_interruption(stop: Stopped, run: Run, later: Sequence[EngineSpec]) -> None:
    """Where the results are, and how to get the rest."""
    if stop.engine is None:
        print(f"nsbench: interrupted by {stop.signal.name} after every engine had run; "
              f"results in {run.writer.folder}/, whole", file=sys.stderr)
        return
    engine, stem = stop.engine, file_stem(stop.engine.name)
    lines = [f"interrupted by {stop.signal.name} during {engine.name}, after {stop.done} of {stop.planned} clips"]
    if stop.done:
        lines.append(f"{stem}.clips.jsonl holds every clip done; {stem}.json summarises them, marked \"interrupted\"")
    lines.append(f"results so far in {run.writer.folder}/ (report.md covers the engines that ran)")
    if run.plan.cache is not None:
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
