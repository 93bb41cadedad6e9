"""Issue 36, nsbench listen's cases: a results folder read back is data (F-01),
the test folder tells a curious listener nothing (F-14), collect counts each
rating once and refuses bad ones with a line each (F-15), a cut clip log is
named, not a traceback (F-23), a model in the working folder is found (F-24).

One real run (folder set of two 1-second clips; passthrough, the example
plugin's spectral subtraction, speex; outputs kept in --output-folder so every
test can read them back) and its MUSHRA test are shared by the module.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Callable

import pytest

from nsbench.cli import main
from tests.cli.test_cli import EXAMPLE_PLUGIN
from tests.helpers.audio import make_folder_dataset
from tests.helpers.lazy import LazyModule
from tests.helpers.reports import engine_result_files

build_module = LazyModule("nsbench.listen.build")  # scipy.signal, loaded when a test first uses it
design = LazyModule("nsbench.listen.design")

HALF = "import numpy as np\n\ndef half(audio, rate):\n    return (0.5 * audio).astype(np.float32)\n"


def run_folder_set(tmp: Path, data: Path, *flags: str) -> Path:
    """A run of passthrough and speex (and what ``flags`` add) on the folder set; its results folder."""
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", "passthrough", "--engine", "speex", *flags,
            "--jobs", "1", "--quiet", "--no-plots", "--no-html", "--metric", "si_sdr", "--results-folder", str(tmp / "results")]
    assert main(argv) == 0
    return tmp / "results" / "folder"


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> dict[str, Path]:
    """The run (outputs kept in --output-folder: any test reads them back), a copy of its results before
    the test was built, and its MUSHRA test: 2 clips x 4 conditions (hidden reference, anchor, input, speex)."""
    tmp = tmp_path_factory.mktemp("adversarial-listen")
    data = make_folder_dataset(tmp / "set", count=2, seconds=1.0)
    folder = run_folder_set(tmp, data, "--output-folder", str(tmp / "outputs"))
    shutil.copytree(folder, tmp / "pristine")
    assert main(["listen", str(folder), "--clips-per-cell", "2"]) == 0
    return {"data": data, "results": folder, "pristine": tmp / "pristine"}


@pytest.fixture(scope="module")
def plugin_run(shared, tmp_path_factory) -> Path:
    """The same with the example plugin's spectral-subtraction too, loaded by --plugin."""
    tmp = tmp_path_factory.mktemp("adversarial-listen-plugin")
    return run_folder_set(tmp, shared["data"], "--plugin", EXAMPLE_PLUGIN, "--engine", "spectral-subtraction",
                          "--output-folder", str(tmp / "outputs"))


def copy_results(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(folder, copy)
    return copy


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


# ------------------------------------------------------------------ F-01


def test_f01_listen_loads_no_plugin_a_tampered_results_folder_names(plugin_run, tmp_path, capsys):
    """F-01: a --plugin slipped into provenance.command_line is never loaded; a mismatch is one line, exit 2."""
    marker = tmp_path / "ran"
    notes = tmp_path / "notes.py"
    notes.write_text(f"open({str(marker)!r}, 'w').write('code from a results folder ran')\n")
    copy = copy_results(plugin_run, tmp_path)
    for path in engine_result_files(copy):
        result = json.loads(path.read_text())
        result["provenance"]["command_line"] += ["--plugin", str(notes)]
        path.write_text(json.dumps(result))
    for given in ([], ["--plugin", EXAMPLE_PLUGIN]):
        assert main(["listen", str(copy), *given, "--output", str(tmp_path / "test")]) == 2
        line = one_line(capsys.readouterr().err)
        assert "notes.py" in line and "--plugin" in line
        assert not marker.exists(), "listen ran a plugin the results folder named"


def test_f01_the_runs_plugin_is_named_again_on_the_command_line(plugin_run, tmp_path, capsys):
    """F-01: what listen needs from a plugin the user names again; forgotten, or one the run did not load: one line, exit 2."""
    copy = copy_results(plugin_run, tmp_path)
    assert main(["listen", str(copy), "--output", str(tmp_path / "a")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "spectral_subtraction_plugin.py" in line and "--plugin" in line
    assert main(["listen", str(copy), "--plugin", EXAMPLE_PLUGIN, "--plugin", str(tmp_path / "other.py"),
                 "--output", str(tmp_path / "b")]) == 2
    assert "other.py" in one_line(capsys.readouterr().err)
    assert main(["listen", str(copy), "--plugin", EXAMPLE_PLUGIN, "--output", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "trials.js").is_file()


def test_f01_a_recorded_python_engine_is_keyed_without_importing_its_package(shared, tmp_path, monkeypatch, capsys):
    """F-01: listen finds a python: engine's cached outputs without running the package the results name
    (importlib's find_spec of package.module runs the package's __init__)."""
    code = tmp_path / "code"
    (code / "evilpkg").mkdir(parents=True)
    marker = tmp_path / "imported"
    (code / "evilpkg" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    (code / "evilpkg" / "model.py").write_text(HALF)
    monkeypatch.syspath_prepend(str(code))
    results = tmp_path / "results"
    assert main(["--dataset", "folder", "--data-folder", str(shared["data"]), "--engine", "passthrough",
                 "--engine", "python:evilpkg.model:half", "--jobs", "1", "--quiet", "--no-plots", "--no-html",
                 "--metric", "si_sdr", "--results-folder", str(results)]) == 0
    assert marker.is_file()  # the run imported it: the user asked for it
    marker.unlink()
    for name in ("evilpkg.model", "evilpkg"):
        monkeypatch.delitem(sys.modules, name)
    assert main(["listen", str(results / "folder"), "--output", str(tmp_path / "test")]) == 0
    assert not marker.exists(), "listen imported the package a results folder names"


# ------------------------------------------------------------------ F-14


def trials_of(test_folder: Path) -> dict:
    return json.loads((test_folder / "trials.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))


def test_f14_each_trial_has_its_own_condition_ids_and_the_key_maps_them(shared):
    """F-14: no condition id repeats across trials (data-condition in the DOM), none is the key's global id."""
    key = json.loads((shared["results"] / "listening-key.json").read_text())
    trials = [t for part in trials_of(shared["results"] / "listening-test")["parts"] for t in part]
    ids = [c["condition"] for t in trials for c in t["conditions"]]
    assert len(trials) == 2 and len(ids) == 2 * 4
    assert len(set(ids)) == len(ids), "a condition id repeats across trials"
    assert not set(ids) & set(key["conditions"])
    for trial in trials:  # the key, server-side, maps each back
        mapping = key["trials"][trial["trial"]]["conditions"]
        assert sorted(mapping[c["condition"]] for c in trial["conditions"]) == sorted(key["conditions"])


def test_f14_the_hidden_reference_is_not_the_file_played_as_the_reference(shared):
    """F-14: its own file name, and not the same bytes either (each stimulus has its own dither)."""
    folder = shared["results"] / "listening-test"
    for part in trials_of(folder)["parts"]:
        for trial in part:
            audio = [c["audio"] for c in trial["conditions"]]
            assert trial["reference"] not in audio
            reference = (folder / trial["reference"]).read_bytes()
            assert all((folder / name).read_bytes() != reference for name in audio)


def test_f14_conditions_are_written_in_a_random_order():
    """F-14: the hidden reference (condition 0) is not always first in the file: over 40 trials it takes
    at least three positions (fixed, it takes one; by chance fewer than three: about 1e-25)."""
    clips = [f"clip{i}" for i in range(40)]
    files = {(clip, j): f"audio/{clip}-{j}.wav" for clip in clips for j in (*range(5), build_module.OPEN_REFERENCE)}
    pairs = [(i, j) for i in range(40) for j in range(5)]
    trials = build_module.page_trials(design.MUSHRA, 1, pairs, clips, {c: c for c in clips}, [f"k{j}" for j in range(5)],
                                      files, {})
    positions = {[c["audio"] for c in trial["conditions"]].index(files[trial["clip"], 0]) for trial in trials}
    assert len(trials) == 40 and len(positions) >= 3


# ------------------------------------------------------------------ F-15


def answers_for(results: Path, listener: str, score: Callable[[str, int], int], part: int = 1) -> dict:
    """Answers to part 1 as the page writes them; ``score(condition name, trial number)``."""
    key = json.loads((results / "listening-key.json").read_text())
    test = trials_of(results / "listening-test")
    ratings = []
    for number, trial in enumerate(test["parts"][0]):
        mapping = key["trials"][trial["trial"]].get("conditions") or {c: c for c in key["conditions"]}
        for condition in trial["conditions"]:
            name = key["conditions"][mapping[condition["condition"]]]["name"]
            ratings.append({"trial": trial["trial"], "clip": trial["clip"], "condition": condition["condition"],
                            "score": score(name, number), "plays": 1, "seconds": 3.0})
    return {"format": 1, "test": test["test"], "digest": test["digest"], "method": "mushra", "listener": listener,
            "part": part, "seed": 1, "ratings": ratings}


def scored(name: str, high: int, low: int) -> Callable[[str, int], int]:
    return lambda condition, trial: 95 if condition == "hidden reference" else (high if condition == name else low)


def collect(shared: dict[str, Path], tmp_path: Path, files: dict[str, object], capsys) -> tuple[int, dict, str]:
    paths = []
    for name, payload in files.items():
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(payload if isinstance(payload, str) else json.dumps(payload))
    code = main(["listen", "--collect", *map(str, paths), "--key", str(shared["results"] / "listening-key.json")])
    results = json.loads((shared["results"] / "listening-results.json").read_text()) if code == 0 else {}
    return code, results, capsys.readouterr().err


def speex_row(results: dict) -> dict:
    return next(row["score"] for row in results["conditions"] if row["condition"] == "speex")


def test_f15_a_rating_repeated_twenty_times_counts_once(shared, tmp_path, capsys):
    """F-15: bob's file repeats each rating 20 times; his two speex ratings count twice, not 40 times."""
    ann = answers_for(shared["results"], "ann", scored("speex", 80, 50))
    bob = answers_for(shared["results"], "bob", scored("speex", 40, 50))
    bob["ratings"] = [dict(r) for r in bob["ratings"] for _ in range(20)]
    code, results, err = collect(shared, tmp_path, {"ann": ann, "bob": bob}, capsys)
    assert code == 0 and "Traceback" not in err
    speex = speex_row(results)
    assert speex["ratings"] == 4 and speex["mean"] == pytest.approx(60.0, abs=1e-9)
    assert [line for line in err.splitlines() if "bob.json" in line and "repeat" in line] != []
    assert [entry["ratings"] for entry in results["listeners"]] == [8, 8]


def test_f15_a_rating_of_another_trials_clip_or_an_unknown_condition_is_a_line_and_not_counted(shared, tmp_path, capsys):
    """F-15: a rating whose clip is not its trial's, one of a condition the trial does not have, one of a
    condition from another trial: a line each, none counted (they were used or dropped silently)."""
    ann = answers_for(shared["results"], "ann", scored("speex", 80, 50))
    bob = answers_for(shared["results"], "bob", scored("speex", 40, 50))
    first = [r for r in bob["ratings"] if r["trial"] == bob["ratings"][0]["trial"]]
    second = [r for r in bob["ratings"] if r["trial"] != bob["ratings"][0]["trial"]]
    assert len(first) == len(second) == 4
    next(r for r in first if r["score"] == 40)["clip"] = second[0]["clip"]  # speex, said to be of the other clip
    anchor_and_input = [r for r in first if r["score"] == 50]
    anchor_and_input[0]["condition"] = "k000000000000"
    anchor_and_input[1]["condition"] = second[0]["condition"]  # an id of the second trial, in the first
    code, results, err = collect(shared, tmp_path, {"ann": ann, "bob": bob}, capsys)
    assert code == 0 and "Traceback" not in err
    assert speex_row(results)["ratings"] == 3 and speex_row(results)["mean"] == pytest.approx(200 / 3, abs=1e-9)
    problems = [line for line in err.splitlines() if "bob.json" in line]
    assert len(problems) == 3, err
    assert any("clip" in line for line in problems) and sum("condition" in line for line in problems) == 2
    assert results["listeners"][1]["ratings"] == 5


@pytest.mark.parametrize("part", [99, 1.9, 0, True, "1"])
def test_f15_a_part_the_test_does_not_have_skips_the_file(shared, tmp_path, capsys, part):
    """F-15: part 99 and part 1.9 were accepted (1.9 as part 1)."""
    ann = answers_for(shared["results"], "ann", scored("speex", 80, 50))
    bob = answers_for(shared["results"], "bob", scored("speex", 40, 50), part=part)
    code, results, err = collect(shared, tmp_path, {"ann": ann, "bob": bob}, capsys)
    assert code == 0
    assert "bob.json" in one_line(err) and "part" in err
    assert [entry["listener"] for entry in results["listeners"]] == ["ann"]


MALFORMED: dict[str, Callable[[dict], object]] = {
    "unhashable trial": lambda a: a["ratings"][0].update(trial=["t"]),
    "unknown clip": lambda a: a["ratings"][0].update(clip="cdeadbeef0000"),
    "missing condition": lambda a: a["ratings"][0].pop("condition"),
    "missing clip": lambda a: a["ratings"][0].pop("clip"),
    "condition not a string": lambda a: a["ratings"][0].update(condition={"k": 1}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_f15_a_malformed_rating_is_one_line_not_a_traceback(shared, tmp_path, capsys, case):
    """F-15: an unhashable trial, an unknown clip, a missing field crashed collect (TypeError, KeyError)."""
    ann = answers_for(shared["results"], "ann", scored("speex", 80, 50))
    bob = answers_for(shared["results"], "bob", scored("speex", 40, 50))
    MALFORMED[case](bob)
    code, results, err = collect(shared, tmp_path, {"ann": ann, "bob": bob}, capsys)
    assert code == 0
    assert "bob.json: rating 1" in one_line(err)
    assert [entry["ratings"] for entry in results["listeners"]] == [8, 7]


MALFORMED_FILES: dict[str, Callable[[dict], object]] = {
    "a list": lambda a: [a],
    "digest not text": lambda a: {**a, "digest": [a["digest"]]},
    "listener not text": lambda a: {**a, "listener": ["bob"]},
    "no ratings": lambda a: {name: value for name, value in a.items() if name != "ratings"},
}


@pytest.mark.parametrize("case", sorted(MALFORMED_FILES))
def test_f15_a_malformed_file_is_one_line_not_a_traceback(shared, tmp_path, capsys, case):
    """F-15: a file that is not an answers object, or whose digest or listener is not text: skipped, one line
    (an unhashable digest crashed collect; a listener ["bob"] was taken as "['bob']")."""
    ann = answers_for(shared["results"], "ann", scored("speex", 80, 50))
    bob = MALFORMED_FILES[case](answers_for(shared["results"], "bob", scored("speex", 40, 50)))
    code, results, err = collect(shared, tmp_path, {"ann": ann, "bob": bob}, capsys)
    assert code == 0
    assert "bob.json" in one_line(err)
    assert [entry["listener"] for entry in results["listeners"]] == ["ann"]


def test_f15_a_key_of_the_format_before_the_blind_one_is_refused_in_one_line(shared, tmp_path, capsys):
    """F-15: a format-1 key maps no trial's own ids back: collect says to build the test again, exit 2."""
    key = json.loads((shared["results"] / "listening-key.json").read_text())
    (tmp_path / "old-key.json").write_text(json.dumps({**key, "format": 1}))
    (tmp_path / "ann.json").write_text(json.dumps(answers_for(shared["results"], "ann", scored("speex", 80, 50))))
    assert main(["listen", "--collect", str(tmp_path / "ann.json"), "--key", str(tmp_path / "old-key.json")]) == 2
    assert "format 1" in one_line(capsys.readouterr().err)


# ------------------------------------------------------------------ F-23


def test_f23_a_cut_clip_log_names_its_bad_line_and_listen_goes_on(shared, tmp_path, capsys):
    """F-23: a .clips.jsonl cut mid-line gave a JSONDecodeError traceback; now its file and line are named."""
    copy = copy_results(shared["pristine"], tmp_path)
    log = copy / "speex.clips.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2]]))
    assert main(["listen", str(copy), "--output", str(tmp_path / "test")]) == 0
    err = capsys.readouterr().err
    assert f"speex.clips.jsonl:{len(lines)}" in one_line(err)
    key = json.loads((copy / "listening-key.json").read_text())
    assert len(key["clips"]) == 1  # the clip of the cut line: not known to have run on speex


# ------------------------------------------------------------------ F-24


def test_f24_listen_finds_a_python_engine_whose_module_is_in_the_working_folder(shared, tmp_path, monkeypatch, capsys):
    """F-24: `nsbench` (no working folder on sys.path) found the outputs of --engine python:cwdmodel:half
    run from that folder under keys the listen could not make: the fingerprint looked without the cwd."""
    (tmp_path / "cwdmodel.py").write_text(HALF)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    run_path = list(sys.path)
    argv = ["--dataset", "folder", "--data-folder", str(shared["data"]), "--engine", "passthrough",
            "--engine", "python:cwdmodel:half", "--jobs", "2", "--quiet", "--no-plots", "--no-html",
            "--metric", "si_sdr", "--results-folder", "results"]
    assert main(argv) == 0
    sys.path[:] = run_path  # a later `nsbench listen` is a new process: the run's import is not in it
    monkeypatch.delitem(sys.modules, "cwdmodel")
    assert main(["listen", "results/folder", "--output", "test"]) == 0, capsys.readouterr().err
    key = json.loads((tmp_path / "results" / "folder" / "listening-key.json").read_text())
    assert "python:cwdmodel:half" in [c["name"] for c in key["conditions"].values()]
