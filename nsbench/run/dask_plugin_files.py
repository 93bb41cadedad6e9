"""The ``--plugin file.py`` modules, installed on every Dask worker under the
name the parent gave them (``nsbench_local_plugin_<stem>``), so that what
refers to them (a dataset's ``load``, a metric's function) unpickles there
by reference, cheaply, as on ``--jobs`` workers. Workers that join later get
them too (a worker plugin). Imported only with ``--executor dask``: it
imports distributed."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Sequence

from distributed.diagnostics.plugin import WorkerPlugin


class PluginFiles(WorkerPlugin):
    name = "nsbench-plugin-files"

    def __init__(self, files: Sequence[tuple[str, str, str]]):
        self.files = tuple(files)  # (module name, path, source text)

    def setup(self, worker: Any) -> None:
        for module_name, path, text in self.files:
            if module_name not in sys.modules:
                install(module_name, path, text)


def install(module_name: str, path: str, text: str) -> None:
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=path)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = path
    sys.modules[module_name] = module
    try:
        exec(compile(text, path, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[module_name]
        raise


def plugin_files(prefix: str) -> list[tuple[str, str, str]]:
    """The parent's local plugin modules, with their source."""
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.startswith(prefix) and path:
            found.append((name, path, Path(path).read_text()))
    return found
