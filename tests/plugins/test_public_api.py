"""The built-in adapters use only the public API: ``nsbench``, ``nsbench.adapters``
and the helpers beside them in their own folder (``nsbench.builtin.datasets.*``
for a dataset), counting imports inside functions: no other folder's module (a
dataset never imports a metric) and nothing else of nsbench. Every exported
name resolves, lives in a public module that takes nothing from the run, the
report or the store, and docs/adapters.md lists exactly what is exported."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import nsbench
from nsbench import adapters

REPO_ROOT = Path(__file__).resolve().parents[2]
ADAPTER_FOLDERS = ("engines", "datasets", "metrics", "conditions")
PUBLIC_MODULES = {"nsbench", "nsbench.adapters"}
# What a public module may not take its exported names from: their insides move.
INTERNAL_LAYERS = ("nsbench.run", "nsbench.report", "nsbench.store")


def nsbench_imports(path: Path) -> list[str]:
    """Every nsbench module (or ``nsbench.<name>`` pulled from the package) the file imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "nsbench"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "nsbench":
            if node.module == "nsbench":  # from nsbench import X: X is a name of the API, or a submodule
                found += [name for name in (alias.name for alias in node.names) if name not in nsbench.__all__ and name != "adapters"]
            else:
                found.append(node.module)
    return [f"nsbench.{name}" if "." not in name and name != "nsbench" else name for name in found]


def internal_imports(path: Path, folder: str = "") -> list[str]:
    """What the file imports of nsbench beyond the public API and its own folder's helpers."""
    own = f"nsbench.builtin.{folder}" if folder else None  # ``from nsbench.builtin.datasets import generated_set`` too
    return [module for module in nsbench_imports(path)
            if module not in PUBLIC_MODULES and not (own and (module == own or module.startswith(own + ".")))]


def adapter_files() -> list[Path]:
    return sorted(path for folder in ADAPTER_FOLDERS for path in (REPO_ROOT / folder).rglob("*.py"))


def test_the_built_in_adapters_import_only_the_public_api():
    offending = {str(path.relative_to(REPO_ROOT)): internal_imports(path, path.relative_to(REPO_ROOT).parts[0])
                 for path in adapter_files()}
    assert {path: modules for path, modules in offending.items() if modules} == {}


def test_the_walker_sees_imports_inside_functions(tmp_path):
    # The check must not pass by missing the imports that hide in functions.
    module = tmp_path / "adapter.py"
    module.write_text("import nsbench\n\ndef f():\n    from nsbench.store.cache import cache_root\n    from nsbench import remix\n"
                      "    from nsbench.builtin.metrics.levels import segment_length\n    from nsbench.builtin import REPO_ROOT\n"
                      "    from nsbench.builtin.datasets.generated_set import MadeClip\n")
    assert internal_imports(module, "datasets") == [
        "nsbench.store.cache", "nsbench.remix", "nsbench.builtin.metrics.levels", "nsbench.builtin"]


@pytest.mark.parametrize("name", nsbench.__all__)
def test_every_public_name_resolves(name):
    assert getattr(nsbench, name) is not None
    defined_in = getattr(getattr(nsbench, name), "__module__", "") or ""
    assert not defined_in.startswith(INTERNAL_LAYERS), f"nsbench.{name} is {defined_in}'s: the run's, report's or store's insides move"


def test_the_package_imports_only_the_public_layers():
    """nsbench/__init__ imports the plugin layer, its version and the ranking
    rule (a helper library): never the store, whose reference module imports the
    plugin layer (the circle nsbench -> store.reference -> plugins -> nsbench)."""
    tree = ast.parse(Path(nsbench.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} - {"__future__"}
    assert all(module.startswith(("nsbench.plugins.", "nsbench.version", "nsbench.ranking")) for module in imported), imported
    reached = {}
    for path in sorted((Path(nsbench.__file__).parent / "plugins").glob("*.py")):
        modules = {module for module in nsbench_imports(path) if module != "nsbench.builtin"}  # registers the built-ins
        reached[path.name] = sorted(m for m in modules if m.startswith(INTERNAL_LAYERS) or m == "nsbench")
    assert {name: modules for name, modules in reached.items() if modules} == {}


@pytest.mark.parametrize("name", adapters.__all__)
def test_every_adapter_helper_resolves_to_its_module_s_object_and_says_what_it_is_for(name):
    module, attribute, purpose = adapters.EXPORTS[name]
    assert module in adapters.MODULES and attribute == name
    assert getattr(adapters, name) is getattr(importlib.import_module(module), attribute)
    assert name in importlib.import_module(module).__all__
    assert purpose and "\n" not in purpose
    defined_in = getattr(getattr(adapters, name), "__module__", "") or ""
    assert not defined_in.startswith(INTERNAL_LAYERS), f"{name} is {defined_in}'s: define it in {module}"


def public_bindings(path: Path) -> dict[str, str]:
    """name -> the module a public module takes it from ("" where it defines it), at its top level."""
    bound = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            bound.update({alias.asname or alias.name: node.module or "" for alias in node.names})
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound[node.name] = ""
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update({target.id: "" for target in targets if isinstance(target, ast.Name)})
    return bound


def test_the_public_modules_take_nothing_they_export_from_the_run_the_report_or_the_store():
    """A constant or a type alias has no __module__: the source says where it came from."""
    taken = {}
    for module in adapters.MODULES:
        bound = public_bindings(Path(importlib.import_module(module).__file__))
        exported = [name for name, (where, _, _) in adapters.EXPORTS.items() if where == module]
        taken.update({f"{module}.{name}": bound.get(name) for name in exported
                      if bound.get(name) is None or bound[name].startswith(INTERNAL_LAYERS)})
    assert taken == {}, "exported names not defined in their public module, or taken from an internal layer"
    assert public_bindings(Path(adapters.__file__).parent / "files.py")["cache_root"] == ""  # the check reads a wrapper as defined


def test_docs_list_exactly_what_is_public():
    """docs/adapters.md prints adapters.reference_markdown() whole, and a row for
    each of nsbench.__all__ and no other (its first table)."""
    reference = (REPO_ROOT / "docs" / "adapters.md").read_text()
    assert adapters.reference_markdown() in reference, "docs/adapters.md is stale: print nsbench.adapters.reference_markdown()"
    documented = {line.split("`")[1] for line in reference.split("## `nsbench.adapters`")[0].splitlines()
                  if line.startswith("| `")}
    assert documented == set(nsbench.__all__)
    listed = {line.split("`")[1] for line in reference.split("## `nsbench.adapters`")[1].split("\n## ")[0].splitlines()
              if line.startswith("| `")}
    assert listed == set(adapters.EXPORTS)


def test_importing_the_helpers_imports_none_of_them():
    # Light to import: a dataset reading audio never pays for espeak-ng or the recogniser.
    import subprocess
    import sys

    code = "import sys, nsbench.adapters; print(sorted(m for m in ('nsbench.synth.speech', 'nsbench.recognition', 'nsbench.model_files') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_stream_protocol_is_public_and_typed():
    import typing

    assert typing.get_type_hints(nsbench.Engine.stream)["return"] == typing.Optional[nsbench.Stream]
    assert isinstance(adapters.FrameStream(4, lambda frame: frame), nsbench.Stream)
