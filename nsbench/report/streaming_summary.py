"""``--block-size`` in the results: the ``streaming`` entry of each
``<engine>.json`` (block times, deadline misses, delays, how far the streamed
output is from the whole-clip one) and the streaming table of report.md and
report.html. The streaming itself is nsbench.run.streaming.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from nsbench.config import Blocks
from nsbench.record_terms import IDENTICAL
from nsbench.report.format import markdown_table, md
from nsbench.report.tables import fmt_timing  # the RTF reads as the summary's (never 0.000)
from nsbench.text import plural
from nsbench.plugins.records import ClipRecord
from nsbench.report.record_table import RecordTable


def percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def engine_summary(records: RecordTable | Iterable[ClipRecord]) -> dict[str, Any] | None:
    """The ``streaming`` entry of ``<engine>.json``; None without --block-size.
    From a RecordTable, the streamed clips' records are reread (their block
    times are not held): only with --block-size."""
    if isinstance(records, RecordTable):
        records = records.records(np.flatnonzero(records.column("streamed") & ~records.column("failed")))
    ran = [r for r in records if r.streaming and not r.failed]
    if not ran:
        return None
    streamed = [r.streaming for r in ran if r.streaming.get("streamable")]
    sizes = sorted({r.streaming["block_size"] for r in ran})
    if not streamed:
        return {"streamable": False, "block_size": one_or_all(sizes), "clips": len(ran), "why": ran[0].streaming["why"]}
    times = np.concatenate([np.asarray(s["block_ms"], dtype=np.float64) for s in streamed])
    cpu_times = np.concatenate([np.asarray(s["block_cpu_ms"], dtype=np.float64) for s in streamed])
    misses = sum(int(np.count_nonzero(np.asarray(s["block_ms"]) > s["deadline_ms"])) for s in streamed)
    return {
        "streamable": True,
        "block_size": one_or_all(sizes),
        "block_deadline_ms": one_or_all(sorted({round(s["deadline_ms"], 6) for s in streamed})),
        "clips": len(streamed),
        "whole_clips": len(ran) - len(streamed),
        "blocks": int(times.size),
        "block_ms_p50": percentile(times, 50),
        "block_ms_p99": percentile(times, 99),
        "block_ms_max": float(times.max()) if times.size else math.nan,
        "block_cpu_ms_p50": percentile(cpu_times, 50),
        "block_cpu_ms_p99": percentile(cpu_times, 99),
        "deadline_misses": misses,
        "declared_delay_ms": max(s["declared_delay_ms"] for s in streamed),
        "buffering_ms": max(s["buffering_ms"] for s in streamed),
        "algorithmic_delay_ms": max(s["declared_delay_ms"] + s["buffering_ms"] for s in streamed),
        "resampler_delay_ms": max(s["resampler_delay_ms"] for s in streamed),
        "versus_whole": whole_summary(ran),
    }


def one_or_all(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else values


def whole_summary(records: Iterable[ClipRecord]) -> dict[str, Any]:
    """How far the streamed outputs are from the whole-clip ones, and what the
    whole-clip outputs cost (those not in the cache were computed)."""
    compared = [(r.clip_id, r.streaming.get("versus_whole")) for r in records if r.streaming.get("streamable")]
    differing = [(clip, value) for clip, value in compared if isinstance(value, float)]
    missing = [clip for clip, value in compared if not isinstance(value, float) and value != IDENTICAL]
    worst = min(differing, key=lambda item: item[1]) if differing else None
    costs = [r.streaming.get("whole_seconds", 0.0) for r in records if r.streaming.get("whole_from") == "computed"]
    summary = {
        "clips": len(compared),
        "identical": len(compared) - len(differing) - len(missing),
        "si_sdr_db_min": worst[1] if worst else None,
        "worst_clip": worst[0] if worst else None,
        "not_compared": missing,
        "whole_runs_computed": len(costs),
        "whole_runs_seconds": sum(costs),
    }
    summary["text"] = whole_text(summary)
    return summary


def whole_text(summary: Mapping[str, Any]) -> str:
    if summary["si_sdr_db_min"] is None and not summary["not_compared"]:
        return IDENTICAL
    parts = []
    if summary["si_sdr_db_min"] is not None:
        parts.append(f"differs on {summary['clips'] - summary['identical'] - len(summary['not_compared'])} of "
                     f"{summary['clips']} clips, SI-SDR vs whole ≥ {summary['si_sdr_db_min']:.1f} dB "
                     f"(worst: {summary['worst_clip']})")
    if summary["not_compared"]:
        parts.append(f"not compared on {plural(len(summary['not_compared']), 'clip')} (whole-clip run failed)")
    return "; ".join(parts)


def report_section(results: Sequence[Mapping[str, Any]], blocks: Blocks, jobs: int) -> str:
    """report.md's streaming table: the block times beside RTF."""
    return "\n\n".join(["## Streaming: block by block", md(report_text(results, blocks, jobs)), markdown_table(report_rows(results))])


def report_rows(results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The streaming table's header and rows, for report.md and report.html alike."""
    header = ["engine", "streamed", "block", "RTF (CPU)", "block p50 ms", "block p99 ms", "block max ms",
              "deadline misses", "block CPU p50 / p99 ms", "algorithmic delay ms", "resampler delay ms", "vs whole clip"]
    rows = []
    for result in results:
        info = result.get("streaming")
        if info is None:
            continue
        if not info["streamable"]:
            rows.append([result["engine"], f"no: {info['why']}; ran whole clips", str(info["block_size"]),
                         fmt_timing(result['rtf']), *["–"] * 8])
            continue
        rows.append([
            result["engine"], "yes", f"{info['block_size']} ({info['block_deadline_ms']} ms)", fmt_timing(result['rtf']),
            f"{info['block_ms_p50']:.3f}", f"{info['block_ms_p99']:.3f}", f"{info['block_ms_max']:.3f}",
            f"{info['deadline_misses']} of {info['blocks']}",
            f"{info['block_cpu_ms_p50']:.3f} / {info['block_cpu_ms_p99']:.3f}",
            f"{info['algorithmic_delay_ms']:.1f} ({info['declared_delay_ms']:.1f} declared)",
            f"{info['resampler_delay_ms']:.1f}", info["versus_whole"]["text"],
        ])
    return header, rows


def report_text(results: Sequence[Mapping[str, Any]], blocks: Blocks, jobs: int) -> str:
    """What the streaming table's figures are, and what the comparison with whole clips cost."""
    costs = [r["streaming"]["versus_whole"] for r in results if (r.get("streaming") or {}).get("streamable")]
    computed = sum(c["whole_runs_computed"] for c in costs)
    cost = (f" {computed} whole-clip runs were computed for the comparison ({sum(c['whole_runs_seconds'] for c in costs):.2f} s); "
            "the rest came from the cache." if computed else " The whole-clip outputs came from the cache.")
    text = (f"{blocks.flag}, samples at the clip's rate. A block's time is the harness's whole step for it "
            "(resampling in, the engine's call, resampling out); a deadline miss is a block that took longer than it lasts. "
            "Algorithmic delay: the declared delay plus the most input the engine's stream held back; the harness's "
            "streaming resamplers add their own, shown apart. Times are wall-clock, on a machine shared with "
            f"{jobs} worker process(es)." + cost)
    return text


def only_unstreamable_line(results: Sequence[Mapping[str, Any]], baselines: Sequence[str], blocks: Blocks) -> str | None:
    """One line when every engine the user ran (the baselines aside) ran whole."""
    engines = [r for r in results if r["engine"] not in baselines and r.get("streaming")]
    if not engines or any(r["streaming"]["streamable"] for r in engines):
        return None
    names = ", ".join(r["engine"] for r in engines)
    return f"{blocks.flag}: none of the engines run can stream ({names}); they ran whole clips, marked so in the results"
