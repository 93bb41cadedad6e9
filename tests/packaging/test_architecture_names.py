"""No core module names a plugin: the engine listed first, the table columns,
the figure beside the headline and the default headline come from fields on
the specs (nsbench.report.layout), so a string in nsbench/ that equals a
built-in plugin's name (an engine, dataset, metric or value, condition,
recogniser) is a core module knowing a plugin. Docstrings and comments may
name them; code may not."""
from __future__ import annotations

import ast
from pathlib import Path

from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry

CORE = Path(__file__).resolve().parents[2] / "nsbench"

# Words that are a built-in's name and also mean something of the core's own.
CORE_WORDS = {
    "none": "the core's own condition: no condition applied (nsbench.run.conditions.NONE)",
    "rtf_wall": "the results' top-level wall-clock RTF, the harness's timing beside rtf (a format key)",
    "python": "the interpreter's version in the provenance",
}
# Strings that equal a built-in's name but name something else, per module.
NOT_PLUGINS = {
    ("adapters/__init__.py", "si_sdr"), ("adapters/__init__.py", "snr"),  # the SI-SDR and SNR functions' export names
    ("adapters/signal.py", "si_sdr"), ("adapters/signal.py", "snr"),  # and their public module's __all__
}


def plugin_names() -> set[str]:
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    names = set()
    for kind in (registry.engines, registry.datasets, registry.metrics, registry.conditions, registry.recognisers):
        for record in kind:
            names.add(record.spec.name)
            names.update(getattr(record.spec, "values", None) or {})
    return names - set(CORE_WORDS)


def docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def named_in_code(path: Path, names: set[str]) -> set[str]:
    tree = ast.parse(path.read_text())
    skip = docstrings(tree)
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names and id(node) not in skip}


def test_no_core_module_names_a_builtin_plugin():
    names = plugin_names()
    assert {"passthrough", "stoi", "si_sdri", "rnnoise"} <= names  # the check looks for the right things
    found = set()
    for path in sorted(CORE.rglob("*.py")):
        if "builtin" not in path.relative_to(CORE).parts:  # the package the built-ins are imported as
            found |= {(path.relative_to(CORE).as_posix(), name) for name in named_in_code(path, names)}
    found -= NOT_PLUGINS
    assert found == set(), "core modules naming a plugin: read it from a spec field instead"


def test_the_check_sees_a_name_in_code_but_not_in_a_docstring(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Orders passthrough first."""\n# passthrough\nFIRST = "passthrough"\n')
    assert named_in_code(module, {"passthrough"}) == {"passthrough"}
    module.write_text('"""Orders passthrough first."""\n# passthrough\nFIRST = "x"\n')
    assert named_in_code(module, {"passthrough"}) == set()
