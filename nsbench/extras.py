"""What a run writes beyond each engine's JSON and report.md: the paired
comparisons with the baselines, the listening audio, plots, report.html and
the regression gate.

Listening audio: the worst and typical clips of an engine are known only once
it has run, and the run loop yields each output once. So every output is
written as it comes (to ``--output-folder``, or else to a temporary folder);
when the engine is done, its picked clips are copied as 16-bit WAV into
``results/<dataset>/audio/`` beside their noisy input and clean reference,
and the temporary copies are deleted. At most one engine's outputs are ever
on disk beyond what the user asked for, and nothing is held in memory.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import soundfile

from nsbench import checks, compare
from nsbench.report import file_stem, write_json
from nsbench.summary import compare_with_baselines, compared_metrics
from nsbench.types import ClipError, ClipRecord, ClipSource, DatasetSpec, MetricSpec

AUDIO_FOLDER = "audio"  # under results/<dataset>/, beside report.html
INPUT_FOLDER, CLEAN_FOLDER = "_input", "_clean"  # engine folders never start with "_" (file_stem)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--align-constant-lag", action="store_true",
        help="if an engine's output lags the clean voice by the same amount on most clips, remove that lag "
             "and run the engine again (the report says so)",
    )
    parser.add_argument("--compare", metavar="PATH", help="stored results (a folder or an <engine>.json) to compare with; "
                        f"exit code {compare.EXIT_REGRESSION} if an engine got worse beyond the tolerances")
    parser.add_argument("--compare-tolerance", action="append", default=[], metavar="[METRIC=]VALUE",
                        help="tolerance for --compare: 0.1 for every metric, or stoi=0.01 for one (repeatable)")
    parser.add_argument("--voice-drop-db", type=float, default=checks.VOICE_DROP_DB, metavar="DB",
                        help=f"flag clips whose voice level drops by more than DB while SI-SDRi is positive (default {checks.VOICE_DROP_DB:g})")
    parser.add_argument("--no-plots", action="store_true", help="do not draw the PNG plots")
    parser.add_argument("--no-html", action="store_true", help="do not write report.html and its audio")


class RunExtras:
    def __init__(self, args: argparse.Namespace, folder: Path, dataset: DatasetSpec, sources: Sequence[ClipSource], metrics: Sequence[MetricSpec]):
        self.args, self.folder, self.dataset, self.metrics = args, folder, dataset, metrics
        self.sources = {source.clip_id: source for source in sources}
        self.tolerances = compare.parse_tolerances(args.compare_tolerance)
        # Read before the run: the stored results may be the very files this run rewrites.
        self.stored = compare.load_stored(args.compare, dataset.name) if args.compare else None
        self.records: dict[str, list[ClipRecord]] = {}
        self.written_inputs: set[str] = set()
        self.spill: Path | None = None
        if not args.no_html and not args.output_folder:
            self.spill = Path(tempfile.mkdtemp(prefix="nsbench-outputs-"))
            weakref.finalize(self, shutil.rmtree, self.spill, True)

    @property
    def audio_folder(self) -> str | None:
        """Where the run writes every output as it comes (None: nowhere)."""
        return self.args.output_folder or (str(self.spill) if self.spill else None)

    def after_engine(self, result: dict[str, Any], records: list[ClipRecord]) -> None:
        """Keeps the records for the comparisons, and the picked clips' audio."""
        self.records[result["engine"]] = records
        if self.audio_folder is None:
            return
        outputs = Path(self.audio_folder) / file_stem(result["engine"])
        for pick in result["worst_clips"] + result["typical_clips"]:
            self.link_audio(pick, outputs / f"{pick['run']}.wav", result["engine"])
        if self.spill:
            shutil.rmtree(outputs, ignore_errors=True)

    def link_audio(self, pick: dict[str, Any], output: Path, engine: str) -> None:
        if not output.is_file():
            return
        if self.args.no_html:  # report.md links the user's own output folder
            pick["audio"] = os.path.relpath(output, self.folder)
            return
        pick["audio"] = f"{AUDIO_FOLDER}/{file_stem(engine)}/{pick['run']}.wav"
        audio, rate = soundfile.read(str(output), dtype="float32")
        listening_copy(audio.T, rate, self.folder / pick["audio"])
        pick["input_audio"], pick["clean_audio"] = self.write_input(pick["clip_id"])

    def write_input(self, clip_id: str) -> tuple[str, str]:
        paths = tuple(f"{AUDIO_FOLDER}/{role}/{clip_id}.wav" for role in (INPUT_FOLDER, CLEAN_FOLDER))
        if clip_id not in self.written_inputs:
            try:
                clip = self.sources[clip_id].load()
            except ClipError:  # it loaded for the engine a moment ago; if not now, no players
                return "", ""
            listening_copy(clip.noisy, clip.sample_rate, self.folder / paths[0])
            listening_copy(clip.clean, clip.sample_rate, self.folder / paths[1])
            self.written_inputs.add(clip_id)
        return paths

    def finish(self, results: list[dict[str, Any]]) -> tuple[list[str], int]:
        """Comparisons into each JSON, plots, report.html, the regression gate.
        Returns report.md's extra sections and the exit code."""
        self.add_comparisons(results)
        sections, code, regression = [], 0, None
        plots = [] if self.args.no_plots else self.plots(results)
        if plots:
            sections.append("## Plots\n\n" + "\n\n".join(f"![{name}]({name})" for name in plots))
        if self.stored is not None:
            comparison = compare.compare_results(results, self.stored, self.tolerances)
            write_json(self.folder / "comparison.json", {"compared_with": self.args.compare, **comparison})
            sections.append(compare.comparison_markdown(comparison, self.args.compare))
            regression = comparison
            if comparison["regressions"]:
                print(f"nsbench: {comparison['regressions']} values worse than {self.args.compare} beyond tolerance", file=sys.stderr)
                code = compare.EXIT_REGRESSION
        if not self.args.no_html:
            self.html(results, plots, regression)
        return sections, code

    def add_comparisons(self, results: list[dict[str, Any]]) -> None:
        metrics = compared_metrics(self.metrics, self.dataset.headline_metric)
        comparisons = compare_with_baselines(self.records, metrics, self.dataset.cell_keys)
        for result in results:
            result["comparisons"] = comparisons.get(result["engine"], {})
            write_json(self.folder / f"{file_stem(result['engine'])}.json", result)

    def plots(self, results: list[dict[str, Any]]) -> list[str]:
        from nsbench.plots import write_plots  # matplotlib only when plots are drawn

        return write_plots(self.folder, results, self.dataset.cell_keys, self.dataset.table_metrics)

    def html(self, results: list[dict[str, Any]], plots: list[str], regression: Mapping[str, Any] | None) -> None:
        from nsbench.html_report import write_html

        table, text = None, ""
        if regression is not None:
            table = compare.comparison_rows(regression)
            text = compare.comparison_summary(regression).replace("**", "")
        write_html(self.folder, self.dataset.name, results, self.dataset.cell_keys, self.dataset.table_metrics, plots, table, text)


def listening_copy(audio: np.ndarray, rate: int, path: Path) -> None:
    """16-bit PCM, which every browser plays; beyond full scale is clipped (and flagged as clipped)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), np.clip(np.asarray(audio).T, -1.0, 1.0), rate, subtype="PCM_16")
