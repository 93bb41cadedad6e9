"""The run loop's structure: no import circle between the run loop and its
executors, the flags parsed once into a frozen record (the parser's defaults
the only ones), a frozen plan beside one small changing state, engines given
only their own options, and one writer that writes each result file once."""
from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

import nsbench
from nsbench.store.digests import imported_modules
from nsbench.report import writer as results
from nsbench.cli import main
from nsbench.config import RunConfig

NSBENCH = Path(nsbench.__file__).parent


def imports_of(dotted: str) -> set[str]:
    """What ``run.clips`` or ``session.loop`` imports (a name under nsbench)."""
    package, _, module = dotted.rpartition(".")
    return set(imported_modules(str(NSBENCH / package / f"{module}.py"), f"nsbench.{dotted}"))


# Below the run's top (nsbench.session.loop, which chooses the executor once):
# one engine's turn, one engine over its clips, one clip, its scores.
LOOP_MODULES = ("session.engine_turn", "session.state", "session.plan", "run.runner", "run.engine_run", "run.clips", "run.scoring")


def test_the_run_loop_imports_no_execution_strategy():
    strategies = {"nsbench.run.executors", "nsbench.run.dask_executor", "nsbench.cli"}
    for module in LOOP_MODULES:
        assert not imports_of(module) & strategies, module
    assert "nsbench.run.executors" not in imports_of("run.dask_executor")
    # Both strategies run a clip through run.clips (Dask's workers by way of run.dask_worker).
    assert "nsbench.run.clips" in imports_of("run.executors") and "nsbench.run.clips" in imports_of("run.dask_worker")
    assert "nsbench.run.dask_worker" in imports_of("run.dask_executor")
    assert "nsbench.run.executors" in imports_of("session.loop")  # chosen in one place, at the top


def test_the_cli_parses_and_lists_and_the_run_lives_in_run():
    """cli.py hands a RunConfig to nsbench.session.loop; it holds no part of the run."""
    cli = set(imported_modules(str(NSBENCH / "cli.py"), "nsbench.cli"))
    assert "nsbench.session.loop" in cli
    assert not cli & {"nsbench.run.runner", "nsbench.session.engine_turn", "nsbench.run.executors", "nsbench.report.summary"}


def test_the_plan_is_frozen_and_the_changing_state_is_apart():
    from nsbench.session.plan import RunPlan
    from nsbench.session.state import RunState

    assert RunPlan.__dataclass_params__.frozen
    # What changes as the run goes is in RunState alone, and only that.
    assert {f.name for f in dataclasses.fields(RunState)} == {"warned", "built_ahead"}


class TwoPlugins:
    """Two engines from two plugins, each with a flag; each factory keeps what it received."""

    received: dict[str, dict] = {}

    class Gain(nsbench.Engine):
        def process(self, audio):
            return 0.5 * audio

    class First:
        @nsbench.hookimpl
        def add_arguments(self, parser):
            parser.add_argument("--first-level", type=float, default=1.0)

        @nsbench.hookimpl
        def register_engines(self, register):
            register(nsbench.EngineSpec(name="first", factory=lambda o: TwoPlugins.keep("first", o), description="",
                                        sample_rate=16000, delay=0))

    class Second:
        @nsbench.hookimpl
        def add_arguments(self, parser):
            parser.add_argument("--second-level", type=float, default=2.0)

        @nsbench.hookimpl
        def register_engines(self, register):
            register(nsbench.EngineSpec(name="second", factory=lambda o: TwoPlugins.keep("second", o), description="",
                                        sample_rate=16000, delay=0, seeded=True))

    @staticmethod
    def keep(name, options):
        TwoPlugins.received[name] = dict(options)
        return TwoPlugins.Gain()


def test_an_engine_receives_only_its_plugins_flags_and_the_seed(tmp_path, monkeypatch):
    written = Counter()
    real_write = results.write_json
    monkeypatch.setattr(results, "write_json", lambda path, payload: (written.update([Path(path).name]), real_write(path, payload)))
    argv = ["--engine", "first", "--engine", "second", "--first-level", "3", "--seeds", "4", "--limit", "2", "--jobs", "1",
            "--no-cache", "--quiet", "--no-plots", "--no-html", "--results-folder", str(tmp_path)]
    assert main(argv, plugins=[TwoPlugins.First(), TwoPlugins.Second()]) == 0
    assert TwoPlugins.received["first"] == {"first_level": 3.0, "seed": None}
    assert TwoPlugins.received["second"] == {"second_level": 2.0, "seed": 4}
    # One writer, each result file once (it was twice: after each engine, then with the comparisons); and the ranking once.
    assert written == Counter({"passthrough.json": 1, "first.json": 1, "second.json": 1, "ranking.json": 1})


def parsed_config(argv: list[str]) -> RunConfig:
    from nsbench.flags import build_parser
    from nsbench.plugins.manager import get_plugin_manager

    manager = get_plugin_manager([])
    return RunConfig.from_args(build_parser(manager).parse_args(argv), argv)


def test_the_run_configuration_is_frozen():
    config = dataclasses.replace(parsed_config([]), plugin_options={"p": {"x": 1}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.jobs = 4
    options = config.engine_options("p")
    options["x"] = 2  # a copy: an engine cannot change what the next one receives
    assert config.engine_options("p") == {"x": 1}


def test_the_parser_holds_the_only_defaults():
    """RunConfig had defaults of its own, and one disagreed with the parser's
    (jobs=1 against every usable core): now it has none."""
    from nsbench.flags import usable_cores

    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(RunConfig))
    assert parsed_config([]).jobs == usable_cores()
