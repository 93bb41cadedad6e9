"""What a run prints (the summary on stdout and nothing more, progress on
stderr) and which clips the listening grid chooses."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tqdm import tqdm

from nsbench.report import listening_grid
from nsbench.cli import main
from nsbench.run.progress import NoProgress, PlainProgress, engine_progress
from nsbench.report.tables import fmt
from nsbench.report.terminal import summary_text
from nsbench.plugins.types import ClipRecord

from tests.helpers.audio import make_folder_dataset
from tests.helpers.paths import REPO_ROOT
from tests.cli.test_cli import EXAMPLE_PLUGIN

METRICS = ["--metric", "si_sdr_input", "--metric", "si_sdr", "--metric", "si_sdri", "--metric", "stoi"]


def stored_results(folder: Path) -> list[dict]:
    return [r for r in (json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))) if "engine" in r]


# --------------------------------------------------------------------------- the summary


@pytest.mark.slow
def test_stdout_is_the_summary_and_nothing_more_and_draws_nothing_without_html(tmp_path):
    """A real run in its own process, as a user starts it, on a --limit subset:
    stdout holds exactly the summary (one row per engine, the verdicts, the
    flags, the report's path), and with --no-html librosa is never imported."""
    data = make_folder_dataset(tmp_path / "set", count=4)
    results = tmp_path / "results"
    argv = [sys.executable, "-X", "importtime", str(REPO_ROOT / "benchmark.py"), "--dataset", "folder", "--data-folder", str(data),
            "--limit", "3", "--plugin", EXAMPLE_PLUGIN, "--engine", "spectral-subtraction", "--jobs", "1", "--no-html",
            "--no-plots", "--no-cache", "--results-folder", str(results), *METRICS]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    folder = results / "folder"
    stored = stored_results(folder)
    lines = run.stdout.splitlines()
    assert run.stdout == summary_text("folder", stored, [folder / "report.md"]) + "\n"
    # title, table header, 2 engines, the verdicts (3 clips: not distinguishable; wrapped), the flags, the report's path
    assert [line.split(" ")[0] for line in lines] == [
        "nsbench", "engine", "passthrough", "spectral-subtraction", "better", "", "flags:", "report:"], run.stdout
    assert "not distinguishable: spectral-subtraction (" in " ".join(line.strip() for line in lines[4:6])
    by_engine = {line.split()[0]: line for line in lines[2:4]}
    for result in stored:
        stats = result["metrics"]["si_sdri"]
        assert f"{fmt(stats['mean'], 2)} [{fmt(stats['mean_ci95'][0], 2)}, {fmt(stats['mean_ci95'][1], 2)}]" in by_engine[result["engine"]]
        assert result["clips"] == 3
    assert lines[-1] == f"report: {folder / 'report.md'}"
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "numpy" in imported and not any(name.split(".")[0] == "librosa" for name in imported)
    # Not a terminal: plain progress lines on stderr, ending with "done".
    assert any(line.startswith("nsbench: spectral-subtraction: 3/3 clips,") and "done in" in line for line in run.stderr.splitlines())


def test_verbose_prints_the_report_before_the_summary(tmp_path, capsys):
    data = make_folder_dataset(tmp_path / "set", count=2)
    argv = ["--dataset", "folder", "--data-folder", str(data), "--plugin", EXAMPLE_PLUGIN, "--engine", "spectral-subtraction",
            "--jobs", "1", "--no-html", "--no-plots", "--verbose",
            "--results-folder", str(tmp_path / "results"), *METRICS]
    assert main(argv) == 0
    out = capsys.readouterr().out
    report = (tmp_path / "results" / "folder" / "report.md").read_text()
    assert out.startswith(report)
    assert out[len(report):].startswith("\nnsbench folder: 2 clips; si_sdri (dB, higher is better)")  # print adds the blank line


def test_the_summary_marks_oracles_and_names_flags_and_worse_engines():
    def result(engine, mean, verdict, oracle=False, flags=None):
        return {
            "engine": engine, "clips": 10, "failures": 0, "stoi": 0.9, "rtf": 0.01,
            "metrics": {"si_sdri": {"mean": mean, "mean_ci95": [mean - 1, mean + 1]}},
            "worst_cell": {"cell": {"noise": "babble"}, "metric": "si_sdri", "mean": mean - 2},
            "metric_definitions": {"si_sdri": {"unit": "dB", "higher_is_better": True}},
            "engine_info": {"oracle": oracle}, "flags": flags or {},
            "comparisons": {"passthrough": {"si_sdri": {"all": {"verdict": verdict, "mean_difference": mean, "p_value": 0.01, "n": 10,
                                                     "hodges_lehmann": mean - 0.5, "hl_ci95": [mean - 1, mean + 1]}}}},
        }

    results = [
        result("passthrough", 0.0, "", flags={}) | {"comparisons": {}},
        result("good", 5.0, "better"),
        result("bad", -1.5, "worse", flags={"silent": {"clips": ["a", "b"], "description": "silent"},
                                          "clipped": {"clips": ["b"], "description": "clipped"}}),
        result("oracle-x", 12.0, "better", oracle=True),
    ]
    lines = summary_text("demo", results, [Path("r/report.md"), Path("r/report.html")]).splitlines()
    rows = {line.split()[0]: line for line in lines[2:6]}
    assert rows["oracle-x"].startswith("oracle-x [oracle]") and "[oracle]" not in rows["good"]
    assert "2 clips" in rows["bad"] and "babble (-3.50)" in rows["bad"]
    unwrapped = "\n".join(lines).replace("\n  ", " ").splitlines()  # long lines wrap at 100 characters
    assert ("better than passthrough (paired Wilcoxon, p < 0.05): good (mean +5.00, HL +4.50 [4.00, 6.00]), "
            "oracle-x (mean +12.00, HL +11.50 [11.00, 13.00]); worse: bad (mean -1.50, HL -2.00 [-2.50, -0.50])") in unwrapped
    assert "flags: bad silent x2, clipped x1" in unwrapped
    assert max(len(line) for line in lines) <= 100
    assert lines[-2:] == ["report: r/report.md", "        r/report.html"]


# --------------------------------------------------------------------------- progress


def test_plain_progress_prints_a_line_per_interval_and_one_at_the_end():
    now = [0.0]
    stream = io.StringIO()
    progress = PlainProgress(10, "speex", stream, interval=10.0, clock=lambda: now[0])
    for _ in range(4):
        now[0] += 3.0  # 4 clips in 12 s: one line, after the 10 s mark
        progress.update()
    for _ in range(6):
        now[0] += 1.0
        progress.update()
    progress.close()
    progress.close()  # once only
    assert stream.getvalue().splitlines() == [
        "nsbench: speex: 4/10 clips, 0.33 clips/s, ETA 18 s",
        "nsbench: speex: 10/10 clips, 0.56 clips/s, done in 18.0 s",
    ]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_rate_and_eta_and_a_pipe_gets_lines():
    bar = engine_progress(5, "speex", quiet=False, stream=Terminal())
    assert isinstance(bar, tqdm) and not bar.disable
    bar.update(2)
    shown = str(bar)
    bar.close()
    assert "speex" in shown and "2/5" in shown and "clip/s" in shown and "<" in shown  # elapsed<remaining
    assert isinstance(engine_progress(5, "speex", quiet=False, stream=io.StringIO()), PlainProgress)
    quiet = engine_progress(5, "speex", quiet=True, stream=Terminal())
    assert isinstance(quiet, NoProgress)


def test_quiet_and_logged_runs_do_not_import_tqdm():
    """Only a bar on a terminal needs tqdm (~35 ms of start-up); messages go
    through progress.say, which uses tqdm.write only when a bar may be drawn."""
    code = (
        "import io, sys\n"
        "from nsbench.run.progress import engine_progress, say\n"
        "engine_progress(3, 'speex', quiet=True).update()\n"
        "engine_progress(3, 'speex', quiet=False, stream=io.StringIO()).close()\n"
        "say('nsbench: a message')\n"
        "import nsbench.cli\n"
        "print('tqdm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "False" and done.stderr == "nsbench: a message\n"


# --------------------------------------------------------------------------- which clips the grid holds


def record(engine: str, clip: str, value: float | None, noise: str = "white", flags: tuple[str, ...] = ()) -> ClipRecord:
    scores = {} if value is None else {"si_sdri": value}
    return ClipRecord(engine=engine, clip_id=clip, labels={"noise": noise}, scores=scores, flags=list(flags))


def grid_inputs(values: dict[str, dict[str, float]], flags: dict[tuple[str, str], tuple[str, ...]] = {}):
    """Records and results as a run makes them: ``values[engine][clip]``; babble for clips named b*."""
    records = {
        engine: [record(engine, clip, value, "babble" if clip.startswith("b") else "white", flags.get((engine, clip), ()))
                 for clip, value in by_clip.items()]
        for engine, by_clip in values.items()
    }
    results = []
    for engine, engine_records in records.items():
        cells = {}
        for r in engine_records:
            cells.setdefault(r.labels["noise"], []).append(r.scores["si_sdri"])
        worst = min(cells, key=lambda cell: sum(cells[cell]) / len(cells[cell]))
        raised = {}
        for r in engine_records:
            for name in r.flags:
                raised.setdefault(name, {"clips": [], "description": name})["clips"].append(r.run_id)
        results.append({"engine": engine, "worst_cell": {"cell": {"noise": worst}}, "flags": raised})
    return results, records


def test_the_grid_holds_each_engines_worst_its_worst_cell_flags_and_typical_clips():
    base = {**{f"w{i}": float(i) for i in range(6)}, "b0": -1.0, "b1": -0.5, "b2": 0.0, "b3": 0.2}
    clips = list(base)
    values = {
        "passthrough": {clip: 0.0 for clip in clips},
        "alpha": {**base, "w3": -9.0},  # worst overall: w3; worst cell: babble (mean -0.33), where b0 is lowest
        "beta": {**base, "w5": -4.0},  # worst: w5
    }
    results, records = grid_inputs(values, flags={("beta", "b3"): ("silent",)})
    chosen = listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=True)
    assert chosen["w3"] == ["worst of alpha"]
    assert chosen["w5"] == ["worst of beta"]
    assert chosen["b0"] == ["worst in alpha's worst cell (noise=babble)", "worst in beta's worst cell (noise=babble)"]
    assert chosen["b3"] == ["beta: silent"]
    typical = [clip for clip, why in chosen.items() if why == ["typical (near the median over engines)"]]
    assert len(typical) == listening_grid.TYPICAL_ROWS
    assert list(chosen)[:4] == ["w3", "w5", "b0", "b3"]  # the order of interest, worst first
    # The passthrough is no one's "worst" (every clip is 0 for it).
    assert not any("passthrough" in why for reasons in chosen.values() for why in reasons)


def test_the_grid_is_bounded_and_has_at_least_four_rows_where_the_set_has_them():
    many = {f"c{i:02d}": float(i) for i in range(40)}
    engines = {f"e{k}": {clip: value + (-50 if clip == f"c{k + 10:02d}" else 0) for clip, value in many.items()} for k in range(12)}
    results, records = grid_inputs(engines)
    chosen = listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=True, limit=10)
    assert len(chosen) == 10 and sum(why == ["typical (near the median over engines)"] for why in chosen.values()) == 2
    few = {"e": {"c0": 1.0, "c1": 2.0, "c2": 3.0, "c3": 4.0, "c4": 5.0, "c5": 6.0}}
    results, records = grid_inputs(few)
    assert len(listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=True)) >= listening_grid.MIN_ROWS


def test_lower_is_better_headlines_pick_the_highest_as_worst():
    values = {"e": {"w0": 1.0, "w1": 9.0, "w2": 5.0, "w3": 4.0, "w4": 3.0}}
    results, records = grid_inputs(values)
    chosen = listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=False)
    assert chosen["w1"][0] == "worst of e"


# --------------------------------------------------------------------------- spectrograms


def test_a_row_of_spectrograms_shares_one_colour_scale(tmp_path):
    """A quieter copy of a signal is darker beside it, and on its own row
    looks like the loud one: the scale is the row's, not each image's."""
    import numpy as np
    from PIL import Image

    from nsbench.report.spectrograms import draw_row
    from tests.helpers.audio import tone_and_noise

    clean, noise = tone_and_noise(0)
    loud = clean + noise
    draw_row([loud, 0.1 * loud], 16000, [tmp_path / "loud.png", tmp_path / "quiet.png"])
    draw_row([0.1 * loud], 16000, [tmp_path / "alone.png"])

    def brightness(name: str) -> float:
        image = Image.open(tmp_path / name)
        assert image.size == (240, 120)
        return float(np.asarray(image.convert("L"), dtype=np.float64).mean())

    assert brightness("quiet.png") < brightness("loud.png") - 20
    assert brightness("alone.png") == pytest.approx(brightness("loud.png"), abs=2)
