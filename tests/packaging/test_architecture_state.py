"""No process-wide state for the run (issue 38): no module of nsbench or of
the built-in adapters holds the run's registry, its view or its configuration
in a module global. A module global that is reassigned (a ``global``
statement) or a module-level container that is changed at run time
(``NAME[key] = ...``, ``NAME.append(...)``, ``NAME.clear()`` ...) is state;
the few that remain are listed in KEPT with why each may stay: a cache keyed
by content, or what a worker process or a signal handler holds by nature.
The registry's view travels in the run's plan (nsbench.report.layout.View),
the cache's cap in its configuration (RunConfig.cache_max_size)."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.packaging.test_architecture import PACKAGE, REPO_ROOT, module_files

MUTATORS = {"append", "extend", "update", "setdefault", "clear", "pop", "popitem", "add", "insert", "remove",
            "discard", "appendleft", "move_to_end", "__setitem__"}
CONTAINERS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque", "WeakKeyDictionary",
              "WeakValueDictionary"}

# The module state that may stay, by file and name, each with why. Anything
# else the check finds fails the test; an entry the check no longer finds too.
KEPT = {
    ("nsbench/run/dask_worker.py", "_holders"): "a Dask worker's engines, by run token: the worker process's own",
    ("nsbench/run/executors.py", "_worker"): "a pool worker's engine, set by the pool's initializer in that process",
    ("nsbench/run/interrupts.py", "_held"): "a signal held while a result is written: signals are the process's",
    ("nsbench/run/interrupts.py", "_holding"): "how deep signals are held (the same)",
    ("nsbench/store/eviction.py", "_CAPS"): "each process's SizeCap, keyed by (folder, cap): the cap itself comes from the run",
    ("nsbench/store/reference.py", "_code_digests"): "a feature function's code digest, keyed by the function: content",
    ("nsbench/synth/speech.py", "_library"): "the speech library loaded once per process: the same for every run",
    ("engines/deepfilternet.py", "_template"): "the model's loaded state, built once per process",
    ("engines/rnnoise.py", "_measured"): "the library's measured delay, keyed by its file: content",
    ("metrics/dnsmos.py", "_last"): "DNSMOS's last result, keyed by the audio: content",
    ("metrics/intelligibility.py", "_stream"): "a fixed seeded noise stream, grown once: the same for every run",
}


def mutable_value(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        function = value.func
        return (function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")) in CONTAINERS
    return False


def module_containers(tree: ast.Module) -> set[str]:
    """The names a module binds, at its top level, to a dict, list or set."""
    names = set()
    for node in tree.body:
        targets, value = ((node.targets, node.value) if isinstance(node, ast.Assign) else
                          ([node.target], node.value) if isinstance(node, ast.AnnAssign) and node.value else ([], None))
        names |= {target.id for target in targets if isinstance(target, ast.Name) and mutable_value(value)}
    return names


def state_names(source: str) -> set[str]:
    """The module globals ``source`` reassigns or changes at run time."""
    tree = ast.parse(source)
    containers = module_containers(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found |= set(node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS
              and isinstance(node.func.value, ast.Name) and node.func.value.id in containers):
            found.add(node.func.value.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
            found |= {target.value.id for target in targets if isinstance(target, ast.Subscript)
                      and isinstance(target.value, ast.Name) and target.value.id in containers}
    return found


def test_the_check_sees_a_registry_held_in_a_module_global():
    """The shape report.layout had before issue 38: a registry set by ``use``
    through ``global``, and a dict of views filled and cleared at run time."""
    old_layout = (
        "_registry = None\n_views = {}\n"
        "def use(registry):\n    global _registry\n    _registry = registry\n    _views.clear()\n"
        "def view():\n    _views[id(_registry)] = 1\n    return _views[id(_registry)]\n"
    )
    assert state_names(old_layout) == {"_registry", "_views"}
    cache = "_seen: dict = {}\ndef add(key, value):\n    _seen.setdefault(key, value)\n"
    assert state_names(cache) == {"_seen"}
    constant = "TABLE = {'a': 1}\nNAMES = ['x']\ndef read():\n    local = {}\n    local['b'] = TABLE['a']\n    return NAMES[0]\n"
    assert state_names(constant) == set()  # read, never changed: a constant


def test_no_module_holds_the_runs_state_in_a_global():
    found = {(path.relative_to(REPO_ROOT).as_posix(), name)
             for path in module_files().values() for name in state_names(path.read_text())}
    unlisted = sorted(found - set(KEPT))
    assert not unlisted, f"module state not in KEPT (pass it in the run's plan or config instead): {unlisted}"
    assert not set(KEPT) - found, f"KEPT lists state that is gone: {sorted(set(KEPT) - found)}"


def test_the_layout_module_keeps_nothing():
    assert state_names((PACKAGE / "report" / "layout.py").read_text()) == set()
