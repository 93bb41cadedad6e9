"""``main(argv, plugins=...)``: a test hands the CLI its plugin objects, which
count for that call alone (a fresh plugin manager each call, as in pluggy's
and llm's tests), and nothing of one run stays in the process for the next."""
from __future__ import annotations

from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import Column, EngineSpec, MetricSpec
from tests.helpers.audio import make_folder_dataset


class Copy:
    sample_rate, delay = None, 0

    def process(self, audio):
        return audio

    def close(self):
        pass


class HandedIn:
    """An engine that passes its input through and a metric with its own column: what the reports place by spec."""

    @hookimpl
    def register_engines(self, register):
        register(EngineSpec(name="handed-in", factory=lambda options: Copy(), description="test: a copy",
                            sample_rate=None, delay=0, default=False, passes_input_through=True))

    @hookimpl
    def register_metrics(self, register):
        register(MetricSpec(name="handed_score", func=lambda inputs: 1.0, unit="", higher_is_better=True,
                            description="test: one", ignores="everything", needs_voice=False, default=False,
                            columns={"handed_score": Column("Handed", 3, 99)}))


def test_plugins_handed_to_main_count_for_that_call_alone(capsys):
    assert main(["--list", "engines"], plugins=[HandedIn()]) == 0
    assert "handed-in" in capsys.readouterr().out
    assert main(["--list", "engines"]) == 0
    assert "handed-in" not in capsys.readouterr().out


def per_cell_header(folder) -> str:
    report = next(folder.glob("folder*/report.md")).read_text()
    return next(line for line in report.split("## Per cell")[1].splitlines() if line.startswith("| "))


def test_the_reports_place_by_the_runs_own_plugins_not_the_previous_runs(tmp_path):
    """The first run's reports show the plugin's column (its View travels in
    its plan); the second run, without the plugin, has no trace of it."""
    data = make_folder_dataset(tmp_path / "data", 2, seconds=0.5)
    flags = ["--dataset", "folder", "--data-folder", str(data), "--jobs", "1", "--quiet", "--no-plots", "--no-html",
             "--metric", "si_sdr"]
    assert main([*flags, "--engine", "handed-in", "--metric", "handed_score", "--results-folder", str(tmp_path / "with")],
                plugins=[HandedIn()]) == 0
    assert "| Handed |" in per_cell_header(tmp_path / "with")
    assert main([*flags, "--engine", "passthrough", "--results-folder", str(tmp_path / "without")]) == 0
    assert "Handed" not in per_cell_header(tmp_path / "without")
