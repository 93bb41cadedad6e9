"""Digests: how nsbench hashes bytes, files and code, for the cache's keys
(nsbench.store.keys) and everything else keyed by content (reference
features, transcripts, remixes, condition outputs).

"Code" is a module's source file and those of every module it imports from
nsbench or from its own package, transitively (read from its import
statements at module level: a function's own import is lazy on purpose, for
a heavy or optional package, and following those would key an engine's
outputs on the report code): a change to the SI-SDR maths
(``nsbench/audio/sdr.py``) gives the SI-SDR metrics and the output checks new keys.

This module imports nothing from nsbench, so any module may use it.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator


def digest(*parts: bytes | str) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "little"))  # no two part lists hash alike
        hasher.update(data)
    return hasher.hexdigest()


def file_digest(path: str | Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def json_text(value: Any) -> str:
    """Options as hashed: the same options give the same text in any order."""
    return json.dumps(value, sort_keys=True, default=repr)


def files_digest(paths: Iterable[str | Path]) -> str:
    """For an engine's fingerprint: the contents of those of ``paths`` that are
    files (a program, a script, a model), so a rebuilt binary gets new keys."""
    return digest(*(f"{path}:{file_digest(path)}" for path in paths if os.path.isfile(path)))


def nsbench_digest(names: Iterable[str]) -> str:
    """The contents of nsbench's own files, named relative to the package folder."""
    package = Path(__file__).parents[1]
    return digest(*(file_digest(package / name) for name in names))


def files_content_digest(paths: Iterable[str]) -> str:
    """Contents only: the same code keys alike in any checkout or install."""
    # Looked up at call time, so a test can stand in for an edited file.
    return digest(*(file_digest(path) for path in paths))


# ------------------------------------------------------------------------ code


def code_digest(obj: Any) -> str:
    """The code of the module defining ``obj`` (a function, a class; through
    functools.partial, every callable bound), hashed: its file and the files
    it imports (code_files); "" when it has none (a builtin), so then its name
    and version alone identify it."""
    if isinstance(obj, functools.partial):
        return digest(*(code_digest(part) for part in (obj.func, *obj.args) if callable(part)))
    module = inspect.getmodule(obj)
    if module is None:
        return ""
    return files_content_digest(code_files(module.__name__))


def code_files(module_name: str) -> list[str]:
    """The source file of the module and, transitively, of every module it
    imports from nsbench or from its own top-level package."""
    follow = {"nsbench", module_name.partition(".")[0]}
    found: dict[str, str | None] = {}
    pending = [module_name]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found[name] = path = source_file(name)
        if path is not None:
            pending += [dep for dep in imported_modules(path, name) if dep.partition(".")[0] in follow]
    # In module-name order: the same in a checkout and once installed.
    return list(dict.fromkeys(path for _, path in sorted(found.items()) if path))


def source_file(module_name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec else None
    return origin if origin and origin.endswith(".py") and os.path.isfile(origin) else None


@functools.lru_cache(maxsize=None)
def imported_modules(path: str, module_name: str) -> tuple[str, ...]:
    """The modules a source file imports when it is imported (module level,
    class bodies and conditional blocks; not inside functions); ``from
    package import name`` counts as the submodule where ``name`` is one,
    else as the package."""
    tree = ast.parse(Path(path).read_text(), filename=path)
    package = module_name if path.endswith("__init__.py") else module_name.rpartition(".")[0]
    names: list[str] = []
    for node in import_time_nodes(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute_base(node, package)
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names if source_file(f"{base}.{alias.name}")]
    return tuple(dict.fromkeys(name for name in names if name))


def absolute_base(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` names, relative imports resolved
    against ``package`` (the importing module's package)."""
    base = node.module or ""
    if node.level:  # relative: from the package, up level - 1
        parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        base = f"{parent}.{base}" if base else parent
    return base


def import_time_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes run when a module is imported: function bodies are skipped."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield child
            yield from import_time_nodes(child)
