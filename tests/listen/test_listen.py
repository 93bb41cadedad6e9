"""nsbench listen: the test folder built from a real run (folder set of two
1-second clips; passthrough, the example plugin's spectral subtraction, speex),
played and rated in headless Chromium from file://, the answers saved as a
download and collected; the statistics against scipy; bad answers files.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile

from tests.helpers.audio import make_folder_dataset
from nsbench.cli import main
from nsbench.listen import design
from tests.cli.test_cli import EXAMPLE_PLUGIN
from tests.report.test_html_report import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS, browser_missing
from tests.helpers.lazy import LazyModule

# These import scipy.stats and scipy.signal (2-3 s); loaded when a test first uses them, not at collection.
collect_module = LazyModule("nsbench.listen.collect")
stats = LazyModule("nsbench.listen.stats")
stimuli = LazyModule("nsbench.listen.stimuli")
scipy_stats = LazyModule("scipy.stats")

ENGINES = ["passthrough", "spectral-subtraction", "speex"]
needs_browser = pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "browser present")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """A run, its MUSHRA test, and a P.835 test (by the option, on this paired set) beside a copy of the
    results. Both are built here: each test starts with an empty cache of outputs (conftest)."""
    tmp = tmp_path_factory.mktemp("listen")
    data = make_folder_dataset(tmp / "set", count=2, seconds=1.0)
    argv = ["--dataset", "folder", "--data-folder", str(data), "--plugin", EXAMPLE_PLUGIN, *sum((["--engine", e] for e in ENGINES), []),
            "--jobs", "1", "--quiet", "--no-plots", "--results-folder", str(tmp / "results"),
            "--metric", "si_sdr", "--metric", "stoi", "--metric", "voice_level_db"]
    assert main(argv) == 0
    folder = tmp / "results" / "folder"
    copy = tmp / "p835" / "folder"
    shutil.copytree(folder, copy)
    assert main(["listen", str(folder), "--plugin", EXAMPLE_PLUGIN, "--clips-per-cell", "2"]) == 0
    assert main(["listen", str(copy), "--plugin", EXAMPLE_PLUGIN, "--method", "p835", "--clips-per-cell", "2"]) == 0
    return folder, copy


@pytest.fixture(scope="module")
def run_folder(built) -> Path:
    return built[0]


@pytest.fixture(scope="module")
def mushra(built) -> Path:
    return built[0] / "listening-test"


@pytest.fixture(scope="module")
def p835(built) -> tuple[Path, Path]:
    return built[1], built[1] / "listening-test"


def key_of(folder: Path) -> dict:
    return json.loads((folder / "listening-key.json").read_text())


def condition_name(key: dict, trial: str, condition: str) -> str:
    """The name of the condition a trial shows under its own id ``condition``."""
    return key["conditions"][key["trials"][trial]["conditions"][condition]]["name"]


# ------------------------------------------------------------------ statistics


def test_correlations_match_scipy_on_generated_ratings():
    rng = np.random.default_rng(7)
    metric = rng.normal(size=40)
    ratings = np.clip(np.round(3 + metric + rng.normal(scale=0.8, size=40)), 1, 5)  # five-point: many ties
    assert stats.pearson(metric, ratings) == pytest.approx(scipy_stats.pearsonr(metric, ratings)[0], abs=1e-12)
    assert stats.spearman(metric, ratings) == pytest.approx(scipy_stats.spearmanr(metric, ratings)[0], abs=1e-12)
    assert stats.kendall_tau_b(metric, ratings) == pytest.approx(scipy_stats.kendalltau(metric, ratings)[0], abs=1e-12)
    tied = np.repeat([1.0, 2.0, 3.0], 4)
    assert stats.kendall_tau_b(tied, ratings[:12]) == pytest.approx(scipy_stats.kendalltau(tied, ratings[:12])[0], abs=1e-12)
    assert math.isnan(stats.pearson([1, 2], [3, 4]))  # too few to say


def test_mean_interval_is_bs1534s_t_interval():
    mean, low, high = stats.mean_ci95([10, 12, 14, 16])
    assert (mean, low, high) == pytest.approx((13.0, 13.0 - 4.108520513521041, 13.0 + 4.108520513521041), abs=1e-9)


def test_loudness_meter_reads_the_standards_calibration_tone():
    """BS.1770-4: a 1 kHz sine at 0 dBFS in one channel reads -3.01 LKFS, so -20 dBFS reads -23.01."""
    rate = 48000
    tone = 10 ** (-20 / 20) * np.sin(2 * np.pi * 1000 * np.arange(3 * rate) / rate)
    assert stimuli.integrated_loudness(tone, rate) == pytest.approx(-23.01, abs=0.05)


def test_equalising_brings_each_to_the_target_and_lowers_the_trial_for_a_peak():
    rate, rng = 16000, np.random.default_rng(1)
    quiet = 0.01 * rng.standard_normal(rate)
    spiky = 0.01 * rng.standard_normal(rate)
    spiky[100] = 0.5  # at -26 LUFS this sample would be far above -1 dBFS
    levelled = stimuli.equalise({"quiet": quiet, "spiky": spiky}, rate)
    gains = {name: value.gain_db for name, value in levelled.items()}
    peaks = [20 * np.log10(np.max(np.abs(v.audio))) for v in levelled.values()]
    assert max(peaks) == pytest.approx(stimuli.PEAK_DBFS, abs=0.01)
    # the same lowering for both: their loudness stays equal
    after = [stimuli.integrated_loudness(v.audio, rate) for v in levelled.values()]
    assert after[0] == pytest.approx(after[1], abs=0.1) and after[0] < stimuli.TARGET_LUFS - 1
    assert gains["quiet"] - gains["spiky"] == pytest.approx(levelled["spiky"].loudness - levelled["quiet"].loudness, abs=1e-9)


def test_parts_rate_every_pair_equally_often():
    for method in (design.MUSHRA, design.P835):
        parts = design.split(method, clips=5, conditions=4, parts=3)
        pairs = [pair for part in parts for pair in part]
        assert sorted(pairs) == [(i, j) for i in range(5) for j in range(4)]  # each pair in exactly one part
        if method == design.MUSHRA:  # a clip's conditions stay on one screen
            assert all(len({j for i2, j in part if i2 == i}) in (0, 4) for part in parts for i in range(5))


def test_clips_are_drawn_at_random_within_each_cell_from_the_seed():
    records = {"e": [{"clip_id": f"{cell}{n}", "labels": {"snr": cell}} for cell in "ab" for n in range(10)]}
    first, cells = design.draw_clips(records, ["e"], ["snr"], 2, seed=1)
    assert design.draw_clips(records, ["e"], ["snr"], 2, seed=1)[0] == first
    assert design.draw_clips(records, ["e"], ["snr"], 2, seed=2)[0] != first
    assert sorted(cell["snr"] for cell in cells.values()) == ["a", "a", "b", "b"]


# ------------------------------------------------------------------ the folder


def test_the_folder_is_blind_and_self_contained(mushra, run_folder):
    files = [p for p in mushra.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"index.html", "listen.js", "listen.css", "trials.js"}
    names = ENGINES + ["spectral", "subtraction", "utt0", "utt1", "reference", "anchor"]
    for path in files:
        text = path.read_bytes().decode("latin-1").lower()
        assert not any(name in path.name.lower() for name in names), path
        for name in ENGINES + ["utt0", "utt1"]:
            assert name not in text, (path, name)
        if path.suffix in (".html", ".js", ".css"):
            assert not re.search(r"https?://", text), path  # no network
    wavs = [p for p in files if p.suffix == ".wav"]
    assert len(wavs) == 2 * 6  # two clips x (reference, hidden reference, anchor, input, two engines)
    for wav in wavs:
        audio, rate = soundfile.read(str(wav))
        assert len(audio) <= rate  # at most 1 s, as the clips
        assert wav_chunks(wav) == [b"fmt ", b"data"]  # no LIST/INFO or other metadata
        assert stimuli.integrated_loudness(audio, rate) == pytest.approx(stimuli.TARGET_LUFS, abs=0.2)
    key = key_of(run_folder)
    assert sorted(c["name"] for c in key["conditions"].values()) == sorted(
        ["hidden reference", "anchor 3.5 kHz", "unprocessed input", "spectral-subtraction", "speex"])


def wav_chunks(path: Path) -> list[bytes]:
    data, at, chunks = path.read_bytes(), 12, []
    while at + 8 <= len(data):
        size = int.from_bytes(data[at + 4 : at + 8], "little")
        chunks.append(data[at : at + 4])
        at += 8 + size + (size & 1)
    return chunks


def test_a_missing_output_says_which_run_provides_it(run_folder, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "empty-cache"))
    assert main(["listen", str(run_folder), "--plugin", EXAMPLE_PLUGIN, "--output", str(tmp_path / "t")]) == 2
    error = capsys.readouterr().err
    assert "no kept output of" in error and "python benchmark.py --dataset folder" in error


def test_mushra_needs_references_and_a_results_folder(tmp_path, capsys):
    assert main(["listen", str(tmp_path / "nothing")]) == 2
    assert "no such results folder" in capsys.readouterr().err


# ------------------------------------------------------------------ bad answers


def answers_for(folder: Path, listener: str, score) -> dict:
    """Answers to part 1 as the page writes them, ``score(rating kind, clip index)`` giving each rating."""
    key = key_of(folder)
    test = json.loads((folder / "listening-test" / "trials.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    clips = sorted(key["clips"], key=lambda c: key["clips"][c]["clip_id"])
    ratings = []
    for trial in test["parts"][0]:
        for condition in trial["conditions"]:
            kind = condition_name(key, trial["trial"], condition["condition"])
            ratings.append({"trial": trial["trial"], "clip": trial["clip"], "condition": condition["condition"],
                            "score": score(kind, clips.index(trial["clip"])), "plays": 1, "seconds": 3.0})
    return {"format": 1, "test": test["test"], "digest": test["digest"], "method": "mushra", "listener": listener,
            "part": 1, "seed": 1, "ratings": ratings}


def test_bad_answers_cost_a_line_each_and_the_rest_is_collected(mushra, run_folder, tmp_path, capsys):
    good = answers_for(run_folder, "ann", lambda kind, clip: 95 if kind == "hidden reference" else 50)
    files = {"good": good, "again": good, "other": {**good, "listener": "bob", "digest": "0" * 16},
             "wild": {**answers_for(run_folder, "cy", lambda kind, clip: 150 if kind == "speex" else 95)}}
    for name, payload in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(payload))
    (tmp_path / "cut.json").write_text(json.dumps(good)[:200])
    paths = [tmp_path / f"{n}.json" for n in ("good", "again", "other", "wild", "cut")]
    collected, _ = collect_module.collect(paths, run_folder / "listening-key.json")
    problems = collected.problems
    assert len(problems) == 5  # the duplicate, the other test, two ratings of 150, the truncated file
    assert any("again.json: listener ann (part 1) is already collected" in p for p in problems)
    assert any("other.json: answers to another test" in p for p in problems)
    assert sum("wild.json" in p and "150" in p and "outside the scale" in p for p in problems) == 2
    assert any("cut.json: not a complete answers file" in p for p in problems)
    assert [a.listener for a in collected.answers] == ["ann", "cy"]
    assert len(collected.answers[1].ratings) == 8  # cy's other ratings kept


# ------------------------------------------------------------------ in Chromium


# The page counts a sound as heard on its "ended" event, which real playback fires after
# the clip's length: 1-3 s each, 68 plays in these tests. Every play() here runs at
# Chrome's top rate instead; the same element still plays to its end and fires the
# same event, and nothing the tests assert reads the time a trial took.
PLAYBACK_RATE = 16
FAST_PLAYBACK = f"""(() => {{
  const play = HTMLMediaElement.prototype.play;
  HTMLMediaElement.prototype.play = function () {{ this.playbackRate = {PLAYBACK_RATE}; return play.call(this); }};
}})();"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if browser_missing():
        pytest.skip(browser_missing())
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    downloads = tmp_path_factory.mktemp("downloads")
    profile = tempfile.mkdtemp(prefix="nsbench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1100,900"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FAST_PLAYBACK})
    driver.downloads = downloads
    try:
        driver.set_script_timeout(30)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def start(browser, folder: Path, listener: str, part: int = 1) -> None:
    browser.get(f"{(folder / 'index.html').as_uri()}?listener={listener}&part={part}")
    browser.find_element("id", "begin").click()


def play_to_end(browser, button) -> None:
    button.click()
    wait_until_heard(button)


def wait_until_heard(button) -> None:
    deadline = time.time() + 20
    while "heard" not in (button.get_attribute("class") or ""):
        assert time.time() < deadline, "the sound never ended"
        time.sleep(0.05)


def set_slider(browser, slider, value: int) -> None:
    browser.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", slider, value)


def saved(browser, name: str) -> dict:
    browser.find_element("id", "save").click()
    path = browser.downloads / name
    deadline = time.time() + 10
    while (answers := complete_json(path)) is None:
        assert time.time() < deadline, f"{name} was not downloaded"
        time.sleep(0.05)
    time.sleep(0.2)  # Chrome's end of the download: a page loaded at once after it was at times left blank
    return answers


def complete_json(path: Path) -> dict | None:
    """The file's JSON once it is all written, else None (not there yet, or cut short)."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def rate_mushra(browser, folder: Path, key: dict, listener: str, score) -> dict:
    start(browser, folder, listener)
    clips = sorted(key["clips"], key=lambda c: key["clips"][c]["clip_id"])
    trials = browser.execute_script("return window.NSBENCH_TEST.parts[0].length")
    for _ in range(trials):
        for button in browser.find_elements("css selector", "#screen button[data-condition]"):
            play_to_end(browser, button)
        for slider in browser.find_elements("css selector", "#screen input[type=range]"):
            trial = browser.execute_script("return window.nsbenchCurrentTrial().trial")
            kind = condition_name(key, trial, slider.get_attribute("data-condition"))
            clip_id = current_clip(browser)
            set_slider(browser, slider, score(kind, clips.index(clip_id), listener))
        browser.find_element("id", "next").click()
    return saved(browser, f"answers-{listener}-part1.json")


def current_clip(browser) -> str:
    return browser.execute_script("return window.nsbenchCurrentClip()")


MUSHRA_BASE = {"hidden reference": 90, "anchor 3.5 kHz": 10, "unprocessed input": 20, "spectral-subtraction": 40, "speex": 60}
LISTENERS = {"ann": 0, "bob": 1}


def mushra_score(kind: str, clip: int, listener: str) -> int:
    if listener == "cy":  # fails post-screening: the hidden reference at 50 in every trial
        return 50
    return MUSHRA_BASE[kind] + 2 * clip + 4 * LISTENERS[listener]


@needs_browser
@pytest.mark.slow
def test_a_whole_mushra_test_rated_saved_and_collected(browser, mushra, run_folder, capsys):
    key = key_of(run_folder)
    files = []
    for listener in ("ann", "bob", "cy"):
        answers = rate_mushra(browser, mushra, key, listener, mushra_score)
        assert answers["digest"] == key["digest"] and answers["listener"] == listener and answers["part"] == 1
        assert len(answers["ratings"]) == 10 and all(r["plays"] == 1 for r in answers["ratings"])
        files.append(browser.downloads / f"answers-{listener}-part1.json")
    assert browser.get_log("browser") == []
    assert main(["listen", "--collect", *map(str, files), "--key", str(run_folder / "listening-key.json")]) == 0
    out = capsys.readouterr().out
    results = json.loads((run_folder / "listening-results.json").read_text())
    assert [l["excluded"] != "" for l in results["listeners"]] == [False, False, True]
    assert "hidden reference below 90 in 2 of 2 trials" in results["listeners"][2]["excluded"]
    by_name = {row["condition"]: row["score"] for row in results["conditions"]}
    # each condition: base + {0, 2} (clip) + {0, 4} (listener): mean base + 3, t-interval +- 4.1085
    for name, base in MUSHRA_BASE.items():
        assert by_name[name]["mean"] == pytest.approx(base + 3, abs=1e-9)
        assert by_name[name]["ci95"] == pytest.approx([base + 3 - 4.108520513521041, base + 3 + 4.108520513521041], abs=1e-6)
        assert (by_name[name]["ratings"], by_name[name]["listeners"], by_name[name]["clips"]) == (4, 2, 2)
    assert results["balance"]["min"] == results["balance"]["max"] == 2
    agreement = results["agreement"]["score"]["si_sdr"]
    assert agreement["stimulus"]["n"] == 6 and agreement["system"]["n"] == 3  # input (passthrough's record) and 2 engines
    assert "## Listening test" in out and "speex" in out
    assert "## Listening test" in (run_folder / "report.md").read_text()
    assert 'id="listening-test"' in (run_folder / "report.html").read_text()


P835_BASE = {"hidden reference": (5, 5, 5), "unprocessed input": (4, 1, 2), "spectral-subtraction": (3, 3, 3), "speex": (4, 4, 4)}


def rate_p835(browser, folder: Path, key: dict, listener: str, index: int, fail: bool) -> dict:
    start(browser, folder, listener)
    clips = sorted(key["clips"], key=lambda c: key["clips"][c]["clip_id"])
    for _ in range(browser.execute_script("return window.NSBENCH_TEST.parts[0].length")):
        trial = browser.execute_script("return window.nsbenchCurrentTrial()")
        play_to_end(browser, browser.find_element("id", "play"))
        meaning = key["trials"][trial["trial"]]
        if meaning["kind"] == "test":
            sig, bak, ovrl = P835_BASE[condition_name(key, trial["trial"], trial["condition"])]
            ovrl -= (clips.index(trial["clip"]) + index) % 2
            answer = {"sig": sig, "bak": bak, "ovrl": ovrl}
        else:
            answer = {s: meaning["expected"].get(s, 3) + (1 if fail and meaning["kind"] == "trap" else 0) for s in ("sig", "bak", "ovrl")}
        for scale in ("sig", "bak", "ovrl"):
            browser.find_element("css selector", f"fieldset[data-scale={scale}] input[value='{answer[scale]}']").click()
        browser.find_element("id", "next").click()
    return saved(browser, f"answers-{listener}-part1.json")


@needs_browser
@pytest.mark.slow
def test_a_whole_p835_test_rated_saved_and_collected(browser, p835, capsys):
    results_folder, folder = p835
    key = key_of(results_folder)
    files = []
    for index, listener in enumerate(("dee", "eve", "fay")):
        answers = rate_p835(browser, folder, key, listener, index % 2, fail=listener == "fay")
        assert len(answers["ratings"]) == 8 + 3  # 2 clips x 4 conditions, a trapping and two gold trials
        files.append(browser.downloads / f"answers-{listener}-part1.json")
    assert main(["listen", "--collect", *map(str, files), "--key", str(results_folder / "listening-key.json")]) == 0
    results = json.loads((results_folder / "listening-results.json").read_text())
    assert [l["listener"] for l in results["listeners"] if l["excluded"]] == ["fay"]
    assert "trapping trial answered sig 3, bak 3, ovrl 3 (expected sig 2, bak 2, ovrl 2)" in results["listeners"][2]["excluded"]
    rows = {row["condition"]: row for row in results["conditions"]}
    for name, (sig, bak, ovrl) in P835_BASE.items():
        assert rows[name]["sig"]["mean"] == sig and rows[name]["bak"]["mean"] == bak
        assert math.isnan(rows[name]["sig"]["ci95"][0]) is False and rows[name]["sig"]["ci95"] == pytest.approx([sig, sig])
        # OVRL: base - {0, 1, 1, 0} over (clip, listener): mean base - 0.5, t-interval +- 0.9187
        assert rows[name]["ovrl"]["mean"] == pytest.approx(ovrl - 0.5, abs=1e-9)
        assert rows[name]["ovrl"]["ci95"] == pytest.approx([ovrl - 0.5 - 0.9186931155185393, ovrl - 0.5 + 0.9186931155185393], abs=1e-6)
    capsys.readouterr()


@needs_browser
def test_orders_follow_the_seed(browser, mushra):
    browser.get((mushra / "index.html").as_uri())
    plan = "return window.nsbenchPlan(0, arguments[0]).map(t => [t.trial, t.conditions.map(c => c.condition)])"
    one, again, two = (browser.execute_script(plan, seed) for seed in (1, 1, 2))
    assert one == again and one != two
    assert sorted(map(str, one)) != sorted(map(str, two)) or [t[1] for t in one] != [t[1] for t in two]
    seeds = browser.execute_script("return [nsbenchSeed('ann', 0), nsbenchSeed('ann', 0), nsbenchSeed('bob', 0)]")
    assert seeds[0] == seeds[1] != seeds[2]


@needs_browser
def test_the_page_works_with_the_keyboard_alone(browser, mushra):
    from selenium.webdriver.common.keys import Keys

    browser.get((mushra / "index.html").as_uri())
    active = lambda: browser.switch_to.active_element  # noqa: E731
    browser.find_element("tag name", "body").send_keys(Keys.TAB)
    assert active().get_attribute("id") == "listener"
    active().send_keys("kim", Keys.TAB)
    assert active().get_attribute("id") == "part"
    active().send_keys(Keys.TAB)
    assert active().get_attribute("id") == "begin"
    active().send_keys(Keys.SPACE)
    assert active().text == "Play reference"  # the trial screen takes the focus
    for letter in "ABCDE":
        active().send_keys(Keys.TAB)
        assert active().text == f"Play {letter}"
        button = active()
        button.send_keys(Keys.SPACE)
        wait_until_heard(button)
        active().send_keys(Keys.TAB)
        assert active().get_attribute("type") == "range"
        active().send_keys(*[Keys.ARROW_RIGHT] * 7)
        assert active().get_attribute("value") == "7"
    active().send_keys(Keys.TAB)
    assert active().get_attribute("id") == "next" and active().is_enabled()
    active().send_keys(Keys.SPACE)
    ratings = browser.execute_script("return window.nsbenchAnswers().ratings")
    assert [r["score"] for r in ratings] == [7] * 5


def test_a_set_without_references_gets_p835_conditions():
    """Where Clip.clean is None (a set without references), only what was heard: the input and the engines."""
    conditions = design.conditions_for(design.P835, ["speex"], has_reference=False, baseline="passthrough")
    assert [c.name for c in conditions] == ["unprocessed input", "speex"]
    assert [c.kind for c in design.conditions_for(design.MUSHRA, ["speex"], True, "")] == [
        design.REFERENCE, design.ANCHOR, design.INPUT, design.ENGINE]


def test_a_run_on_a_set_without_references_builds_a_p835_test(tmp_path):
    """A noisy-only folder set (Clip.clean is None): `listen` picks P.835 by itself, with
    the input and the engine as its conditions and no hidden reference or anchor."""
    data = make_folder_dataset(tmp_path / "set", count=2, seconds=1.0)
    shutil.rmtree(data / "clean")
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", "speex", "--metric", "rtf_cpu",
            "--jobs", "1", "--quiet", "--no-plots", "--no-html", "--results-folder", str(tmp_path / "results")]
    assert main(argv) == 0
    folder = tmp_path / "results" / "folder"
    assert main(["listen", str(folder)]) == 0
    key = key_of(folder)
    assert key["method"] == "p835"
    assert sorted(c["name"] for c in key["conditions"].values()) == ["speex", "unprocessed input"]


def test_a_collected_test_and_the_same_ratings_as_a_rated_set_give_the_same_agreement(mushra, run_folder, tmp_path):
    """One path for every source of ratings (issue 41): the listening test's P.1401 rows equal those of
    a rated set (ratings.csv, read back from disk) holding the same ratings, scored with the same values."""
    from nsbench import ratings as rated_sets
    from nsbench.report import human_agreement

    score = {"passthrough": 40, "speex": 70, "spectral-subtraction": 55, "hidden reference": 97, "anchor": 20}
    paths = []
    for offset, listener in enumerate(("ann", "bob")):
        payload = answers_for(run_folder, listener, lambda kind, clip: min(100, score.get(kind, 50) + offset * 5 + clip % 3))
        paths.append(tmp_path / f"{listener}.json")
        paths[-1].write_text(json.dumps(payload))
    collected, _ = collect_module.collect(paths, run_folder / "listening-key.json")
    ratings = collect_module.test_ratings(collected)
    rows = collect_module.results_of(collected)["human"]
    assert rows and {row["level"] for row in rows} == {"file", "condition"}
    in_memory = collect_module.rated_set(collected, ratings)
    folder = tmp_path / "rated"
    on_disk = [rated_sets.RatedItem(f"{item.clip_id}.wav", item.condition, "", item.ratings) for item in in_memory.items]
    for item in on_disk:
        (folder / item.file).parent.mkdir(parents=True, exist_ok=True)
        (folder / item.file).write_bytes(b"")
    (folder / rated_sets.TABLE).write_text(rated_sets.table_text(on_disk, in_memory.dimensions))
    read_back = rated_sets.read(folder, in_memory.cell)
    again = human_agreement.cell_rows(read_back, collect_module.metric_values(collected, read_back))
    assert json.dumps(again, sort_keys=True) == json.dumps(rows, sort_keys=True)
