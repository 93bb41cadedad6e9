"""The summary a run prints on stdout: one row per engine, what beat the
baseline, what was flagged, and where the full reports are. About 20 lines for
the default run, where report.md is hundreds (``--verbose`` prints that too)."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.report import coverage, failures, highlights, paper_table, rank_report

from nsbench.report import reference_use
from nsbench.report.format import fmt, fmt_timing, interval
from nsbench.report.layout import View
from nsbench.report.tables import beside_headline_columns, headline_of, hodges_lehmann_text
from nsbench.text import fit_rows, plural

ORACLE_MARK = "[oracle]"
WIDTH = 100  # the flags and verdict lines wrap here


def summary_text(
    dataset: str, results: Sequence[Mapping[str, Any]], reports: Sequence[Path], not_run: Mapping[str, str] | None = None,
    ranking: Mapping[str, Any] | None = None, *, view: View,
) -> str:
    """``ranking``: the run's (nsbench.report.run_ranking); the rows follow it.
    ``view``: where the specs place engines and metrics (nsbench.report.layout)."""
    headline = headline_of(results, view)
    lines = wrapped(rank_report.headline_sentence(dataset, results, view, ranking))
    lines += engine_table(results, headline, view, ranking)
    lines += [line for table in paper_table.paper_tables(results, view) for line in paper_table.terminal_lines(table)]
    if any(highlights.is_oracle(r) for r in results):
        lines.append(f"{ORACLE_MARK}: uses the clean reference; an upper bound, not an engine, never ranked")
    if ranking and len(ranking["systems"]) > 1:
        lines += wrapped("p(best): the share of resamples in which the engine ranks first (ties shared)"
                         + (f"; category scores: the mean rank over {', '.join(ranking['settings']['categories'])}"
                            if len(ranking["settings"]["categories"]) > 1 else ""))
    lines += wrapped(reference_use.results_text(results))
    lines += wrapped(verdict_text(results, view))
    lines += wrapped(difference_direction(results, view))
    lines += wrapped(flags_text(results))
    lines += [line for text in constant_lag_texts(results) for line in wrapped(text)]
    lines += streaming_lines(results) + condition_lines(results, headline)
    if not_run:
        lines += wrapped("not run: " + "; ".join(f"{name} ({why})" for name, why in not_run.items()))
    lines += [f"report: {reports[0]}", *(f"        {path}" for path in reports[1:])]
    return "\n".join(lines)


def engine_table(results: Sequence[Mapping[str, Any]], headline: str, view: View,
                 ranking: Mapping[str, Any] | None = None) -> list[str]:
    """A row per engine in rank order (nsbench.report.rank_report.ordered), the rank and its interval first."""
    # The values beside the headline (stoi) that some engine has: not with --metric wer, no column of dashes.
    beside = {name: column for name, column in beside_headline_columns(view).items() if any(computed(r.get(name)) for r in results)}
    rtf = any(computed(result.get("rtf")) for result in results)
    categories = rank_report.category_names(ranking) if len(rank_report.category_names(ranking)) > 1 else []
    ranked = ranking is not None
    header = [*["rank [95%]", "p(best)"] * ranked, "engine", *categories, f"{headline} [95% CI]",
              *(title for title, _ in beside.values()), *["RTF"] * rtf, "flagged", f"worst cell ({headline} there)"]
    rows = [header]
    for result, row in rank_report.ordered(results, view, ranking):
        stats = result["metrics"].get(headline, {})
        name = f"{result['engine']} {ORACLE_MARK}" if highlights.is_oracle(result) else result["engine"]
        flagged = highlights.flagged_clips(result)
        failed = f", {result['failures']} failed" if result.get("failures") else ""
        rows.append([
            *[rank_report.rank_text(row, result), f"{row['p_best']:.2f}" if row else "–"] * ranked,
            name,
            *(f"{row['category_ranks'][c]:.2f}" if row else "–" for c in categories),
            f"{fmt(stats.get('mean', math.nan), 2)} {interval(stats.get('mean_ci95'), 2)}",
            *(fmt(result.get(name, math.nan), decimals) for name, (_, decimals) in beside.items()),
            *[fmt_timing(result.get("rtf", math.nan))] * rtf,
            (plural(flagged, "clip") if flagged else "–") + failed,
            highlights.worst_cell_text(result),
        ])
    return fit_rows(rows, None)[0].splitlines()


def verdict_text(results: Sequence[Mapping[str, Any]], view: View) -> str:
    verdicts = highlights.headline_verdicts(results, view)
    if not verdicts:
        return "no baseline ran: nothing is compared"
    verdicts = highlights.by_effect(verdicts)
    better = [unbroken(verdict_item(v)) for v in verdicts if v.verdict == "better"]
    worse = [unbroken(verdict_item(v)) for v in verdicts if v.verdict == "worse"]
    unclear = [unbroken(verdict_item(v)) for v in verdicts if v.verdict == "not distinguishable"]
    text = f"better than {verdicts[0].baseline} (paired Wilcoxon, p < 0.05): {', '.join(better) or 'none'}"
    if worse:
        text += f"; worse: {', '.join(worse)}"
    if unclear:
        text += f"; not distinguishable: {', '.join(unclear)}"
    return text


def computed(value: Any) -> bool:
    return isinstance(value, (int, float)) and not math.isnan(value)


def difference_direction(results: Sequence[Mapping[str, Any]], view: View) -> str:
    """For a lower-is-better headline (--metric wer), what the signed numbers
    in the verdicts mean, so that "speex (-0.01)" reads as an improvement."""
    verdicts = highlights.headline_verdicts(results, view)
    if not verdicts or highlights.headline_direction(results, view) == "higher is better":
        return ""
    return (f"in brackets: the mean {headline_of(results, view)} difference, engine minus {verdicts[0].baseline}, "
            "and its Hodges-Lehmann estimate; lower is better, so a negative one is an improvement")


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


def streaming_lines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """With --block-size: per engine, the p99 time of a block and the blocks
    that missed their deadline (report.md has the full table)."""
    streamed = [r for r in results if r.get("streaming")]
    if not streamed:
        return []
    first = streamed[0]["streaming"]
    rows = [["", "block p99", "deadline misses"]]
    for result in streamed:
        info = result["streaming"]
        if not info["streamable"]:
            rows.append([result["engine"], f"not streamable ({info.get('why', '')}): ran whole clips", ""])
            continue
        rows.append([result["engine"], f"{info['block_ms_p99']:.3f} ms",
                     f"{info['deadline_misses']} of {plural(info['blocks'], 'block')}"])
    title = f"streamed in blocks of {first['block_size']} samples ({first['block_deadline_ms']:g} ms each, its deadline):"
    return [title, *aligned(rows)]


def condition_lines(results: Sequence[Mapping[str, Any]], headline: str) -> list[str]:
    """With --condition: per engine, the headline's mean under each condition
    (the passthrough's: the conditioned input's own score)."""
    with_conditions = [r for r in results if r.get("conditions")]
    if not with_conditions:
        return []
    names = list(dict.fromkeys(row["cell"]["condition"] for r in with_conditions for row in r["conditions"]))
    rows = [["", *names]]
    for result in with_conditions:
        means = {row["cell"]["condition"]: row["metrics"].get(headline, {}).get("mean", math.nan) for row in result["conditions"]}
        rows.append([result["engine"], *(fmt(means.get(name, math.nan), 2) for name in names)])
    return [f"{headline} mean under each input condition:", *aligned(rows)]


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as indented columns, the first left-aligned, the rest right-aligned (numbers)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                             for i, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in rows]


def constant_lag_texts(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """An engine whose output lags the clean voice by one amount on most clips
    is scored against a shifted reference: say so, and how to fix it."""
    texts = []
    for result in results:
        alignment = result.get("alignment", {})
        lag = alignment.get("constant_lag")
        if not lag or alignment.get("compensation"):
            continue
        side = "late" if lag["samples"] > 0 else "early"
        texts.append(
            f"lag: {result['engine']} is {side} by {plural(abs(lag['samples']), 'sample')} at {lag['sample_rate']} Hz on "
            f"{lag['clips']} of {plural(alignment.get('measured_clips', lag['clips']), 'clip')}, so its scores are of a shifted "
            "output: rerun with --align-constant-lag, or declare the delay (a command: engine: --command-delay SAMPLES, "
            "at --command-rate)"
        )
    return texts


NO_BREAK = "\u00a0"  # textwrap breaks at ASCII whitespace only


def unbroken(item: str) -> str:
    """An item ("speex (+2.46)") that a wrapped line keeps whole, if it fits."""
    return item.replace(" ", NO_BREAK)


def wrapped(text: str) -> list[str]:
    lines = textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)
    return [line.replace(NO_BREAK, " ") for line in lines]


def run_notes_lines(results: Sequence[Mapping[str, Any]], covered: Any, not_run: Mapping[str, str],
                    named: Sequence[str]) -> list[str]:
    """Lines after the summary: what the cache served, what else the report
    holds or leaves out (``covered``: nsbench.report.coverage.Coverage), and why the
    run exits 4. Each at most one line of text, wrapped."""
    texts = [coverage.cache_text(results), coverage.coverage_line(covered), failures.incomplete_line(results, not_run, named)]
    return [line for text in texts if text for line in wrapped(text)]
