"""``--list``: what is registered (engines, datasets, metrics, conditions,
recognisers, plugins), one table, cut to the terminal's width where it prints
to one."""
from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from nsbench.plugins.registry import Registry
from nsbench.text import fit_rows

LIST_CHOICES = ("engines", "datasets", "metrics", "conditions", "recognisers", "plugins", "cache")


def list_width() -> int | None:
    """The terminal's width, where ``--list`` prints to one (or $COLUMNS says
    it); None, every cell whole, when piped to a file or another program."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def list_text(what: str, registry: Registry, manager, width: int | None = None) -> str:
    """The ``--list`` table; with ``width``, cells cut to fit it (a line then says so)."""
    if what == "plugins":
        from nsbench.plugins.manager import plugin_origin

        rows = [("plugin", "origin", "version")]
        for plugin in manager.get_plugins():
            rows.append((manager.get_name(plugin), *plugin_origin(manager, plugin)))
        return format_rows(rows, width)
    kind = getattr(registry, what)
    rows = [("name", "status", "version", "from", *extra_header(what), "description")]
    for record in kind:
        status = "available" if record.available else f"unavailable: {record.unavailable_note}"
        rows.append((record.spec.name, status, record.version, record.origin, *extra_columns(what, record.spec), record.spec.description))
    if what == "metrics":
        rows += metric_set_rows(registry)
    return format_rows(rows, width)


def metric_set_rows(registry: Registry) -> list[tuple[str, ...]]:
    """The named sets (``--metric vbd-row``), after the metrics: what each runs."""
    rows = []
    for record in registry.metric_sets:
        members = [registry.metrics.entries.get(name) for name in record.spec.metrics]
        missing = [member for member in members if member is None or not member.available]
        installs = "; ".join(dict.fromkeys(member.spec.install for member in missing if member))
        status = "available" if not missing else f"unavailable: {installs or 'a metric is not registered'}"
        rows.append((record.spec.name, status, "", record.origin, "set", "", "",
                     f"{record.spec.description}: {', '.join(record.spec.metrics)}"))
    return rows


def extra_header(what: str) -> tuple[str, ...]:
    return {"engines": ("rate", "delay", "oracle"), "metrics": ("unit", "better", "ignores"), "conditions": ("reference",)}.get(what, ())


def extra_columns(what: str, spec: Any) -> tuple[str, ...]:
    if what == "engines":
        return (str(spec.sample_rate or "any"), str(spec.delay), "oracle" if spec.oracle else "")
    if what == "metrics":
        return (spec.unit, "higher" if spec.higher_is_better else "lower", spec.ignores)
    if what == "conditions":
        return ("also" if spec.reference else "untouched",)
    return ()


def format_rows(rows: list[tuple[str, ...]], width: int | None = None) -> str:
    text, cut = fit_rows(rows, width)
    return text + (f"\n(cut to {width} columns; --verbose prints every cell whole)" if cut else "")
