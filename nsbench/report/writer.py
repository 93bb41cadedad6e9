"""The results writer: the one owner of every file a run writes.

Under ``results/<dataset>/``: each engine's ``.clips.jsonl`` (a line per clip
as it comes, so an interrupt keeps every clip done), its ``<engine>.json``
(written once, at the end, with the paired comparisons with the baselines),
``comparison.json`` and the regression gate, ``ranking.json``, the plots, ``report.html`` and
its listening grid, and ``report.md`` (both through nsbench.report.report_pages); and each output in
``--output-folder``. The run loop hands it records; it decides where they go.
Before the first clip (``held``) it checks every name that becomes a path,
claims the output folder and holds the results folder for this run alone
(nsbench.store.folders); a write that fails there for want of space or
permission stops the run in one line, with what was written whole.

Listening grid: the clips worth hearing are known only once every engine has
run, and the run loop yields each output once. So every output is written as
it comes: to ``--output-folder`` (float, whole), or else as a 16-bit excerpt
(nsbench.report.listening_grid.LISTEN_SECONDS) appended to a temporary file per
engine (nsbench.report.output_spill) that is kept until the grid has copied its
clips into ``results/<dataset>/audio/``, then deleted. Nothing is held in
memory; the temporary files hold at most clips x engines x 30 s of 16-bit audio.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import html
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from nsbench.report import agreement, compare, conditions_summary, coverage, failures, highlights, human_agreement, human_report, listening_grid, model, paper_table, rank_report, reference_use, report_pages, run_folders, run_ranking, streaming_summary
from nsbench.report.plots import NO_MATPLOTLIB, can_draw
from nsbench.report.provenance import redacted

from nsbench.config import RunConfig, blocks_from
from nsbench.store import atomic, folders
from nsbench.report.baselines import compare_with_baselines, compared_metrics
from nsbench.report.format import md
from nsbench.report.layout import View
from nsbench.report.markdown import report_markdown
from nsbench.report.clip_log import ClipLog
from nsbench.report.output_spill import OutputSpill
from nsbench.report.model import file_stem
from nsbench.report.tables import headline_higher_is_better, headline_of
from nsbench.plugins.records import ClipRecord, ClipSource
from nsbench.report.record_table import Pools, RecordTable
from nsbench.plugins.specs import DatasetSpec, MetricSpec


def write_atomically(path: Path, text: str) -> None:
    """The one place a result file is written: to a temporary name, then
    renamed, so a reader never finds it half-written."""
    atomic.write_text(path, text)


def write_json(path: Path, payload: Any) -> None:
    write_atomically(path, json.dumps(payload, indent=2, allow_nan=True) + "\n")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compare", metavar="PATH", help="stored results (a folder or an <engine>.json) to compare with; "
                        f"exit code {compare.EXIT_REGRESSION} if an engine got worse beyond the tolerances")
    parser.add_argument("--compare-tolerance", action="append", default=[], metavar="[METRIC=]VALUE",
                        help="tolerance for --compare: 0.1 for every metric, or stoi=0.01 for one (repeatable)")
    parser.add_argument("--no-plots", action="store_true", help="do not draw the PNG plots")
    parser.add_argument("--no-html", action="store_true", help="do not write report.html and its audio")


def written_before_markers(folder: Path) -> bool:
    """An unmarked results folder that an nsbench run wrote before folders had
    markers: it holds a .clips.jsonl, a name nothing else gives a file."""
    return any(folder.glob("*.clips.jsonl"))


class SourceLookup:
    """``get(clip_id)`` over the run's sources, without a dict of every clip:
    the listening grid asks for ten or so."""

    def __init__(self, sources: Sequence[ClipSource]):
        self.all = sources

    def get(self, clip_id: str, default: ClipSource | None = None) -> ClipSource | None:
        return next((source for source in self.all if source.clip_id == clip_id), default)


class ResultsWriter:
    def __init__(self, config: RunConfig, dataset: DatasetSpec, sources: Sequence[ClipSource], metrics: Sequence[MetricSpec],
                 baselines: Sequence[str] = (), conditions: Sequence[str] = (), identity: Mapping[str, Any] | None = None,
                 ratings: Sequence[Any] = (), *, view: View):
        if (config.plots or config.html) and not can_draw():  # a core install, without [report]
            print(NO_MATPLOTLIB, file=sys.stderr)
            config = dataclasses.replace(config, plots=False, html=False)
        self.config, self.dataset, self.metrics, self.baselines = config, dataset, metrics, baselines
        self.conditions = conditions  # --condition's, "none" first; empty without
        self.view = view  # where the specs place engines and metrics (nsbench.report.layout): the run's plan's
        self.headline = view.headline(dataset.headline_metric)
        # This run's identity (nsbench.report.coverage) names its folder (nsbench.report.run_folders).
        self.identity: dict[str, Any] = dict(identity or {})
        self.folder = run_folders.run_folder(config.results_folder, dataset.name, self.identity)
        self.sources = SourceLookup(sources)  # the grid needs a few clips' sources, found when asked
        self.pools = Pools()  # every engine's table interns clip ids and labels here, once
        self.tolerances = compare.parse_tolerances(list(config.compare_tolerance))
        # Read before the run: the stored results may be the very files this run rewrites.
        self.stored = compare.load_stored(config.compare, dataset.name) if config.compare else None
        self.stored_ranking = run_ranking.stored_ranking(config.compare)  # the same: read before this run writes its own
        self.records: dict[str, RecordTable] = {}  # each engine's, as columns
        self.agreement: dict[str, Any] = {}  # the panel's agreement (nsbench.report.agreement), once finished
        self.ratings = ratings  # a rated set's (nsbench.ratings.RatedSet per cell)
        self.human: dict[str, Any] = {}  # the listeners' agreement (nsbench.report.human_agreement), once finished
        self.human_figures: list[str] = []
        self.coverage = coverage.Coverage()  # filled by finish: earlier runs' results, files left out
        self.results: list[dict[str, Any]] = []  # this run's, as finish wrote them (with comparisons and audio)
        self.spill = OutputSpill() if config.html and not config.output_folder else None
        self.rank_categories = run_ranking.parse_categories(config.rank_categories)  # checked before the first clip
        run_ranking.check_categories(self.rank_categories, metrics)
        self.ranking: dict[str, Any] | None = None  # ranking.json's payload, once finished
        self.forest = ""  # forest.png, where plots are drawn

    # --------------------------------------------------------------- before the first clip

    @contextlib.contextmanager
    def held(self, engines: Sequence[str]) -> Iterator[None]:
        """The run's names checked (nsbench.report.model.check_file_names), the
        output folder claimed and the results folder held for this run alone
        (nsbench.store.folders) until the block ends: all before the first clip."""
        model.check_file_names(self.dataset.name, engines, (source.clip_id for source in self.sources.all))
        command = " ".join(shlex.quote(arg) for arg in ["benchmark.py", *redacted(list(self.config.argv))])
        with folders.held(self.folder, "the results folder", command, adopt=written_before_markers):
            self.point_latest()
            if self.config.output_folder:  # after: it may be a folder in the results folder
                folders.claim(Path(self.config.output_folder), "the output folder")
            yield

    def point_latest(self) -> None:
        """``results/<dataset>`` made to link this run's folder (nsbench.report.run_folders)."""
        note = run_folders.point_latest(self.config.results_folder, self.dataset.name, self.folder)
        if note:
            print(f"nsbench: {note}", file=sys.stderr)

    # --------------------------------------------------------------- as the run goes

    def clip_log(self, engine: str) -> ClipLog:
        return ClipLog(self.folder / f"{file_stem(engine)}.clips.jsonl")

    def new_table(self, engine: str) -> RecordTable:
        """An engine's records as they come, rereadable from its .clips.jsonl."""
        return RecordTable(self.pools, self.clip_log(engine).path)

    def add(self, log: ClipLog, engine: str, record: ClipRecord, output: np.ndarray | None, sample_rate: int) -> int:
        """A clip's line, and its output where outputs are kept (--output-folder, or report.html's grid).
        Returns where the line starts in the .clips.jsonl."""
        offset = log.add(record)
        if not record.failed:
            self.keep_output(engine, record.run_id, output, sample_rate)
        return offset

    def keep_output(self, engine: str, run: str, audio: np.ndarray, rate: int) -> None:
        """Each output as it comes: whole and float in --output-folder, else a 16-bit excerpt for the grid."""
        if self.config.output_folder:
            with folders.stop_on_failure(Path(self.config.output_folder), "the output folder"):
                listening_grid.write_wav(self.output_path(engine, run), audio, rate, "FLOAT")
        elif self.spill:
            with folders.stop_on_failure(self.spill.folder, "the temporary folder of report.html's audio"):
                self.spill.keep(engine, run, audio, rate)

    def kept_output(self, engine: str, run: str) -> tuple[np.ndarray, int] | None:
        if self.config.output_folder:
            return listening_grid.read_excerpt(self.output_path(engine, run))
        return self.spill.read(engine, run) if self.spill else None

    def output_path(self, engine: str, run: str) -> Path:
        """An output's file in --output-folder: ``<engine>/<run>.wav``, refused if the run id would leave it."""
        return folders.inside(Path(self.config.output_folder) / file_stem(engine), f"{run}.wav")

    def engine_done(self, result: Mapping[str, Any], records: RecordTable) -> None:
        """Keeps the records (as columns) for the comparisons and the grid."""
        records.trim()
        self.records[result["engine"]] = records

    def output_links(self, results: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, str]]]:
        """Without report.html, report.md links the worst clips in the user's --output-folder: engine -> run -> paths."""
        links: dict[str, dict[str, dict[str, str]]] = {}
        for result in results if not self.config.html and self.config.output_folder else ():
            for pick in model.listening_picks(result):
                output = self.output_path(result["engine"], pick["run"])
                if output.is_file():
                    links.setdefault(result["engine"], {})[pick["run"]] = {"audio": os.path.relpath(output, self.folder)}
        return links

    def listening(self, results: list[dict[str, Any]]) -> tuple[listening_grid.Grid, dict[str, dict[str, dict[str, str]]]]:
        """The grid's audio and spectrograms, and the paths of the worst and typical clips it holds: engine -> run -> paths."""
        shutil.rmtree(self.folder / listening_grid.AUDIO_FOLDER, ignore_errors=True)  # an earlier run's grid
        try:
            grid = listening_grid.build_grid(
                self.folder, highlights.ordered(results, self.view), self.records, self.sources, self.kept_output,
                self.headline, headline_higher_is_better(results, self.headline), view=self.view,
            )
        finally:
            if self.spill:
                self.spill.close()
        links: dict[str, dict[str, dict[str, str]]] = {}
        for row in grid.rows:
            for output in row.outputs:
                if output.audio:
                    links.setdefault(output.engine, {})[output.run] = {
                        "audio": output.audio, "input_audio": row.input_audio, "clean_audio": row.clean_audio}
        return grid, links

    # --------------------------------------------------------------- at the end

    def finish(self, results: list[dict[str, Any]], not_run: Mapping[str, str], interruption: str = "") -> tuple[str, int]:
        """Every engine's JSON (once, with its comparisons and its grid
        audio), the plots, the regression gate, report.html and report.md
        (``interruption``: a paragraph saying it is incomplete). Returns
        report.md's text and the exit code. A full disk stops it in one line
        (each file is written whole or not at all)."""
        with folders.stop_on_failure(self.folder, "the results folder"):
            return self.write_every_file(results, not_run, interruption)

    def write_every_file(self, results: list[dict[str, Any]], not_run: Mapping[str, str], interruption: str) -> tuple[str, int]:
        self.folder.mkdir(parents=True, exist_ok=True)  # made by the first clip's line: an interrupt may come before it
        grid, links = self.listening(results) if self.config.html else (None, self.output_links(results))
        comparisons = self.comparisons()
        # Each result built once more, whole: with its comparisons and its audio (nsbench.report.model.finished).
        results = [model.finished(result, comparisons.get(result["engine"], {}), links.get(result["engine"]))
                   for result in results]
        self.results = results  # what the run's summary prints
        for result in results:
            write_json(self.folder / f"{file_stem(result['engine'])}.json", model.validated(result, self.view))
        current = results
        self.ranking = self.rank(current)
        results = [*results, *self.earlier(results)]
        self.agreement = self.panel_agreement(results)
        self.human, self.human_figures = self.human_agreement()  # before report.html, which shows it
        sections, code = self.extras(results, grid, current)
        sections = [text for text in [human_report.markdown(self.human, self.human_figures), agreement.agreement_markdown(self.agreement)]
                    if text] + sections
        blocks = blocks_from(self.config)
        if blocks:
            sections.insert(0, streaming_summary.report_section(results, blocks, self.config.jobs))
            only_whole = streaming_summary.only_unstreamable_line(results, self.baselines, blocks)
            if only_whole:
                print(f"nsbench: {only_whole}", file=sys.stderr)
        top, by_condition = conditions_summary.report_parts(results, self.view) if self.conditions else ([], [])
        top = [text for text in (coverage.earlier_text(self.coverage.earlier), md(coverage.cache_sentence(current)),
                                 md(reference_use.results_text(results))) if text] + list(top)
        sections = [text for text in (failures.failures_markdown(current), coverage.left_out_markdown(self.coverage.left_out))
                    if text] + sections
        report = report_markdown(self.dataset.name, results, self.dataset.cell_keys, self.metrics, not_run,
                                 self.dataset.table_metrics, self.config.jobs, [*by_condition, *sections], top=top,
                                 paper=self.paper_tables(results), lead=[rank_report.markdown_section(results, self.view, self.ranking, self.forest)], view=self.view)
        if interruption:
            title, _, rest = report.partition("\n\n")
            report = f"{title}\n\n{interruption}\n\n{rest}"
        report_pages.write_markdown(self.folder, report)  # with a listening test's section, if one was collected here
        return report, code

    def rank(self, results: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The engines ranked (nsbench.report.run_ranking), written as ranking.json; with --compare, the rank changes."""
        config = self.config
        found = run_ranking.run_ranking(results, self.records, self.metrics, headline_of(results, self.view),
                                        self.rank_categories, config.rank_ties, config.rank_decimals, view=self.view)
        (self.folder / run_ranking.RANKING_FILE).unlink(missing_ok=True)  # an earlier run's
        if found is not None:
            found = {**found, "changes": run_ranking.rank_changes(found, self.stored_ranking)}
            write_json(self.folder / run_ranking.RANKING_FILE, found)
            for line in run_ranking.change_lines(found["changes"]):
                print(f"nsbench: {line}", file=sys.stderr)
        return found

    def paper_tables(self, results: list[dict[str, Any]]) -> list[str]:
        """The papers' tables (nsbench.report.paper_table): written as LaTeX to
        ``paper-table.tex``; report.md's sections returned."""
        tables = paper_table.paper_tables(results, self.view)
        if tables:
            write_atomically(self.folder / paper_table.PAPER_TABLE_FILE, paper_table.latex(tables, self.dataset.name))
        return [paper_table.markdown(table) for table in tables]

    def earlier(self, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The earlier runs' results this report covers (nsbench.report.coverage); the files it leaves out go to ``self.coverage``."""
        if not self.identity:
            return []
        ran = [result["engine"] for result in results]
        found = coverage.earlier_results(self.folder, self.identity, ran, {name: file_stem(name) for name in ran})
        if self.config.html:  # the listening grid was rebuilt for this run's engines only: their audio is gone
            found = dataclasses.replace(found, earlier=[model.finished(result) for result in found.earlier])
        self.coverage = found
        return found.earlier

    def extras(self, results: list[dict[str, Any]], grid: listening_grid.Grid | None,
               current: list[dict[str, Any]] | None = None) -> tuple[list[str], int]:
        """Plots, the comparison with --compare (of this run's results, ``current``), report.html:
        report.md's extra sections and the exit code."""
        current = results if current is None else current
        sections, code, regression = [], 0, None
        plots = self.plots(results) if self.config.plots else []
        if plots:
            from nsbench.report.plots import plots_markdown

            sections.append(plots_markdown(plots))
        if self.stored is not None:
            clip_logs = {engine: table.path for engine, table in self.records.items() if table.path}
            comparison = compare.compare_run(current, self.stored, self.tolerances, self.identity, clip_logs, self.dataset.cell_keys)
            write_json(self.folder / "comparison.json", {"compared_with": self.config.compare, **comparison})
            sections.append(compare.comparison_markdown(comparison, self.config.compare))
            regression = comparison
            for line in compare.terminal_lines(comparison, self.config.compare):
                print(f"nsbench: {line}", file=sys.stderr)
            code = compare.exit_code(comparison)
        if grid is not None:
            self.html(results, plots, regression, grid, current)
        return sections, code

    @property
    def first_baseline(self) -> str | None:
        """The run's first baseline (the passthrough where it ran): the rated engine, the panel's input; None if none ran."""
        return self.baselines[0] if self.baselines else None

    def panel_agreement(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        """The no-reference metrics against the intrusive ones (nsbench.report.agreement), also
        written as agreement.json; {} (and no file) when the run computed no such pair."""
        oracles = [r["engine"] for r in results if r.get("engine_info", {}).get("oracle")]
        found = agreement.panel_agreement(self.records, self.metrics, oracles, self.first_baseline)
        (self.folder / "agreement.json").unlink(missing_ok=True)  # an earlier run's
        if found:
            write_json(self.folder / "agreement.json", found)
        return found

    def human_agreement(self) -> tuple[dict[str, Any], list[str]]:
        """The metrics against a rated set's ratings, written as human-agreement.json with its scatters; ({}, []) on other sets."""
        found = human_agreement.run_agreement(self.ratings, self.records, self.metrics, self.first_baseline)
        (self.folder / human_agreement.FILE_NAME).unlink(missing_ok=True)  # an earlier run's
        if not found:
            return {}, []
        write_json(self.folder / human_agreement.FILE_NAME, found)
        return found, human_report.write_figures(self.folder, found) if self.config.plots else []

    def comparisons(self) -> dict[str, Any]:
        """engine -> baseline -> metric -> the paired comparison (nsbench.report.baselines)."""
        metrics = compared_metrics(self.metrics, self.headline, self.view)
        return compare_with_baselines(self.records, metrics, self.dataset.cell_keys, self.baselines)

    def plots(self, results: list[dict[str, Any]]) -> list[str]:
        from nsbench.report.plots import write_plots  # matplotlib only when plots are drawn

        self.forest = rank_report.write_forest(self.folder, results, self.view, self.ranking)  # the ranking's, not among the plots
        return write_plots(self.folder, results, self.dataset.cell_keys, self.view, self.dataset.table_metrics)

    def html(self, results: list[dict[str, Any]], plots: list[str], regression: Mapping[str, Any] | None,
             grid: listening_grid.Grid, current: list[dict[str, Any]]) -> None:
        from nsbench.report.html_report import conditions_html, html_page, streaming_html

        blocks = blocks_from(self.config)
        sections = [*([conditions_html(results, self.view)] if self.conditions else []),
                    *([streaming_html(results, blocks, self.config.jobs, self.view)] if blocks else [])]
        cached = coverage.cache_sentence(current)
        notices = [coverage.earlier_html(self.coverage.earlier), f'<p id="from-cache">{html.escape(cached)}</p>' if cached else "",
                   failures.failures_html(current),
                   coverage.left_out_html(self.coverage.left_out)]
        table, text = None, ""
        if regression is not None:
            table = compare.comparison_rows(regression)
            text = compare.comparison_text(regression)
        report_pages.write_html(self.folder, html_page(self.folder, self.dataset.name, results, self.dataset.cell_keys, self.dataset.table_metrics, plots, table, text,
                   grid, [*sections, *human_report.html_section(self.human, self.human_figures), *agreement.agreement_html(self.agreement)],
                   notices=[notice for notice in notices if notice],
                   lead=rank_report.html_section(results, self.view, self.ranking, self.folder / self.forest if self.forest else None),
                   view=self.view))

