"""report.md: its sections around the tables (nsbench.report.tables), in order.

The markdown tables and the console table are the same text, built from the
same summaries the JSON holds, so the numbers cannot disagree. Every name a
dataset, plugin or engine gave (and every text an earlier run's file holds)
goes through ``md``, so it reads as text, never as markup.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from nsbench.report import reference_use
from nsbench.plugins.specs import MetricSpec
from nsbench.report.layout import View
from nsbench.report.format import clip_list, clips_count, markdown_row, markdown_table, md
from nsbench.report.tables import baseline_rows, cell_table, pooled_rows, summary_table, worst_rows


def pooled_text(results: Sequence[Mapping[str, Any]]) -> str:
    """What the pooled figures are, naming each pooled metric's own rule."""
    rules = {name: d["pooling"] for r in results for name, d in r.get("metric_definitions", {}).items() if d.get("pooling")}
    named = "; ".join(f"{name}: {rule}" for name, rule in rules.items())
    return (
        f"{named}. Mean and std (population) over every item of the cell's clips, each clip weighing by its items; "
        "these means are the ones in the per-cell table. The clip mean counts each clip once. The 95% CI resamples "
        "clips, with their items: the clips are what was sampled. Comparisons with the baselines stay per clip."
    )


def legend(metrics: Sequence[MetricSpec], view: View, extra: Sequence[str] = ()) -> str:
    shown = {name for name, _, _ in view.table_columns()} | set(extra)
    lines = ["| metric | unit | better | what it ignores |", "| --- | --- | --- | --- |"]
    for metric in metrics:
        if metric.name in shown:
            better = "higher" if metric.higher_is_better else "lower"
            lines.append(markdown_row([f"{metric.name}: {metric.description}", metric.unit, better, metric.ignores]))
    return "\n".join(lines)


def metric_notes_lines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """What metrics said about their values, counted per engine (DNSMOS's looped
    clips, the wer reference); nothing when no metric said anything."""
    lines = []
    for result in results:
        for name, counts in result.get("metric_notes", {}).items():
            told = ", ".join(f"{md(note)} on {clips_count(count)}" for note, count in sorted(counts.items()))
            lines.append(f"- {md(result['engine'])}: {md(name)}: {told}")
    return ["Notes the metrics made on the clips:\n\n" + "\n".join(lines)] if lines else []


def engine_line(result: Mapping[str, Any]) -> str:
    info = result["engine_info"]
    delays = "; ".join(f"{md(delay)} on {count} clips" for delay, count in info["delays_removed"].items()) or "none"
    oracle = " ORACLE: uses the clean reference, an upper bound, not an engine." if info["oracle"] else ""
    notes = "".join(f" {md(note)}." for note in info["notes"])
    return f"- {md(result['engine'])} {md(info['version'])} ({md(info['origin'])}): delay removed {delays}.{notes}{oracle}"


def compensation_text(alignment: Mapping[str, Any]) -> str:
    """Plain text (report.md escapes it, report.html too)."""
    done = alignment.get("compensation")
    if not done:
        return ""
    return (
        f" Constant lag compensated (--align-constant-lag): a first pass found {done['first_pass']['text']} "
        f"(measured on {done['first_pass']['measured_clips']} clips); the harness then removed "
        f"{done['samples']} more samples at {done['sample_rate']} Hz and re-ran the engine: every number here is from that second run."
    )


def checks_lines(result: Mapping[str, Any]) -> list[str]:
    """Alignment and degenerate-output flags of one engine, naming the clips."""
    alignment = result.get("alignment", {})
    lines = [f"- **{md(result['engine'])}**: {md(alignment.get('text', '–'))}.{md(compensation_text(alignment))}"]
    for name, flag in result.get("flags", {}).items():
        lines.append(f"  - FLAG {md(name)}: {md(flag['description'])}; {md(clip_list(flag['clips']))}")
    for name, flag in result.get("expected_flags", {}).items():
        lines.append(f"  - {md(name)}, expected ({md(flag['expected'])}): {clips_count(len(flag['clips']))}")
    if not result.get("flags"):
        lines.append("  - no degenerate output")
    return lines


def baselines_text(results: Sequence[Mapping[str, Any]]) -> str:
    """How the comparisons are made, and which baseline did not run (so is not compared with). Plain text."""
    ran = {r["engine"] for r in results}
    # Each engine's info names the baselines it is compared with (the specs that say ``baseline``).
    named = dict.fromkeys(name for r in results for name in r.get("engine_info", {}).get("compared_with", ()))
    missing = [name for name in named if name not in ran]
    text = (
        "Paired per clip, Wilcoxon signed-rank at 5%; \"not distinguishable\" where the difference is not significant, "
        "rather than a ranking. A cell of fewer than 6 clips can never be significant. The verdict follows the "
        "Hodges-Lehmann estimate (the median of the Walsh averages of the differences), shown with the test's 95% "
        "interval: exact for up to 50 clips without equal differences, else the normal approximation; it excludes 0 "
        "exactly when p < 0.05, unless a zero difference or two of equal size and opposite sign sit at 0."
    )
    if missing:
        text += f" Not run, so not compared with: {', '.join(missing)} (add {' '.join(f'--engine {name}' for name in missing)})."
    return text


def pooled_section(results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str]) -> list[str]:
    table = pooled_rows(results, cell_keys)
    if not table[1]:
        return []
    return ["## Pooled over items", md(pooled_text(results)), markdown_table(table)]


def report_markdown(
    dataset: str,
    results: Sequence[Mapping[str, Any]],
    cell_keys: Sequence[str],
    metrics: Sequence[MetricSpec],
    not_run: Mapping[str, str],
    extra_columns: Sequence[str] = (),
    jobs: int = 1,
    sections: Sequence[str] = (),
    top: Sequence[str] = (),
    paper: Sequence[str] = (),
    lead: Sequence[str] = (),
    *,
    view: View,
) -> str:
    """``lead``: what the report opens with (the ranking, nsbench.report.rank_report);
    ``sections``: more markdown (plots, a comparison with stored results) before the legend;
    ``top``: paragraphs after the introduction (each engine's worst input condition);
    ``paper``: the papers' tables (nsbench.report.paper_table), after the summary;
    ``view``: where the specs place engines and metrics (nsbench.report.layout)."""
    ordered = view.reference_first(results)
    parts = [
        f"# nsbench report: {md(dataset)}",
        *lead,
        "Cell means. "
        # Only about the metrics that ran: a run without references computes no SI-SDR.
        + ("SI-SDR is computed without mean removal (torchmetrics zero_mean=False); si_sdr_zm in the JSON is the "
           "zero-mean convention. " if reference_use.intrusive_scored(results) else "")
        + "RTF is CPU time (process and "
        "children) over audio duration, resampling included, model loading excluded; "
        f"{jobs} worker process{'es' if jobs > 1 else ''} shared the machine's cores, which inflates wall-clock RTF.",
        *top,
        "## Per engine: mean and worst cell",
        summary_table(ordered, view),
        *paper,
        "## Checks: alignment and degenerate output",
        "\n".join(line for result in ordered for line in checks_lines(result)),
        "## Against the baselines",
        md(baselines_text(ordered)),
        markdown_table(baseline_rows(ordered)) if any(r.get("comparisons") for r in ordered) else "No baseline ran.",
        "## Worst clips",
        markdown_table(worst_rows(ordered)),
        "## Per cell",
        cell_table(ordered, cell_keys, view, extra_columns),
        *pooled_section(ordered, cell_keys),
        *sections,
        "## Metrics",
        legend(metrics, view, extra_columns),
        *metric_notes_lines(ordered),
    ]
    parts += ["## Engines", *(engine_line(r) for r in ordered)]
    if not_run:
        parts += ["## Engines that did not run", *(f"- {md(name)}: {md(why)}" for name, why in not_run.items())]
    if dataset_attribution(results):
        parts += ["## Audio sources", md(dataset_attribution(results))]
    return "\n\n".join(parts) + "\n"


def dataset_attribution(results: Sequence[Mapping[str, Any]]) -> str:
    """The credits a dataset asks for (its description's ``attribution``), or "". Plain text."""
    descriptions = (r.get("dataset_description") or {} for r in results)
    return next((d["attribution"] for d in descriptions if d.get("attribution")), "")
