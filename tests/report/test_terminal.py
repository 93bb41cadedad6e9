"""What a run prints: the summary on stdout and nothing more (nsbench.report.terminal)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nsbench.cli import main
from nsbench.report.tables import fmt
from nsbench.report.terminal import summary_text

from tests.helpers.audio import make_folder_dataset
from tests.helpers.paths import REPO_ROOT
from tests.cli.test_cli import EXAMPLE_PLUGIN


METRICS = ["--metric", "si_sdr_input", "--metric", "si_sdr", "--metric", "si_sdri", "--metric", "stoi"]


def stored_results(folder: Path) -> list[dict]:
    return [r for r in (json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))) if "engine" in r]


@pytest.mark.slow
def test_stdout_is_the_summary_and_nothing_more_and_draws_nothing_without_html(tmp_path, view):
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
    folder = (results / "folder").resolve()  # the run's own folder, which results/folder links
    stored = stored_results(folder)
    lines = run.stdout.splitlines()
    ranking = json.loads((folder / "ranking.json").read_text())
    assert run.stdout == summary_text("folder", stored, [folder / "report.md"], ranking=ranking, view=view) + "\n"
    # title (wrapped), table header, 2 ranked engines, what p(best) is, the verdicts (3 clips: not distinguishable;
    # wrapped), the flags, the report's path
    assert [line.split(" ")[0] for line in lines] == [
        "nsbench", "", "rank", "1", "1", "p(best):", "better", "", "flags:", "report:"], run.stdout
    assert "not distinguishable: spectral-subtraction (" in " ".join(line.strip() for line in lines[6:8])
    by_engine = {line.split()[4]: line for line in lines[3:5]}  # after "1 [1, 2]" and p(best)
    assert set(by_engine) == {"passthrough", "spectral-subtraction"}
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
    summary = out[len(report):]
    assert summary.startswith("\nnsbench folder: 2 clips; ranked by URGENT's rule on intrusive (si_sdri, ")  # print adds the blank line
    assert "si_sdri (dB, higher is better): mean [95% CI] over clips" in " ".join(summary.splitlines()[1:3])  # wrapped


def test_the_summary_marks_oracles_and_names_flags_and_worse_engines(view):
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
    lines = summary_text("demo", results, [Path("r/report.md"), Path("r/report.html")], view=view).splitlines()
    rows = {line.split()[0]: line for line in lines[2:6]}
    assert rows["oracle-x"].startswith("oracle-x [oracle]") and "[oracle]" not in rows["good"]
    assert "2 clips" in rows["bad"] and "babble (-3.50)" in rows["bad"]
    unwrapped = "\n".join(lines).replace("\n  ", " ").splitlines()  # long lines wrap at 100 characters
    # Largest effect first: the oracle's +11.50 before good's +4.50.
    assert ("better than passthrough (paired Wilcoxon, p < 0.05): oracle-x (mean +12.00, HL +11.50 [11.00, 13.00]), "
            "good (mean +5.00, HL +4.50 [4.00, 6.00]); worse: bad (mean -1.50, HL -2.00 [-2.50, -0.50])") in unwrapped
    assert "flags: bad silent x2, clipped x1" in unwrapped
    assert max(len(line) for line in lines) <= 100
    assert lines[-2:] == ["report: r/report.md", "        r/report.html"]
