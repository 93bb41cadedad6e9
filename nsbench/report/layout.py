"""Where the reports place engines and metrics, read from the plugins' specs.

The core names no plugin: the engine listed first (``EngineSpec.passes_input_through``),
the per-cell table's columns (``MetricSpec.columns``), the figure shown beside
the headline (``MetricSpec.beside_headline``) and the headline of a dataset
that names none (``MetricSpec.headline_by_default``) all come from the specs
registered. A View is read once from a registry and handed on: the run's
is in its plan (``RunPlan.view``, so a ``--plugin``'s specs count); a report
built from stored files reads the installed plugins' (``installed_view``).
No module holds one: two runs in one process (two tests) never see each other's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class View:
    """What the specs say, once per registry."""

    references: frozenset[str]  # engines that pass their input through
    columns: tuple[tuple[str, str, int], ...]  # (value name, title, decimals), in table order
    plotted: tuple[str, ...]  # the columns the plots draw
    beside_headline: tuple[str, ...]  # values shown beside the headline (stoi)
    default_headline: str  # a dataset's headline when it names none (si_sdri)
    paper_tables: tuple[Any, ...] = ()  # the metric sets with columns (MetricSetSpec): the papers' tables

    def passes_input_through(self, engine: str) -> bool:
        return engine in self.references

    def reference_engine(self) -> str:
        """The name of the engine that passes its input through ("" if none is registered)."""
        return min(self.references, default="")

    def reference_first(self, results: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The results with the engine that passes its input through first (a stable sort)."""
        return sorted(results, key=lambda result: not self.passes_input_through(result["engine"]))

    def table_columns(self) -> tuple[tuple[str, str, int], ...]:
        """(value name, column title, decimals) of the per-cell table, in order."""
        return self.columns

    def headline(self, named: str) -> str:
        """A dataset's headline: the one it names, or the default one."""
        return named or self.default_headline


def read_view(found: Any) -> View:
    """The View of a registry (nsbench.plugins.registry.Registry)."""
    metrics = [record.spec for record in found.metrics]
    columns = sorted(((column.order, name, column) for metric in metrics for name, column in metric.columns.items()),
                     key=lambda entry: entry[0])
    return View(
        references=frozenset(record.spec.name for record in found.engines if record.spec.passes_input_through),
        columns=tuple((name, column.title, column.decimals) for _, name, column in columns),
        plotted=tuple(name for _, name, column in columns if column.plotted),
        beside_headline=tuple(metric.name for metric in metrics if metric.beside_headline),
        default_headline=next((metric.name for metric in metrics if metric.headline_by_default), ""),
        paper_tables=tuple(record.spec for record in getattr(found, "metric_sets", ()) if record.spec.columns),
    )


def installed_view() -> View:
    """The installed plugins' View, for what reads stored results outside a run
    (``listen``, ``--compare``'s reading, the docs' field table)."""
    from nsbench.plugins.manager import get_plugin_manager  # the plugins, only when a report needs them
    from nsbench.plugins.registry import build_registry

    return read_view(build_registry(get_plugin_manager()))
