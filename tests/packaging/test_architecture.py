"""The shape of the code: no import circles inside nsbench (counting the
imports inside functions, which hide a circle without removing it), no module
over MAX_LINES, and one way to put a file in place (nsbench.store.atomic)."""
from __future__ import annotations

import ast
from pathlib import Path

import nsbench

PACKAGE = Path(nsbench.__file__).parent
REPO_ROOT = PACKAGE.parent
MAX_LINES = 400
BUILTIN_FOLDERS = ("engines", "datasets", "metrics", "conditions")
# Where files are written: the core and the built-in adapters.
WRITING_CODE = [PACKAGE, *(REPO_ROOT / folder for folder in BUILTIN_FOLDERS)]
ATOMIC_HELPER = PACKAGE / "store" / "atomic.py"
# Renames that write nothing: each with why it is not a write.
NOT_WRITES = {
    "nsbench/store/eviction.py": "os.rename",  # --clear-cache moves the whole cache folder aside, then deletes it
}


def module_files(package: Path = PACKAGE, builtins: Path | None = REPO_ROOT) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own
    name), and the built-in adapters in ``builtins`` under the names they are
    imported by (engines/rnnoise.py: nsbench.builtin.engines.rnnoise)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for folder in BUILTIN_FOLDERS if builtins else ():
        for path in sorted((builtins / folder).glob("*.py")):
            modules[f"nsbench.builtin.{folder}.{path.stem}"] = path
    return modules


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The nsbench module ``name`` is, or is in (``a.b.Func`` -> ``a.b``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the nsbench modules it imports, anywhere in its file.
    ``from a import b`` is an edge to the submodule a.b where b is one, else
    to a; the packages above a module are not edges (Python runs their
    __init__ first, but that alone makes no circle)."""
    graph = {}
    for module, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets |= node_targets(node, module, path.name == "__init__.py", modules)
        graph[module] = targets - {module}
    return graph


def node_targets(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    """The modules one import statement names (none for any other node)."""
    if isinstance(node, ast.Import):
        return {target for alias in node.names if (target := resolve(alias.name, modules))}
    if not isinstance(node, ast.ImportFrom):
        return set()
    package = module if is_package else module.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        base = f"{parent}.{base}" if base else parent
    targets = set()
    for alias in node.names:
        target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else resolve(base, modules)
        if target:
            targets.add(target)
    return targets


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Circles (a -> b -> ... -> a), the shortest through each module not on one found already."""
    found, seen = [], set()
    for start in sorted(graph):
        if start in seen:
            continue
        path = shortest_path_back(graph, start)
        if path:
            found.append(path)
            seen |= set(path)
    return found


def shortest_path_back(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """start -> ... -> start by breadth-first search, or None."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(graph[module]):
                if target == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if target not in previous:
                    previous[target] = module
                    following.append(target)
        frontier = following
    return None


def test_the_circle_finder_finds_a_circle_through_a_function_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_and_from_packages_make_edges(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b  # a submodule\n")
    (package / "b.py").write_text("def late():\n    from pkg.c import name  # hidden in a function\n")
    (package / "c.py").write_text("import os\nfrom . import a as first  # relative\n")
    graph = import_graph(module_files(package, builtins=None))
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_nsbench_has_no_import_circle():
    found = circles(import_graph(module_files()))
    assert not found, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in found)


def test_no_module_is_over_the_line_limit():
    sizes = {path.relative_to(REPO_ROOT).as_posix(): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")}
    over = sorted((name, lines) for name, lines in sizes.items() if lines > MAX_LINES)
    assert not over, f"modules over {MAX_LINES} lines:\n" + "\n".join(f"{name}: {lines}" for name, lines in over)


# ------------------------------------------------------------------ atomic writes

RENAMES = {"replace", "rename", "move", "mkstemp", "NamedTemporaryFile"}


def hand_written_writes(path: Path) -> list[str]:
    """Calls that put a file in place by hand: os.replace/os.rename,
    shutil.move, tempfile.mkstemp/NamedTemporaryFile (also imported by name),
    and Path.replace/rename (one argument; str.replace takes two)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "shutil", "tempfile"):
            found += [f"{node.lineno}: from {node.module} import {a.name}" for a in node.names if a.name in RENAMES]
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in RENAMES:
            owner = func.value.id if isinstance(func.value, ast.Name) else ""
            by_module = owner in ("os", "shutil", "tempfile")
            by_path = func.attr in ("replace", "rename") and len(node.args) == 1 and not node.keywords
            if by_module or by_path:
                found.append(f"{node.lineno}: {ast.unparse(func)}(...)")
    return found


def test_the_check_sees_each_kind_of_hand_written_write(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os, tempfile\nfrom pathlib import Path\nfrom os import replace\n"
        "os.replace('a', 'b')\nPath('a').rename('b')\ntemporary.replace(path)\ntempfile.mkstemp()\n"
        "'text'.replace('a', 'b')\n"
    )
    assert len(hand_written_writes(sample)) == 5  # not str.replace


def test_every_writer_goes_through_the_atomic_helper():
    offenders = {
        path.relative_to(REPO_ROOT).as_posix(): found
        for folder in WRITING_CODE
        for path in sorted(folder.rglob("*.py"))
        if path != ATOMIC_HELPER and (found := hand_written_writes(path))
    }
    for name, call in NOT_WRITES.items():
        remaining = [line for line in offenders.get(name, []) if f" {call}(" not in line]
        assert len(remaining) < len(offenders.get(name, [None])), f"{name} no longer calls {call}: drop it from NOT_WRITES"
        offenders.pop(name) if not remaining else offenders.__setitem__(name, remaining)
    assert not offenders, "write through nsbench.store.atomic instead:\n" + "\n".join(
        f"{name}:{line}" for name, lines in offenders.items() for line in lines
    )
