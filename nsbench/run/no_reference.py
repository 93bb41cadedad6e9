"""Sets whose clips have no clean reference (PLUGIN_API 3): which metrics and
engines such a set can use, and what the results record about it
(``reference_use``; the paragraph the reports print is nsbench.report.reference_use).

A clip without a reference (``Clip.clean`` None, its ClipSource saying
``has_reference=False``) is scored only by metrics with
``needs_reference=False``; the others are skipped there, neither failures nor
"undefined". The run's choice of metrics follows from its clips:

* every clip has a reference: the default metrics, as always (the
  no-reference panel, whose specs say ``default=False``, stays opt-in through
  ``--metric``: it costs about a second per clip and engine);
* some clip has none: the default metrics that need no reference, plus every
  available metric that needs none (the panel); where some clips do have a
  reference (``folder --allow-unpaired``), the default intrusive metrics too,
  for those clips.

Oracle engines need the clean voice: on a set with no reference at all they
are left out of the default engines (and named so); one run by name fails
each clip without a reference with one reason (nsbench.run.clips).
"""
from __future__ import annotations

from typing import Any, Sequence

from nsbench.plugins.records import ClipSource
from nsbench.plugins.specs import MetricSpec

def clips_without_reference(sources: Sequence[ClipSource]) -> int:
    return sum(not source.has_reference for source in sources)


def default_metrics(available: Sequence[MetricSpec], sources: Sequence[ClipSource]) -> list[MetricSpec]:
    """The metrics a run scores when the user names none (the module docstring's rule).
    ``available``: every available metric, in registration order."""
    missing = clips_without_reference(sources)
    if not missing:
        return [spec for spec in available if spec.default]
    paired = missing < len(sources)
    return [spec for spec in available if (spec.default and paired) or not spec.needs_reference]


def headline(current: str, metrics: Sequence[MetricSpec], sources: Sequence[ClipSource]) -> str:
    """The dataset's headline, or on a set without any reference, where it
    (an intrusive one) cannot be computed, the run's metric that ranks first
    by ``MetricSpec.headline_without_reference`` (the dataset's otherwise).
    ``metrics``: the run's values, as reported_values gives them."""
    if clips_without_reference(sources) < len(sources) or current in {metric.name for metric in metrics}:
        return current
    ranked = sorted((metric.headline_without_reference, metric.name) for metric in metrics if metric.headline_without_reference)
    return ranked[0][1] if ranked else current


def reference_use(sources: Sequence[ClipSource], metrics: Sequence[MetricSpec], reported: Sequence[MetricSpec]) -> dict[str, Any]:
    """What the results say about the set's references: how many clips have
    none, which of the run's metrics scored them and which did not (they need
    the reference). ``reported``: the metrics' values, as the summaries name them."""
    needing = {spec.name for spec in metrics if spec.needs_reference}
    value_of = {value.name: value for value in reported}
    owners = {name: spec for spec in metrics for name in (spec.values or {spec.name: ""})}
    return {
        "clips": len(sources),
        "clips_without_reference": clips_without_reference(sources),
        "metrics_without_reference": [name for name in value_of if owners.get(name) and owners[name].name not in needing],
        "metrics_needing_reference": [name for name in value_of if owners.get(name) and owners[name].name in needing],
    }


def oracle_note(oracle_names: Sequence[str], sources: Sequence[ClipSource]) -> str:
    """Why the default run leaves the oracles out, or "" where it keeps them."""
    if not oracle_names or clips_without_reference(sources) < len(sources):
        return ""
    return f"{', '.join(oracle_names)} not run: oracle engines need the clean reference, and no clip has one"
