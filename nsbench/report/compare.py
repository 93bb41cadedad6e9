"""The regression gate: ``--compare PATH`` against stored results.

Per engine present in both, per metric, over all clips and per cell: the
difference of the means, judged against a tolerance in the metric's own
direction. A value worse by more than its tolerance (or no longer there) is a
regression, and the run exits with EXIT_REGRESSION, so a developer's CI can
run nsbench on every commit.

Like with like only (nsbench.report.compare_scope): an engine whose stored run
was made on another dataset, other options, metrics, conditions or block size,
or shares too few clips with this run, is not compared; the reason is said in
one line and the run exits EXIT_INCOMPLETE (something asked for was left out),
never with a verdict. The stored files are read as a stranger's data
(nsbench.report.read_back): a file that is not a valid result is named and
left out, and nothing a file names is imported or run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.report import read_back
from nsbench.report.compare_scope import scope_of, stored_clip_lines
from nsbench.report.coverage import NOT_ENGINE_FILES
from nsbench.report.failures import EXIT_INCOMPLETE
from nsbench.report.format import Table, fmt, markdown_table, md, plain
from nsbench.report.schema import FORMAT_VERSION as RESULTS_FORMAT_VERSION
from nsbench.text import plural
from nsbench.plugins.errors import UserError

EXIT_REGRESSION = 3
# Default tolerances by unit: a few hundredths of a dB, half a hundredth of
# STOI, a point of a rate; the rest (MOS scales, counts) 0.01.
TOLERANCE_BY_UNIT = {"dB": 0.05, "0-1": 0.005, "rate": 0.01}
DEFAULT_TOLERANCE = 0.01
# Timing depends on the machine and its load: never a regression.
NOT_COMPARED_UNITS = ("x realtime",)
ALL_CLIPS = "all clips"


def parse_tolerances(texts: Sequence[str]) -> dict[str | None, float]:
    """``0.1`` sets every metric's tolerance, ``stoi=0.01`` one metric's."""
    tolerances: dict[str | None, float] = {}
    for text in texts:
        name, _, value = text.rpartition("=")
        try:
            tolerances[name or None] = float(value)
        except ValueError:
            raise UserError(f"--compare-tolerance: expected 0.1 or METRIC=0.1, got {text!r}") from None
    return tolerances


@dataclass
class Stored:
    """The stored results, read before the run (it may write over them):
    engine -> result and its clip lines (or why there are none), and the
    files left out, by name, with the reason."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    clip_lines: dict[str, list[dict[str, Any]] | str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)


def load_stored(path: str, dataset: str) -> Stored:
    """The results in an ``<engine>.json``, a folder of them, or a results
    folder holding ``<dataset>/``. A file that is not a valid engine result is
    left out with its reason (said with the comparison); none valid at all is a UserError."""
    where = Path(path)
    if where.is_dir() and (where / dataset).is_dir():
        where = where / dataset
    if where.is_file():
        files = [where]
    elif where.is_dir():
        files = [file for file in sorted(where.glob("*.json")) if file.name not in NOT_ENGINE_FILES]
    else:
        raise UserError(f"--compare {path}: no such file or folder")
    stored = Stored()
    for file in files:
        add_stored(stored, file)
    if not stored.results:
        reasons = "; ".join(f"{name}: {why}" for name, why in stored.left_out.items())
        raise UserError(f"--compare {path}: no engine results (<engine>.json) there" + (f" ({reasons})" if reasons else ""))
    return stored


def add_stored(stored: Stored, file: Path) -> None:
    try:
        result = read_back.engine_result(file)
    except read_back.NotReadable as error:
        stored.left_out[file.name] = str(error)
        return
    check_format(result, file)
    stored.results[result["engine"]] = result
    stored.clip_lines[result["engine"]] = stored_clip_lines(file)


def check_format(result: Mapping[str, Any], file: Path) -> None:
    """Results of another format version hold figures that mean other things
    (FUSS means pooled over clips, then over pairs): refused, not compared."""
    version = result.get("format_version", 1)
    if version != RESULTS_FORMAT_VERSION:
        raise UserError(
            f"--compare {file}: results format version {version}, this nsbench writes version "
            f"{RESULTS_FORMAT_VERSION}; their figures are not comparable: run the stored version's "
            "command again with this nsbench to get a baseline"
        )


def tolerance(metric: str, unit: str, tolerances: Mapping[str | None, float]) -> float | None:
    """None: not compared."""
    if unit in NOT_COMPARED_UNITS:
        return None
    return tolerances.get(metric, tolerances.get(None, TOLERANCE_BY_UNIT.get(unit, DEFAULT_TOLERANCE)))


def compare_run(results: Sequence[Mapping[str, Any]], stored: Stored, tolerances: Mapping[str | None, float],
                identity: Mapping[str, Any], clip_logs: Mapping[str, Path], cell_keys: Sequence[str]) -> dict[str, Any]:
    """This run's results (``results``; ``identity``: the run's, ``clip_logs``: each engine's
    .clips.jsonl) against the stored ones, each engine on what the two share (compare_scope)."""
    rows, clips, not_compared = [], {}, {}
    for result in results:
        engine = result["engine"]
        if engine not in stored.results:
            continue
        scope = scope_of(result, stored.results[engine], identity, stored.clip_lines[engine], clip_logs.get(engine), cell_keys)
        clips[engine] = {"compared": scope.clips, "only_now": scope.only_now, "only_stored": scope.only_stored}
        if scope.reason:
            not_compared[engine] = scope.reason
            continue
        rows += engine_rows(engine, result["metric_definitions"], scope.now, scope.before, tolerances)
    return {**tallied(rows, [r["engine"] for r in results if r["engine"] in clips and r["engine"] not in not_compared],
                      sorted(set(stored.results) - {r["engine"] for r in results})),
            "clips": clips, "not_compared": not_compared, "left_out": dict(stored.left_out)}


def tallied(rows: list[dict[str, Any]], compared: list[str], not_run_now: list[str]) -> dict[str, Any]:
    return {
        "rows": rows,
        "regressions": sum(row["status"] in ("worse", "missing now") for row in rows),
        "engines_compared": compared,
        "engines_not_run_now": not_run_now,
    }


def exit_code(comparison: Mapping[str, Any]) -> int:
    """EXIT_REGRESSION for a regression, else EXIT_INCOMPLETE if an engine could not be compared, else 0."""
    if comparison["regressions"]:
        return EXIT_REGRESSION
    return EXIT_INCOMPLETE if comparison.get("not_compared") else 0


def engine_rows(engine: str, definitions: Mapping[str, Any], result: Mapping[str, Any], old: Mapping[str, Any],
                tolerances: Mapping[str | None, float]) -> list[dict[str, Any]]:
    """``result`` and ``old``: summaries (failures, metrics, cells) of the same clips."""
    rows = [failure_row(engine, result, old)]
    scopes = [(ALL_CLIPS, result["metrics"], old["metrics"])]
    new_cells = {cell_name(row): row for row in result["cells"]}
    for row in old["cells"]:
        now = new_cells.get(cell_name(row), {"metrics": {}})
        scopes.append((cell_name(row), now["metrics"], row["metrics"]))
    for cell, now, before in scopes:
        for metric, definition in definitions.items():
            limit = tolerance(metric, definition["unit"], tolerances)
            if limit is not None and metric in before:
                rows.append(value_row(engine, cell, metric, before[metric]["mean"], now.get(metric), limit, definition["higher_is_better"]))
    return rows


def cell_name(row: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in row["cell"].items())


def failure_row(engine: str, result: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    difference = result["failures"] - old["failures"]
    status = "worse" if difference > 0 else "better" if difference < 0 else "same"
    return {"engine": engine, "cell": ALL_CLIPS, "metric": "failures", "stored": old["failures"], "now": result["failures"],
            "difference": difference, "tolerance": 0, "status": status}


def value_row(
    engine: str, cell: str, metric: str, stored: float, now_stats: Mapping[str, Any] | None, limit: float, higher_is_better: bool
) -> dict[str, Any]:
    now = now_stats["mean"] if now_stats else math.nan
    row = {"engine": engine, "cell": cell, "metric": metric, "stored": stored, "now": now, "tolerance": limit}
    if math.isnan(stored) and math.isnan(now):
        return {**row, "difference": 0.0, "status": "same"}
    if math.isnan(now):
        return {**row, "difference": math.nan, "status": "missing now"}
    difference = now - stored if not math.isnan(stored) else math.nan
    gain = difference if higher_is_better else -difference
    status = "better" if gain > limit else "worse" if gain < -limit else "same"
    if math.isnan(stored):
        status = "new"
    return {**row, "difference": difference, "status": status}


def comparison_rows(comparison: Mapping[str, Any]) -> Table:
    """The values beyond tolerance (same ones are counted, not listed)."""
    header = ["engine", "cell", "metric", "stored", "now", "difference", "tolerance", "status"]
    rows = [
        [row["engine"], row["cell"], row["metric"], fmt(row["stored"], 4), fmt(row["now"], 4), fmt(row["difference"], 4),
         str(row["tolerance"]), row["status"].upper() if row["status"] in ("worse", "missing now") else row["status"]]
        for row in comparison["rows"]
        if row["status"] != "same"
    ]
    return header, rows


def comparison_summary(comparison: Mapping[str, Any]) -> str:
    """The verdict and what was compared, in one paragraph (markdown: report.html reads it through plain)."""
    same = sum(row["status"] == "same" for row in comparison["rows"])
    verdict = (
        f"**REGRESSION**: {plural(comparison['regressions'], 'value')} worse than stored beyond tolerance (exit code {EXIT_REGRESSION})."
        if comparison["regressions"]
        else "No regression beyond tolerance." if comparison["engines_compared"] or not comparison.get("not_compared")
        else f"**No verdict**: no engine could be compared like with like (exit code {EXIT_INCOMPLETE})."
    )
    engines = ", ".join(md(engine) for engine in comparison["engines_compared"]) or "no engine"
    counted = "" if verdict.startswith("**No verdict**") else \
        f" {plural(len(comparison['rows']), 'value')} compared for {engines}; {same} within tolerance."
    return (
        f"{verdict}{counted} Default tolerances: dB metrics {TOLERANCE_BY_UNIT['dB']}, 0-1 scores {TOLERANCE_BY_UNIT['0-1']}, "
        f"rates {TOLERANCE_BY_UNIT['rate']}, others {DEFAULT_TOLERANCE} (--compare-tolerance); timing is not compared."
    )


def clips_text(comparison: Mapping[str, Any]) -> str:
    """"Clips compared: residual 5 (35 only stored)": how many clips each engine was compared on, or ""."""
    parts = []
    for engine, counts in comparison.get("clips", {}).items():
        if engine in comparison.get("not_compared", {}):
            continue
        aside = [f"{counts[key]} only {side}" for key, side in (("only_now", "now"), ("only_stored", "stored")) if counts[key]]
        parts.append(f"{md(engine)} {counts['compared']}" + (f" ({', '.join(aside)})" if aside else ""))
    return ("Clips compared (those both runs have): " + "; ".join(parts) + ".") if parts else ""


def scope_lines(comparison: Mapping[str, Any]) -> list[str]:
    """What was compared on which clips, what could not be and which stored files were left out (markdown)."""
    lines = [clips_text(comparison)] if clips_text(comparison) else []
    lines += [f"**Not compared** (no verdict) for {', '.join(map(md, engines))}: {md(reason)}."
              for reason, engines in by_reason(comparison).items()]
    lines += [f"Left out of the stored results: {md(name)}: {md(reason)}." for name, reason in comparison.get("left_out", {}).items()]
    if comparison["engines_not_run_now"]:
        lines.append(f"Stored but not run now: {', '.join(md(name) for name in comparison['engines_not_run_now'])}.")
    return lines


def by_reason(comparison: Mapping[str, Any]) -> dict[str, list[str]]:
    """The engines not compared, grouped by why (often one reason for all)."""
    grouped: dict[str, list[str]] = {}
    for engine, reason in comparison.get("not_compared", {}).items():
        grouped.setdefault(reason, []).append(engine)
    return grouped


def comparison_markdown(comparison: Mapping[str, Any], path: str) -> str:
    lines = [f"## Compared with {md(path)}", comparison_summary(comparison), *scope_lines(comparison)]
    header, rows = comparison_rows(comparison)
    if rows:
        lines.append(markdown_table((header, rows)))
    return "\n\n".join(lines)


def comparison_text(comparison: Mapping[str, Any]) -> str:
    """comparison_summary and scope_lines as report.html's paragraph (plain text)."""
    return " ".join(plain(line) for line in (comparison_summary(comparison), *scope_lines(comparison)))


def terminal_lines(comparison: Mapping[str, Any], path: str) -> list[str]:
    """One line per reason an engine was not compared (engines sharing it on one line),
    per stored file left out, and the regression count."""
    code = "" if comparison["regressions"] else f" (exit code {EXIT_INCOMPLETE})"
    lines = [f"--compare {path}: {', '.join(engines)} not compared, no verdict{code}: {reason}"
             for reason, engines in by_reason(comparison).items()]
    lines += [f"--compare {path}: {name} left out: {reason}" for name, reason in comparison.get("left_out", {}).items()]
    if comparison["regressions"]:
        lines.append(f"{plural(comparison['regressions'], 'value')} worse than {path} beyond tolerance: {worse_text(comparison)}")
    elif comparison["engines_compared"]:
        lines.append(f"--compare {path}: no regression beyond tolerance ({plural(len(comparison['rows']), 'value')} "
                     f"compared for {', '.join(comparison['engines_compared'])})")
    return lines


def worse_text(comparison: Mapping[str, Any]) -> str:
    """'speex si_sdri (3 values), stoi (1 value); rnnoise ...': which engine got worse on which metric."""
    cells: dict[str, dict[str, int]] = {}
    for row in comparison["rows"]:
        if row["status"] in ("worse", "missing now"):
            per_metric = cells.setdefault(row["engine"], {})
            per_metric[row["metric"]] = per_metric.get(row["metric"], 0) + 1
    return "; ".join(f"{engine} " + ", ".join(f"{metric} ({plural(count, 'value')})" for metric, count in metrics.items())
                     for engine, metrics in cells.items())
