"""The built-in adapters use only the public API: ``nsbench``, ``nsbench.adapters``
and each other (``nsbench.builtin.*``), counting imports inside functions; and
every exported name resolves."""
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


def internal_imports(path: Path) -> list[str]:
    return [module for module in nsbench_imports(path)
            if module not in PUBLIC_MODULES and not module.startswith("nsbench.builtin.") and module != "nsbench.builtin"]


def adapter_files() -> list[Path]:
    return sorted(path for folder in ADAPTER_FOLDERS for path in (REPO_ROOT / folder).rglob("*.py"))


def test_the_built_in_adapters_import_only_the_public_api():
    offending = {str(path.relative_to(REPO_ROOT)): internal_imports(path) for path in adapter_files()}
    assert {path: modules for path, modules in offending.items() if modules} == {}


def test_the_walker_sees_imports_inside_functions(tmp_path):
    # The check must not pass by missing the imports that hide in functions.
    module = tmp_path / "adapter.py"
    module.write_text("import nsbench\n\ndef f():\n    from nsbench.store.cache import cache_root\n    from nsbench import remix\n")
    assert internal_imports(module) == ["nsbench.store.cache", "nsbench.remix"]


@pytest.mark.parametrize("name", nsbench.__all__)
def test_every_public_name_resolves(name):
    assert getattr(nsbench, name) is not None


@pytest.mark.parametrize("name", adapters.__all__)
def test_every_adapter_helper_resolves_to_its_module_s_object_and_says_what_it_is_for(name):
    module, attribute, purpose = adapters.EXPORTS[name]
    assert getattr(adapters, name) is getattr(importlib.import_module(module), attribute)
    assert purpose and "\n" not in purpose


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
