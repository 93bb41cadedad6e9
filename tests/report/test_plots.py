"""The PNG plots draw the numbers of the result payloads: SNR curves pool
cells by clip count, the gain plot's bars are the cells' bootstrap CIs."""
from __future__ import annotations

import math


from nsbench.report.plots import by_snr, gain_figure, rtf_figure, snr_figure, write_plots

DEFINITIONS = {"si_sdri": {"unit": "dB", "higher_is_better": True}}


def stats(mean: float, n: int, ci: list[float] | None = None) -> dict:
    return {"n": n, "mean": mean, "mean_ci95": ci if ci is not None else [mean - 1.0, mean + 0.5]}


def result(engine: str, cells: list[tuple[str, str, dict]], rtf: float = 0.1) -> dict:
    rows = [{"cell": {"noise": noise, "snr_db": snr}, "metrics": {"si_sdri": s} if s else {}} for noise, snr, s in cells]
    return {"engine": engine, "cells": rows, "metrics": {"si_sdri": {"n": 1}}, "metric_definitions": DEFINITIONS,
            "worst_cell": {"metric": "si_sdri"}, "rtf": rtf, "rtf_wall": 2 * rtf}


ENGINE = result("e", [("white", "0", stats(2.0, 1)), ("pink", "0", stats(5.0, 3)), ("white", "5", stats(4.0, 2)),
                      ("clean", "clean", stats(9.0, 4)), ("music", "0", {})])
BASELINE = result("passthrough", [("white", "0", stats(0.0, 1)), ("pink", "0", stats(0.0, 3)), ("white", "5", stats(0.0, 2)),
                                  ("clean", "clean", stats(0.0, 4)), ("music", "0", {})], rtf=0.001)


def test_snr_curves_pool_the_cells_at_each_snr_by_clip_count():
    # SNR 0: (2*1 + 5*3) / 4; the "clean" cell is not on the axis, the music cell has no value.
    assert by_snr(ENGINE, "si_sdri") == [(0.0, 17 / 4), (5.0, 4.0)]
    fig = snr_figure([BASELINE, ENGINE], "si_sdri")
    lines = {line.get_label(): list(zip(*line.get_data())) for line in fig.axes[0].lines}
    assert lines == {"passthrough": [(0.0, 0.0), (5.0, 0.0)], "e": [(0.0, 17 / 4), (5.0, 4.0)]}


def bars(fig) -> dict[str, list[tuple[float, float, float]]]:
    """engine -> (mean, low, high) per drawn point, from the error bars."""
    drawn = {}
    for container in fig.axes[0].containers:
        line, _, (segments,) = container.lines
        ys = line.get_ydata()
        drawn[container.get_label()] = [(y, s[0][1], s[1][1]) for y, s in zip(ys, segments.get_segments())]
    return drawn


def test_gain_bars_are_the_cells_confidence_intervals_and_empty_cells_are_left_out():
    fig = gain_figure([BASELINE, ENGINE], "si_sdri")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["white, 0", "pink, 0", "white, 5", "clean, clean"]  # the music cell has no si_sdri
    assert bars(fig)["e"] == [(2.0, 1.0, 2.5), (5.0, 4.0, 5.5), (4.0, 3.0, 4.5), (9.0, 8.0, 9.5)]


def test_a_single_clip_has_no_bar_and_the_title_says_so():
    single = result("e", [("white", "0", stats(2.0, 1, [math.nan, math.nan])), ("pink", "0", stats(5.0, 3))])
    fig = gain_figure([single], "si_sdri")
    assert bars(fig)["e"] == [(2.0, 2.0, 2.0), (5.0, 4.0, 5.5)]
    assert "no bar: a single clip" in fig.axes[0].get_title()
    assert "single clip" not in gain_figure([ENGINE], "si_sdri").axes[0].get_title()


def test_rtf_bars_and_the_files_written(tmp_path, view):
    fig = rtf_figure([BASELINE, ENGINE])
    widths = sorted(round(patch.get_width(), 6) for patch in fig.axes[0].patches)
    assert widths == [0.001, 0.002, 0.1, 0.2]
    names = write_plots(tmp_path, [BASELINE, ENGINE], ["noise", "snr_db"], view)
    assert names == ["snr_si_sdri.png", "gain_per_cell.png", "rtf.png"]
    assert all((tmp_path / name).read_bytes().startswith(b"\x89PNG") for name in names)
    # No snr_db cell key: no SNR plot.
    assert write_plots(tmp_path, [ENGINE], ["noise"], view) == ["gain_per_cell.png", "rtf.png"]
