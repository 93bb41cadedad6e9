"""What to look at first, read from the results (``<engine>.json`` payloads):
which engines beat a baseline with significance, which were flagged and why,
each engine's worst cell. The terminal summary and the top of report.html both
say these, from these functions, so the two cannot disagree.

Everything is read generically (cells by their keys, metrics by name), so cell
keys or metrics that other plugins add show up without changes here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nsbench.report.layout import View
from nsbench.report.tables import headline_higher_is_better, headline_of


@dataclass(frozen=True)
class Verdict:
    engine: str
    baseline: str
    verdict: str  # better, worse, not distinguishable, no paired clips
    mean_difference: float
    p_value: float
    n: int
    hodges_lehmann: float = math.nan  # the estimate the verdict follows
    hl_ci95: tuple[float, float] = (math.nan, math.nan)


def ordered(results: Sequence[Mapping[str, Any]], view: View) -> list[Mapping[str, Any]]:
    """The engine that passes its input through first, then the run's order: every table's order."""
    return view.reference_first(results)


def is_oracle(result: Mapping[str, Any]) -> bool:
    return bool(result.get("engine_info", {}).get("oracle"))


def headline_unit(results: Sequence[Mapping[str, Any]], headline: str) -> str:
    return next((r["metric_definitions"][headline]["unit"] for r in results if headline in r.get("metric_definitions", {})), "")


def headline_verdicts(results: Sequence[Mapping[str, Any]], view: View, baseline: str = "") -> list[Verdict]:
    """Each engine against ``baseline`` (by default the engine that passes its
    input through) on the headline metric, over all clips."""
    baseline = baseline or view.reference_engine()
    headline = headline_of(results, view)
    verdicts = []
    for result in results:
        compared = result.get("comparisons", {}).get(baseline, {}).get(headline)
        if not compared:
            continue
        overall = compared["all"]
        verdicts.append(Verdict(result["engine"], baseline, overall["verdict"], overall["mean_difference"],
                                overall["p_value"], overall["n"], overall.get("hodges_lehmann", math.nan),
                                tuple(overall.get("hl_ci95") or (math.nan, math.nan))))
    return verdicts


def by_effect(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Largest effect first: the Hodges-Lehmann estimate the verdict follows (the mean where it has none)."""
    def size(verdict: Verdict) -> float:
        effect = verdict.hodges_lehmann if math.isfinite(verdict.hodges_lehmann) else verdict.mean_difference
        return -abs(effect) if math.isfinite(effect) else 0.0
    return sorted(verdicts, key=size)


def flagged_clips(result: Mapping[str, Any]) -> int:
    """Clips with at least one unexpected flag (a clip with two flags counts once)."""
    return len({clip for flag in result.get("flags", {}).values() for clip in flag["clips"]})


def flag_counts(result: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """(flag, clips, what it means) per unexpected flag."""
    return [(name, len(flag["clips"]), flag["description"]) for name, flag in result.get("flags", {}).items()]


def cell_name(cell: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in cell.items()) or "all"


def worst_cell_text(result: Mapping[str, Any], decimals: int = 2) -> str:
    """'noise=babble, snr_db=-5 (-3.10)', or '–' when the headline was never scored."""
    worst = result.get("worst_cell")
    if not worst:
        return "–"
    mean = worst.get("mean", math.nan)
    value = "–" if mean is None or math.isnan(mean) else f"{mean:.{decimals}f}"
    return f"{cell_name(worst.get('cell', {}))} ({value})"


def headline_direction(results: Sequence[Mapping[str, Any]], view: View) -> str:
    return "higher is better" if headline_higher_is_better(results, headline_of(results, view)) else "lower is better"
