"""report.html in a real headless browser: Debian's chromium, driven by
selenium through Debian's chromium-driver, reading the report over http from
127.0.0.1 as a person would open it."""
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

from nsbench.cli import main
from nsbench.report import TABLE_COLUMNS, fmt

from conftest import make_folder_dataset
from test_cli import EXAMPLE_PLUGIN

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
INSTALL = "apt-get install -y chromium chromium-driver, and pip install -r requirements-test.txt (selenium)"
# As root, in a container, with no network to reach: no sandbox, no GPU, no background traffic.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
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


def test_the_tables_show_the_numbers_in_the_json(page, report_folder):
    stored = results(report_folder)
    cells = table(page, "cells")
    checked = 0
    for row in cells:
        cell = next(c for c in stored[row["engine"]]["cells"] if c["cell"]["set"] == row["set"])
        assert row["n"] == str(cell["clips"])
        for name, title, decimals in TABLE_COLUMNS:
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
    # Per engine: 3 clips (all worst or typical), each with noisy input, clean reference and output.
    assert len(players) == 2 * 3 * 3
    for src, duration, error in players:
        assert (report_folder / unquote(src)).is_file() and error == 0 and duration == pytest.approx(2.0, abs=0.01), src
    assert {src.split("/")[1] for src, _, _ in players} == {"_input", "_clean", "passthrough", "spectral-subtraction"}


def test_the_plots_are_embedded(page):
    sources = page.execute_script("return Array.from(document.images).map(i => [i.src.slice(0, 22), i.naturalWidth])")
    assert len(sources) == 2 and all(src == "data:image/png;base64," and width > 100 for src, width in sources)
