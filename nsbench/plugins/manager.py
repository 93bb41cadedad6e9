"""Building the plugin manager: built-ins, entry points, and ``--plugin`` files.

Follows pluggy's eggsample host: a factory rather than a module-level global, so
each test gets a fresh manager, and ``check_pending()`` so a misspelled hook in
any plugin fails loudly instead of being ignored.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterable

import pluggy

from nsbench import builtin

from nsbench.plugins import hookspecs
from nsbench.plugins.errors import UserError

ENTRY_POINT_GROUP = hookspecs.PROJECT


def get_plugin_manager(
    local_plugins: Iterable[str] = (), *, load_entry_points: bool = True, plugins: Iterable[object] = ()
) -> pluggy.PluginManager:
    """``plugins``: objects registered besides the built-ins and entry points
    (``nsbench.cli.main(argv, plugins=...)``: a test's, as pluggy's own tests
    hand a fresh manager their plugin)."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    for name in builtin.module_names():
        manager.register(importlib.import_module(name), name=name)
    if load_entry_points:
        manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    for plugin in plugins:
        manager.register(plugin)
    for plugin in local_plugins:
        module = load_local_plugin(plugin)
        manager.register(module, name=f"local:{plugin}")
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as error:
        raise UserError(f"plugin error: {error}") from error
    return manager


def load_local_plugin(plugin: str) -> ModuleType:
    """Import ``--plugin`` by file path (``path/to/file.py``) or module name."""
    if plugin.endswith(".py") or Path(plugin).is_file():
        path = Path(plugin)
        if not path.is_file():
            raise UserError(f"--plugin {plugin}: no such file")
        module_name = f"nsbench_local_plugin_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # Registered in sys.modules so functions defined there can be pickled.
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(plugin)
    except ModuleNotFoundError as error:
        raise UserError(f"--plugin {plugin}: cannot import module ({error})") from error


def plugin_origin(manager: pluggy.PluginManager, plugin: object) -> tuple[str, str]:
    """Where a plugin comes from and its version: (origin, version)."""
    from nsbench.version import __version__

    name = manager.get_name(plugin) or "?"
    if name.startswith(f"{builtin.__name__}."):
        return "built-in", __version__
    for registered, dist in manager.list_plugin_distinfo():
        if registered is plugin:
            return f"entry point ({dist.project_name})", dist.version
    if name.startswith("local:"):
        return f"--plugin {name[len('local:'):]}", getattr(plugin, "__version__", "")
    return name, getattr(plugin, "__version__", "")
