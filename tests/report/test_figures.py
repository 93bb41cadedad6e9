"""report.md's and report.html's figures on a real run (speex and an oracle,
3 demo clips): each plot's caption is with its own figure, and the heatmap's
colour scale is set by the engines, not by the oracle's upper bound."""
from __future__ import annotations

import html
import json
import re

import pytest

from nsbench.cli import main
from nsbench.report.plots import plot_caption

ENGINE_BLUE = "rgb(33, 102, 172)"  # html_report.heat_cell's full colour for "better"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    results = tmp_path_factory.mktemp("figures")
    argv = ["--engine", "speex", "--engine", "oracle-irm", "--limit", "3", "--metric", "si_sdri", "--quiet",
            "--results-folder", str(results)]
    assert main(argv) == 0
    return results / "demo"


def test_each_plot_caption_heads_its_own_figure_in_report_md(run_folder):
    report = (run_folder / "report.md").read_text()
    plots = report.split("## Plots\n\n", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", plots)
    assert names == ["snr_si_sdri.png", "gain_per_cell.png", "rtf.png"]
    blocks = plots.strip().split("\n\n")
    # Heading, then its image: a caption never stands alone between two images.
    for index, name in enumerate(names):
        heading, picture = blocks[2 * index], blocks[2 * index + 1]
        assert heading == f"### Figure {index + 1}: {plot_caption(name)}"
        assert picture == f"![{plot_caption(name)}]({name})"
    assert "gain_per_cell" not in plot_caption("gain_per_cell.png")  # a caption says what is shown, not the file name


def test_each_plot_caption_is_inside_its_own_figure_in_report_html(run_folder):
    page = (run_folder / "report.html").read_text()
    figures = re.findall(r'<figure class="plot">(.*?)</figure>', page)
    assert len(figures) == 3
    for index, (figure, name) in enumerate(zip(figures, ["snr_si_sdri.png", "gain_per_cell.png", "rtf.png"]), 1):
        caption = re.fullmatch(r"<figcaption>(.*?)</figcaption><img [^>]*>", figure)
        assert caption, figure[:200]
        assert html.unescape(caption[1]) == f"Figure {index}: {plot_caption(name)} <code>{name}</code>"
    assert "figure.plot { border" in page  # framed: the caption's figure is the one it sits in


def heat_rows(page: str) -> dict[str, list[tuple[str, str]]]:
    """engine -> [(background, text)] per heatmap cell."""
    heatmap = page.split('<table id="heatmap">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr[^>]*data-engine="([^"]+)">(.*?)</tr>', heatmap)
    return {engine: re.findall(r'style="background:(rgb\([^)]*\)|#eee)[^"]*">([^<]*)</td>', cells) for engine, cells in rows}


def test_the_heatmap_scale_is_set_by_the_engines_and_the_oracle_is_marked_apart(run_folder):
    page = (run_folder / "report.html").read_text()
    results = {r["engine"]: r for r in (json.loads(p.read_text()) for p in run_folder.glob("*.json") if p.name != "ranking.json")}
    speex = [row["metrics"]["si_sdri"]["mean"] for row in results["speex"]["cells"]]
    oracle = [row["metrics"]["si_sdri"]["mean"] for row in results["oracle-irm"]["cells"]]
    assert max(map(abs, oracle)) > 1.5 * max(map(abs, speex))  # the case this guards: an oracle far above the engines
    assert f"full colour at a difference of &plusmn;{max(map(abs, speex)):.2f}, set by the engines" in page
    rows = heat_rows(page)
    best = max(speex, key=abs)
    colours = dict((text, colour) for colour, text in rows["speex"])
    assert best > 0 and colours[f"{best:.2f}"] == ENGINE_BLUE  # the best engine cell in full colour, not pale
    assert {colour for colour, _ in rows["oracle-irm"]} == {ENGINE_BLUE}  # beyond the scale: full colour
    assert re.search(r'<tr class="oracle-row" data-engine="oracle-irm">', page)
    assert "tr.oracle-row th, tr.oracle-row td { border-top: 2px dashed" in page
