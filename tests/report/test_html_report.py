"""report.html in a real headless browser: Debian's chromium, driven by
selenium through Debian's chromium-driver, reading the report over http from
127.0.0.1 as a person would open it. One small run is shared by every test."""
from __future__ import annotations

import functools
import http.server
import json
import shutil
import tempfile
import threading
from urllib.parse import unquote
from pathlib import Path

import pytest
import soundfile

from nsbench.cli import main
from nsbench.report.format import fmt

from tests.helpers.audio import make_folder_dataset
from tests.cli.test_cli import EXAMPLE_PLUGIN

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
INSTALL = "apt-get install -y chromium chromium-driver, and pip install -r requirements-test.txt (selenium)"
# As root, in a container, with no network to reach: no sandbox, no GPU, no background traffic.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",  # so a script may call play()
]


def browser_missing() -> str:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return f"the browser test needs selenium: {INSTALL}"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"the browser test needs {path}: {INSTALL}"
    return ""


pytestmark = pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "browser present")


@pytest.fixture(scope="module")
def report_folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    data = make_folder_dataset(tmp / "set", count=3)
    for role in ("noisy", "clean"):  # a name that must be quoted in a URL
        (data / role / "utt2.wav").rename(data / role / "utt 2#b.wav")
    argv = ["--dataset", "folder", "--data-folder", str(data), "--plugin", EXAMPLE_PLUGIN, "--engine", "spectral-subtraction",
            "--jobs", "1", "--quiet", "--results-folder", str(tmp / "results"),
            "--metric", "si_sdr_input", "--metric", "si_sdr", "--metric", "si_sdri", "--metric", "stoi", "--metric", "voice_level_db"]
    assert main(argv) == 0
    return tmp / "results" / "folder"


@pytest.fixture(scope="module")
def served(report_folder):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(report_folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/report.html"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def page(served):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="nsbench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_script_timeout(30)
        driver.get(served)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def table(page, table_id: str) -> list[dict[str, str]]:
    header, *rows = page.execute_script(
        f"return Array.from(document.querySelectorAll('#{table_id} tr')).map(tr => Array.from(tr.cells).map(c => c.textContent))"
    )
    return [dict(zip(header, row)) for row in rows]


def results(folder: Path) -> dict[str, dict]:
    return {r["engine"]: r for r in (json.loads(p.read_text()) for p in folder.glob("*.json")) if "engine" in r}


def test_the_page_loads_without_console_errors(page):
    assert page.title == "nsbench: folder"
    errors = [entry for entry in page.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def test_the_tables_show_the_numbers_in_the_json(page, report_folder, view):
    stored = results(report_folder)
    cells = table(page, "cells")
    checked = 0
    for row in cells:
        cell = next(c for c in stored[row["engine"]]["cells"] if c["cell"]["set"] == row["set"])
        assert row["n"] == str(cell["clips"])
        for name, title, decimals in view.table_columns():
            if title in row:
                assert row[title] == fmt(cell["metrics"][name]["mean"], decimals), (row["engine"], title)
                checked += row[title] != "–"
    assert len(cells) == 2 and checked >= 10
    summary = {row["engine"]: row for row in table(page, "summary")}
    for engine, result in stored.items():
        stats = result["metrics"]["si_sdri"]
        assert summary[engine]["si_sdri mean"] == fmt(stats["mean"], 2)
        assert summary[engine]["95% CI"] == f"[{fmt(stats['mean_ci95'][0], 2)}, {fmt(stats['mean_ci95'][1], 2)}]"
        assert summary[engine]["alignment"] == result["alignment"]["text"]
    verdicts = table(page, "baselines")
    assert [(r["engine"], r["against"], r["metric"]) for r in verdicts] == [
        ("spectral-subtraction", "passthrough", "si_sdri"), ("spectral-subtraction", "passthrough", "stoi")]
    comparison = stored["spectral-subtraction"]["comparisons"]["passthrough"]["si_sdri"]["all"]
    assert verdicts[0]["verdict"] == comparison["verdict"] and verdicts[0]["paired clips"] == "3"


def grid(page) -> list[dict[str, object]]:
    """Per grid row: its clip, and per column (engine, or the input and reference) its audio, image and text."""
    return page.execute_script(
        """
        return Array.from(document.querySelectorAll('#grid tbody tr')).map(tr => ({
            clip: tr.dataset.clip,
            engines: Array.from(tr.querySelectorAll('td[data-engine]')).map(td => td.dataset.engine),
            audio: Array.from(tr.querySelectorAll('audio')).map(a => a.getAttribute('src')),
            text: Array.from(tr.querySelectorAll('td[data-engine]')).map(td => td.textContent),
        }));
        """
    )


def test_the_grid_holds_every_engine_of_the_run_for_each_of_its_clips(page, report_folder):
    stored = results(report_folder)
    rows = grid(page)
    assert len(rows) == 3  # every clip of this 3-clip set: at least four where there are four
    for row in rows:
        assert row["engines"] == ["passthrough", "spectral-subtraction"], row["clip"]
        assert len(row["audio"]) == 2 + 2
        score = next(r["scores"]["si_sdri"] for r in clip_records(report_folder, "spectral-subtraction") if r["clip_id"] == row["clip"])
        assert f"si_sdri (dB) {fmt(score, 2)}" in row["text"][1]
        assert "identical_to_input" not in row["text"][0]  # the passthrough's own definition is not a flag
    reasons = page.execute_script("return document.querySelector('#grid tbody tr').cells[0].textContent")
    worst = stored["spectral-subtraction"]["worst_clips"][0]
    assert rows[0]["clip"] == worst["clip_id"] and "worst of spectral-subtraction" in reasons


def clip_records(folder: Path, engine: str) -> list[dict]:
    return [json.loads(line) for line in (folder / f"{engine}.clips.jsonl").read_text().splitlines()]


def test_every_audio_player_has_a_file_with_a_duration(page, report_folder):
    players = page.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const audios = Array.from(document.querySelectorAll('audio'));
        Promise.all(audios.map(a => a.readyState >= 1 ? null : new Promise((resolve, reject) => {
            a.addEventListener('loadedmetadata', resolve, {once: true});
            a.addEventListener('error', () => resolve(), {once: true});
            a.load();
        }))).then(() => done(audios.map(a => [a.getAttribute('src'), a.duration, a.error ? a.error.code : 0])));
        """
    )
    # 3 grid rows, each with the noisy input, the clean reference and 2 engines' outputs.
    assert len(players) == 3 * 4
    for src, duration, error in players:
        assert (report_folder / unquote(src)).is_file() and error == 0 and duration == pytest.approx(2.0, abs=0.01), src
    assert {src.split("/")[1] for src, _, _ in players} == {"_input", "_clean", "passthrough", "spectral-subtraction"}
    # The folder holds the grid's audio and nothing else, as 16-bit WAV.
    on_disk = {str(path.relative_to(report_folder)) for path in (report_folder / "audio").rglob("*.wav")}
    assert on_disk == {unquote(src) for src, _, _ in players}
    assert {soundfile.info(str(report_folder / path)).subtype for path in on_disk} == {"PCM_16"}


def test_one_audio_element_plays(page):
    played = page.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const audio = document.querySelector('#grid audio');
        audio.muted = true;
        audio.play().then(() => {
            const start = performance.now();
            const poll = () => audio.currentTime > 0.1 || performance.now() - start > 10000
                ? (audio.pause(), done([audio.currentTime, audio.error ? audio.error.code : 0])) : setTimeout(poll, 50);
            poll();
        }, error => done([-1, String(error)]));
        """
    )
    assert played[0] > 0.1 and played[1] == 0, played


def test_every_spectrogram_has_decoded(page, report_folder):
    images = page.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const images = Array.from(document.querySelectorAll('#grid img'));
        Promise.all(images.map(i => i.decode().catch(() => null)))
            .then(() => done(images.map(i => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight])));
        """
    )
    assert len(images) == 3 * 4
    for src, width, height in images:
        assert (width, height) == (240, 120), src
        assert (report_folder / unquote(src)).stat().st_size < 40_000  # small PNGs


def visible_rows(page, table_id: str) -> list[list[str]]:
    return page.execute_script(
        f"return Array.from(document.querySelectorAll('#{table_id} tbody tr')).filter(tr => !tr.hidden)"
        ".map(tr => Array.from(tr.cells).map(c => c.textContent))"
    )


def test_clicking_a_header_sorts_the_rows(page):
    from selenium.webdriver.common.by import By

    column = visible_rows_header(page, "cells").index("SI-SDRi")
    before = visible_rows(page, "cells")
    values = [float(row[column]) for row in before]
    assert len(set(values)) > 1
    header = page.find_elements(By.CSS_SELECTOR, "#cells thead th")[column]
    header.click()
    assert [float(row[column]) for row in visible_rows(page, "cells")] == sorted(values)
    header.click()
    after = visible_rows(page, "cells")
    assert [float(row[column]) for row in after] == sorted(values, reverse=True)
    assert after != before and sorted(after) == sorted(before)  # the same rows, reordered
    assert header.get_attribute("aria-sort") == "descending"


def visible_rows_header(page, table_id: str) -> list[str]:
    return page.execute_script(f"return Array.from(document.querySelectorAll('#{table_id} thead th')).map(th => th.textContent)")


def test_the_filter_box_hides_rows(page):
    from selenium.webdriver.common.by import By

    box = page.find_element(By.CSS_SELECTOR, 'input.filter[data-table="cells"]')
    every = visible_rows(page, "cells")
    engine = visible_rows_header(page, "cells").index("engine")
    for text, expected in (("passthrough", {"passthrough"}), ("engine=spectral-subtraction", {"spectral-subtraction"})):
        box.clear()
        box.send_keys(text)
        shown = visible_rows(page, "cells")
        assert {row[engine] for row in shown} == expected and len(shown) == len(every) // 2
    box.clear()
    box.send_keys("no such cell")
    assert visible_rows(page, "cells") == []
    box.clear()
    box.send_keys(" ")
    assert len(visible_rows(page, "cells")) == len(every)


def test_the_top_says_what_to_look_at_and_the_heatmap_centres_on_the_baseline(page, report_folder):
    stored = results(report_folder)
    verdict = stored["spectral-subtraction"]["comparisons"]["passthrough"]["si_sdri"]["all"]
    top = page.execute_script("return document.getElementById('highlights').textContent")
    words = {"better": "Better than", "worse": "Worse than", "not distinguishable": "Not distinguishable from"}[verdict["verdict"]]
    assert f"{words} passthrough on si_sdri" in top and f"{verdict['mean_difference']:+.2f} dB" in top
    worst = stored["spectral-subtraction"]["worst_cell"]
    assert f"set={worst['cell']['set']} ({fmt(worst['mean'], 2)})" in top
    heat = page.execute_script(
        "return Array.from(document.querySelectorAll('#heatmap tbody tr')).map(tr => [tr.dataset.engine,"
        " Array.from(tr.querySelectorAll('td')).map(td => [td.textContent, getComputedStyle(td).backgroundColor])])"
    )
    rows = dict(heat)
    assert [text for text, _ in rows["passthrough"]] == ["0.00"] * len(stored["passthrough"]["cells"])
    assert {colour for _, colour in rows["passthrough"]} == {"rgb(255, 255, 255)"}
    for (text, colour), cell in zip(rows["spectral-subtraction"], stored["spectral-subtraction"]["cells"]):
        assert text == fmt(cell["metrics"]["si_sdri"]["mean"], 2)
        red, green, blue = (int(c) for c in colour[4:-1].split(","))
        assert (blue > red) == (cell["metrics"]["si_sdri"]["mean"] > 0)


def test_nothing_is_fetched_from_the_network(page):
    addresses = page.execute_script(
        "return Array.from(document.querySelectorAll('[src],[href]')).map(e => e.getAttribute('src') || e.getAttribute('href'))"
        ".concat(performance.getEntriesByType('resource').map(r => r.name))"
    )
    # Relative paths, data: URIs, and the local server the test reads the page from.
    external = [a for a in addresses if a.startswith(("http:", "https:", "//")) and not a.startswith("http://127.0.0.1:")]
    assert addresses and external == []


def test_the_plots_are_embedded(page):
    sources = page.execute_script(
        "return Array.from(document.images).filter(i => !i.closest('#grid')).map(i => [i.src.slice(0, 22), i.naturalWidth])")
    # The ranking's forest plot, then the two plots of the Plots section.
    assert len(sources) == 3 and all(src == "data:image/png;base64," and width > 100 for src, width in sources)


def test_each_plot_caption_is_drawn_inside_its_own_figure_above_its_plot(page):
    """As laid out by the browser: a caption lies inside its figure's frame,
    above its own plot, and below the previous figure's frame, with a gap, so
    it cannot read as the title of the next plot."""
    boxes = page.execute_script(
        "return Array.from(document.querySelectorAll('figure.plot:not(#forest)')).map(f => [f, f.querySelector('figcaption'), f.querySelector('img')]"
        ".map(e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }))")
    assert len(boxes) == 2
    for (figure, caption, plot) in boxes:
        assert figure[0] <= caption[0] and caption[1] <= plot[0] and plot[1] <= figure[1]
    assert boxes[1][0][0] - boxes[0][0][1] >= 16  # 2em between two frames


def test_the_page_opens_with_the_ranking_and_its_forest_plot(page, report_folder):
    """The ranked table is the first table on the page, its rows those of
    ranking.json in rank order, and the forest plot follows it, above the
    heat map and the listening grid."""
    ranking = json.loads((report_folder / "ranking.json").read_text())
    rows = table(page, "ranked")
    assert [row["engine"].removesuffix(" (input)") for row in rows] == [row["system"] for row in ranking["systems"]]
    for shown, stored in zip(rows, ranking["systems"]):
        low, high = stored["overall_interval"]
        assert shown["rank [95%]"] == f"{stored['overall_rank']} [{low}, {high}]"
    first_table = page.execute_script("return document.querySelector('table').id")
    assert first_table == "ranked"
    tops = page.execute_script(
        "return ['ranked', 'forest', 'heatmap', 'grid'].map(id => document.getElementById(id).getBoundingClientRect().top)")
    assert tops == sorted(tops)


def test_the_page_never_scrolls_sideways(page):
    """At 1400 px and at 800 px wide, the page is no wider than the window:
    a wide table scrolls inside its own box instead."""
    try:
        for width in (1400, 800):
            page.set_window_size(width, 900)
            sizes = page.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert sizes[0] <= sizes[1], f"at {width} px the page is {sizes[0]} px wide in a {sizes[1]} px window"
        boxed = page.execute_script(
            "return Array.from(document.querySelectorAll('table')).every(t => getComputedStyle(t).overflowX === 'auto')")
        assert boxed
    finally:
        page.set_window_size(1400, 900)
