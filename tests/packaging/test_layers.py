"""The layers of nsbench, package by package: each package of nsbench/ (a
subpackage, or a top-level module such as nsbench/cli.py) imports only
packages of lower layers, so there is no circle among them; run and report
sit side by side and neither imports the other (the session above uses both).

The edges are test_architecture's: every import statement in a module,
including those inside functions and under ``if TYPE_CHECKING`` (a lazy import
hides a circle, it does not remove it). The built-in adapters (engines/,
datasets/, ... at the repository's root) are plugins outside nsbench/, loaded
by name: they are not counted here. docs/architecture.md describes the same
layers, top down.
"""
from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import pytest

from nsbench.audio import checks
from nsbench.report import writer
from nsbench.session import engine_turn
from tests.packaging.test_architecture import REPO_ROOT, circles, import_graph, module_files

ROOT = "nsbench"  # nsbench/__init__.py: the plugin API's names (nothing inside nsbench imports it)
# Bottom up. A package imports only packages of layers below its own.
LAYERS = (
    {"nsbench.text", "nsbench.synth", "nsbench.record_terms", "nsbench.builtin", "nsbench.version"},
    {"nsbench.plugins"},
    {"nsbench.ranking", "nsbench.store", "nsbench.external", "nsbench.model_files", "nsbench.ratings", "nsbench.listing"},
    {"nsbench.audio", "nsbench.config"},
    {"nsbench.run", "nsbench.report", "nsbench.recognition"},
    {"nsbench.session", ROOT, "nsbench.adapters", "nsbench.rank_command", "nsbench.testing"},
    {"nsbench.flags"},
    {"nsbench.listen"},
    {"nsbench.cli"},
)


def package_of(module: str) -> str:
    """nsbench.run.clips -> nsbench.run; nsbench.cli -> nsbench.cli; nsbench -> nsbench."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the other packages its modules import."""
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(package_of(module), set()).update(package_of(target) for target in targets)
    return {package: targets - {package} for package, targets in packages.items()}


@pytest.fixture(scope="module")
def packages() -> dict[str, set[str]]:
    return package_graph(import_graph(module_files(builtins=None)))


def layer_of(package: str) -> int:
    return next(index for index, layer in enumerate(LAYERS) if package in layer)


def upward(packages: dict[str, set[str]]) -> list[str]:
    """Imports of a package in the same layer or above."""
    return [f"{source} -> {target}" for source, targets in sorted(packages.items())
            for target in sorted(targets) if layer_of(target) >= layer_of(source)]


def test_the_package_graph_and_the_layer_check_see_a_circle(tmp_path):
    graph = {"pkg.a.x": {"pkg.b.y"}, "pkg.b.y": {"pkg.c"}, "pkg.c": {"pkg.a.z"}, "pkg.a.z": set()}
    assert package_graph(graph) == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}}
    assert circles(package_graph(graph)) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    # A lazy import of report from run is an upward edge like any other.
    assert upward({"nsbench.run": {"nsbench.report", "nsbench.audio"}, "nsbench.report": set()}) == ["nsbench.run -> nsbench.report"]


def test_every_package_has_a_layer(packages):
    placed = set().union(*LAYERS)
    assert set(packages) <= placed, f"put these in LAYERS (and docs/architecture.md): {sorted(set(packages) - placed)}"
    assert placed <= set(packages), f"gone from nsbench/: {sorted(placed - set(packages))}"


def test_each_package_imports_only_lower_layers(packages):
    found = upward(packages)
    assert not found, "imports that go up a layer (or across one):\n" + "\n".join(found)


def test_run_and_report_do_not_import_each_other_and_only_the_session_uses_both(packages):
    assert "nsbench.report" not in packages["nsbench.run"] and "nsbench.session" not in packages["nsbench.run"]
    assert "nsbench.run" not in packages["nsbench.report"] and "nsbench.session" not in packages["nsbench.report"]
    assert "nsbench.listen" not in packages["nsbench.report"]  # the listening test reads results; the report never calls it
    assert {"nsbench.run", "nsbench.report"} <= packages["nsbench.session"]


def test_no_package_level_circle_in_nsbench_at_all(packages):
    found = circles(packages)
    assert not found, "package circles:\n" + "\n".join(" -> ".join(circle) for circle in found)


def test_docs_architecture_names_every_package():
    text = (REPO_ROOT / "docs" / "architecture.md").read_text()
    missing = [package for layer in LAYERS for package in sorted(layer)
               if f"`{Path(*package.split('.')).as_posix()}" not in text]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_each_flag_is_defined_by_the_module_that_acts_on_it():
    """A run flag defined in report (--align-constant-lag was, in report/writer.py) is gone."""
    owners = {engine_turn: ({"--align-constant-lag"}, engine_turn.align_constant_lag, "align_constant_lag"),
              checks: ({"--voice-drop-db"}, checks.score_flags, "voice_drop_db"),
              writer: ({"--compare", "--compare-tolerance", "--no-plots", "--no-html"}, None, "")}
    for module, (flags, acting, option) in owners.items():
        parser = argparse.ArgumentParser(add_help=False)
        module.add_arguments(parser)
        assert {flag for action in parser._actions for flag in action.option_strings} == flags, module.__name__
        if acting is not None:
            assert option in inspect.getsource(acting), f"{module.__name__} defines {flags} but does not read {option}"
