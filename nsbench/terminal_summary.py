"""The summary a run prints on stdout: one row per engine, what beat the
baseline, what was flagged, and where the full reports are. About 20 lines for
the default run, where report.md is hundreds (``--verbose`` prints that too)."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench import highlights
from nsbench.report import fmt, headline_of, hodges_lehmann_text, interval
from nsbench.summary import plural

ORACLE_MARK = "[oracle]"
WIDTH = 100  # the flags and verdict lines wrap here


def summary_text(
    dataset: str, results: Sequence[Mapping[str, Any]], reports: Sequence[Path], not_run: Mapping[str, str] | None = None
) -> str:
    results = highlights.ordered(results)
    headline = headline_of(results)
    unit = highlights.headline_unit(results, headline)
    clips = max((r["clips"] for r in results), default=0)
    lines = [f"nsbench {dataset}: {clips} clips; {headline} ({unit}, {highlights.headline_direction(results)}): "
             f"mean [95% CI] over clips"]
    lines += engine_table(results, headline)
    if any(highlights.is_oracle(r) for r in results):
        lines.append(f"{ORACLE_MARK}: uses the clean reference; an upper bound, not an engine")
    lines += wrapped(verdict_text(results))
    lines += wrapped(flags_text(results))
    if not_run:
        lines += wrapped("not run: " + "; ".join(f"{name} ({why})" for name, why in not_run.items()))
    lines += [f"report: {reports[0]}", *(f"        {path}" for path in reports[1:])]
    return "\n".join(lines)


def engine_table(results: Sequence[Mapping[str, Any]], headline: str) -> list[str]:
    header = ["engine", f"{headline} [95% CI]", "STOI", "RTF", "flagged", f"worst cell ({headline} there)"]
    rows = [header]
    for result in results:
        stats = result["metrics"].get(headline, {})
        name = f"{result['engine']} {ORACLE_MARK}" if highlights.is_oracle(result) else result["engine"]
        flagged = highlights.flagged_clips(result)
        failed = f", {result['failures']} failed" if result.get("failures") else ""
        rows.append([
            name,
            f"{fmt(stats.get('mean', math.nan), 2)} {interval(stats.get('mean_ci95'), 2)}",
            fmt(result.get("stoi", math.nan), 3),
            fmt(result.get("rtf", math.nan), 3),
            (plural(flagged, "clip") if flagged else "–") + failed,
            highlights.worst_cell_text(result),
        ])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def verdict_text(results: Sequence[Mapping[str, Any]]) -> str:
    verdicts = highlights.headline_verdicts(results)
    if not verdicts:
        return "no baseline ran: nothing is compared"
    better = [unbroken(verdict_item(v)) for v in verdicts if v.verdict == "better"]
    worse = [unbroken(verdict_item(v)) for v in verdicts if v.verdict == "worse"]
    unclear = [unbroken(verdict_item(v)) for v in verdicts if v.verdict == "not distinguishable"]
    text = f"better than {verdicts[0].baseline} (paired Wilcoxon, p < 0.05): {', '.join(better) or 'none'}"
    if worse:
        text += f"; worse: {', '.join(worse)}"
    if unclear:
        text += f"; not distinguishable: {', '.join(unclear)}"
    return text


def verdict_item(verdict: highlights.Verdict) -> str:
    """'speex (mean +2.46, HL +2.30 [1.95, 2.71])': the verdict follows the
    Hodges-Lehmann estimate, so it stands beside the mean with its interval."""
    estimate = hodges_lehmann_text({"hodges_lehmann": verdict.hodges_lehmann, "hl_ci95": list(verdict.hl_ci95)}, 2)
    sign = "+" if verdict.hodges_lehmann > 0 else ""
    return f"{verdict.engine} (mean {verdict.mean_difference:+.2f}, HL {sign}{estimate})"


def flags_text(results: Sequence[Mapping[str, Any]]) -> str:
    parts = [
        unbroken(f"{r['engine']} " + ", ".join(f"{name} x{count}" for name, count, _ in highlights.flag_counts(r)))
        for r in results if r.get("flags")
    ]
    return "flags: " + ("; ".join(parts) if parts else "none")


NO_BREAK = "\u00a0"  # textwrap breaks at ASCII whitespace only


def unbroken(item: str) -> str:
    """An item ("speex (+2.46)") that a wrapped line keeps whole, if it fits."""
    return item.replace(" ", NO_BREAK)


def wrapped(text: str) -> list[str]:
    lines = textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)
    return [line.replace(NO_BREAK, " ") for line in lines]
