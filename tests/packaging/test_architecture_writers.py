"""One writer for every file: each file name nsbench writes (report.md,
ranking.json, listening-key.json ...) is written by one module, so no file is
written by one part of a run and rewritten by another (issue 38: the listening
test's section once rewrote report.md and report.html after the results
writer had, without an atomic write).

The check reads the code: a call that writes (Path.write_text, an atomic
helper, savefig ...) names the file it writes in its path, as a string, a
module constant (RANKING_FILE) or a local variable set to one in the same
function; the names so found are mapped to the modules that write them.
(That every write is atomic is tests/packaging/test_architecture.py's check.)
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import nsbench

PACKAGE = Path(nsbench.__file__).parent
# A file's name as the code spells it: letters, digits, dots and dashes, with an extension.
FILE_NAME = re.compile(r"^[\w.-]+\.(md|html|json|jsonl|tex|png|js|css|wav|txt|csv)$")
# Path methods whose receiver is the file written (unless called on a module: atomic.write_text(path, ...)).
PATH_METHODS = {"write_text", "write_bytes", "open", "touch"}
# Calls whose first argument is the file written.
WRITE_CALLS = {"write_text", "write_bytes", "write_json", "write_atomically", "write_with", "write_audio", "write_wav",
               "savefig", "save", "write_markdown", "write_html", "symlink"}
READ_MODES = {"r", "rb", "rt"}


def constants(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module-level NAME = "file.ext" (or NAME, OTHER = "a.md", "b.json") across the package: name -> values."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in package.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name, value in pairs(target, node.value):
                        if isinstance(value, ast.Constant) and isinstance(value.value, str) and FILE_NAME.match(value.value):
                            found[name].add(value.value)
    return found


def pairs(target: ast.AST, value: ast.AST) -> list[tuple[str, ast.AST]]:
    """(name, value) for ``a = x`` and ``a, b = x, y``."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return [item for t, v in zip(target.elts, value.elts) for item in pairs(t, v)]
    return []


def names_in(expression: ast.AST, local: dict[str, ast.AST], known: dict[str, set[str]], seen: frozenset = frozenset()) -> set[str]:
    """The file names ``expression`` spells: strings, module constants, and local variables set to either."""
    found = set()
    for node in ast.walk(expression):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and FILE_NAME.match(node.value):
            found.add(node.value)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in local and name not in seen:
            found |= names_in(local[name], local, known, seen | {name})
        elif name in known:
            found |= known[name]
    return found


def written_path(call: ast.Call, modules: set[str]) -> ast.AST | None:
    """The expression naming the file a call writes, or None if it writes none."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    on_module = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules
    if name in PATH_METHODS and isinstance(func, ast.Attribute) and not on_module:
        mode = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if name == "open" and (mode is None or isinstance(mode, ast.Constant) and mode.value in READ_MODES):
            return None
        return func.value
    if name in WRITE_CALLS and call.args:
        return call.args[0]
    return None


def files_written(source: str, known: dict[str, set[str]]) -> set[str]:
    """The file names a module's writes name, function by function."""
    tree = ast.parse(source)
    modules = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
               if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    found = set()
    for function in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        local = {name: value for node in ast.walk(function) if isinstance(node, ast.Assign)
                 for target in node.targets for name, value in pairs(target, node.value)}
        for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
            path = written_path(call, modules)
            if path is not None:
                found |= names_in(path, local, known)
    return found


def writers(package: Path = PACKAGE) -> dict[str, set[str]]:
    """File name -> the modules (paths relative to the package) that write it."""
    known = constants(package)
    owners: dict[str, set[str]] = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        for name in files_written(path.read_text(), known):
            owners[name].add(path.relative_to(package).as_posix())
    return owners


def test_every_file_nsbench_writes_has_one_writer_module():
    owners = writers()
    shared = {name: sorted(modules) for name, modules in owners.items() if len(modules) > 1}
    assert not shared, "files written by more than one module (give each one owner):\n" + "\n".join(
        f"{name}: {', '.join(modules)}" for name, modules in sorted(shared.items()))


def test_the_results_folder_files_are_found_with_their_owners():
    """The check sees the writes it guards, so it cannot pass by seeing none."""
    owners = writers()
    assert owners["report.md"] == owners["report.html"] == {"report/report_pages.py"}
    assert owners["ranking.json"] == owners["comparison.json"] == owners["agreement.json"] == {"report/writer.py"}
    assert owners["listening-results.json"] == owners["listening-results.md"] == {"listen/collect.py"}
    assert owners["listening-key.json"] == {"listen/build.py"}


# What nsbench.listen.report_section did before issue 38: rewrite the reports the results writer had written.
SECOND_WRITER = '''
from pathlib import Path

RESULTS_MD = "listening-results.md"


def include(folder: Path) -> None:
    md = folder / RESULTS_MD
    report = folder / "report.md"
    if report.is_file():
        report.write_text(replace_between(report.read_text(), md.read_text().rstrip(), ""))
    page = folder / "report.html"
    if page.is_file():
        page.write_text(replace_between(page.read_text(), "section", "</body>"))
'''


def test_the_check_finds_a_second_writer_of_a_report(tmp_path):
    (tmp_path / "writer.py").write_text('import atomic\n\ndef finish(folder, text):\n    atomic.write_text(folder / "report.md", text)\n')
    (tmp_path / "section.py").write_text(SECOND_WRITER)
    owners = writers(tmp_path)
    assert owners["report.md"] == {"writer.py", "section.py"}
    assert owners["report.html"] == {"section.py"}
    assert "listening-results.md" not in owners  # read there, not written


def test_reads_and_module_calls_are_not_writes():
    known = {"KEY": {"key.json"}}
    source = ('import atomic, json\n\ndef f(folder):\n    text = (folder / "a.md").read_text()\n'
              '    with open(folder / KEY) as file:\n        json.load(file)\n    atomic.write_text(folder / "b.md", text)\n'
              '    (folder / "c.json").open("w")\n')
    assert files_written(source, known) == {"b.md", "c.json"}
