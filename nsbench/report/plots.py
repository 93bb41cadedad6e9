"""PNG plots of a run, drawn from the same result payloads as the tables.

matplotlib is imported here only, when a run draws plots (``--no-plots``
skips it), and only its Agg canvas is used: no pyplot, no window, no global
state, so it works headless and from worker threads. matplotlib is in the
``[report]`` extra, not the core: without it a run skips the plots and
report.html (its spectrograms need it too) and says so (``drawing_note``).
"""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from nsbench.report.layout import View
from nsbench.report.format import link_text, md
from nsbench.report.tables import headline_of
from nsbench.store import atomic

SNR_KEY = "snr_db"  # the cell key plotted on the x axis when a dataset has it
DPI = 100
# Up to 16 engines, each its own colour (matplotlib's default cycle has 10,
# so an 11th engine repeated the first): its tab10, then six more chosen one by
# one to stay farthest (CIE76) from those before; no two are closer than 27.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#000000", "#a1caf1", "#c2b280", "#008856", "#f99379", "#b3446c")


def colour_of(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


NO_MATPLOTLIB = ("nsbench: no plots and no report.html: they need matplotlib, which is not installed: "
                 "pip install 'nsbench[report]' (or --no-plots --no-html to skip them quietly)")


def can_draw() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_plots(folder: Path, results: Sequence[Mapping[str, Any]], cell_keys: Sequence[str], view: View,
                extra: Sequence[str] = ()) -> list[str]:
    """Writes the plots into ``folder``; returns their file names."""
    if not results:
        return []
    names = []
    if SNR_KEY in cell_keys:
        for metric in plotted_metrics(results, extra, view):
            names.append(save(folder / f"snr_{metric}.png", snr_figure(results, metric)))
    names.append(save(folder / "gain_per_cell.png", gain_figure(results, headline_of(results, view))))
    names.append(save(folder / "rtf.png", rtf_figure(results)))
    return names


def plot_caption(name: str) -> str:
    """What a plot written by write_plots shows, from its file name: the
    caption report.md and report.html put with that plot (and no other)."""
    if name.startswith("snr_"):
        return f"{name.removeprefix('snr_').removesuffix('.png')} against the input SNR: each engine's mean over the clips at each SNR"
    return {
        "gain_per_cell.png": "the headline metric per cell: each engine's mean and its bootstrap 95% CI",
        "rtf.png": "real-time factor per engine: CPU time and wall time over the audio's duration",
    }.get(name, name)


def plots_markdown(names: Sequence[str]) -> str:
    """report.md's plots: each caption is the heading of its own figure, just above it."""
    figures = [f"### Figure {index}: {md(plot_caption(name))}\n\n![{link_text(plot_caption(name))}]({quote(name)})"
               for index, name in enumerate(names, 1)]
    return "## Plots\n\n" + "\n\n".join(figures)


def plotted_metrics(results: Sequence[Mapping[str, Any]], extra: Sequence[str], view: View) -> list[str]:
    # The input's own score is the same line for every engine; timing has its own plot.
    shown = [*view.plotted, *extra]
    return [name for name in shown if any(r["metrics"].get(name, {}).get("n") for r in results)]


def figure(width: float = 7.0, height: float = 4.5):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def save(path: Path, fig) -> str:
    # Put in place whole (nsbench.store.atomic); bbox "tight" grows it to fit long engine names.
    atomic.write_with(path, lambda temporary: fig.savefig(temporary, format="png", bbox_inches="tight"))
    return path.name


def by_snr(result: Mapping[str, Any], metric: str) -> list[tuple[float, float]]:
    """(SNR, mean over the clips at that SNR), pooling the other cell keys by clip count."""
    sums: dict[float, list[float]] = {}
    for row in result["cells"]:
        stats = row["metrics"].get(metric, {})
        try:
            snr = float(row["cell"].get(SNR_KEY, ""))
        except ValueError:  # "clean", "no voice": not on the axis
            continue
        if row.get("pooled") or not stats.get("n"):
            continue
        total = sums.setdefault(snr, [0.0, 0])
        total[0] += stats["mean"] * stats["n"]
        total[1] += stats["n"]
    return sorted((snr, value / count) for snr, (value, count) in sums.items())


def snr_figure(results: Sequence[Mapping[str, Any]], metric: str):
    fig = figure()
    axes = fig.add_subplot()
    for index, result in enumerate(results):
        points = by_snr(result, metric)
        if points:
            axes.plot(*zip(*points), marker="o", label=result["engine"], color=colour_of(index))
    definition = results[0]["metric_definitions"].get(metric, {})
    axes.set(xlabel="input SNR (dB)", ylabel=f"{metric} ({definition.get('unit', '')})", title=f"{metric} against SNR")
    axes.grid(alpha=0.3)
    if axes.lines:
        outside_legend(axes)
    return fig


def gain_figure(results: Sequence[Mapping[str, Any]], metric: str):
    """Cell means of the headline metric with their bootstrap 95% CIs."""
    # Cells where no engine has the metric (music-only, clean voice for SI-SDRi) are left out.
    cells = [row["cell"] for row in results[0]["cells"] if any(
        r2["metrics"].get(metric, {}).get("n") for r in results for r2 in r["cells"] if r2["cell"] == row["cell"])]
    names = [", ".join(str(v) for v in cell.values()) for cell in cells]
    fig = figure(width=min(30.0, 4 + 0.45 * len(cells)), height=5.0)
    axes = fig.add_subplot()
    spread = 0.8 / max(1, len(results))
    single = False
    for index, result in enumerate(results):
        rows = {tuple(row["cell"].items()): row for row in result["cells"]}
        xs, means, low, high = [], [], [], []
        for position, cell in enumerate(cells):
            stats = rows.get(tuple(cell.items()), {}).get("metrics", {}).get(metric, {})
            if stats.get("n") and not math.isnan(stats["mean"]):
                ci = stats.get("mean_ci95") or [math.nan] * 2
                if any(math.isnan(bound) for bound in ci):  # a single clip has no interval: no bar
                    ci = [stats["mean"], stats["mean"]]
                    single = True
                xs.append(position - 0.4 + spread * (index + 0.5))
                means.append(stats["mean"])
                low.append(stats["mean"] - ci[0])
                high.append(ci[1] - stats["mean"])
        if xs:
            axes.errorbar(xs, means, yerr=[low, high], fmt="o", capsize=2, markersize=4, label=result["engine"], color=colour_of(index))
    axes.set_xticks(range(len(cells)), names, rotation=60, ha="right", fontsize="small")
    note = " (no bar: a single clip)" if single else ""
    axes.set(ylabel=metric, title=f"{metric} per cell: mean and bootstrap 95% CI{note}")
    axes.axhline(0, color="grey", linewidth=0.8)
    axes.grid(alpha=0.3, axis="y")
    outside_legend(axes)
    return fig


def outside_legend(axes) -> None:
    """The legend right of the axes, never over a curve (save's tight box grows to hold it)."""
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def rtf_figure(results: Sequence[Mapping[str, Any]]):
    fig = figure(height=1.5 + 0.4 * len(results))
    axes = fig.add_subplot()
    engines = [r["engine"] for r in results]
    positions = range(len(engines))
    axes.barh([p - 0.2 for p in positions], [r["rtf"] for r in results], height=0.4, label="CPU time")
    axes.barh([p + 0.2 for p in positions], [r["rtf_wall"] for r in results], height=0.4, label="wall time")
    axes.set_yticks(list(positions), engines)
    axes.invert_yaxis()
    axes.set(xlabel="real-time factor (processing time / audio duration)", title="Real-time factor per engine")
    axes.grid(alpha=0.3, axis="x")
    axes.legend(fontsize="small")
    return fig
