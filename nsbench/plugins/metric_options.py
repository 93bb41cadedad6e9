"""A metric's own options, resolved once per run and handed to its function.

``MetricSpec.options(flags, context)`` (the wer metric: which recogniser,
built once) runs here, in the parent, before any engine, with the flags of
the metric's own plugin and a MetricContext (nsbench.plugins.specs), the
narrow view of the run a metric may choose from; the metric's
function is then bound to the result, so the run loop, worker processes and
Dask workers call it as any other metric, and it reads ``inputs.options``.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping, Sequence

from nsbench.plugins.records import MetricInputs
from nsbench.plugins.specs import ChosenRecogniser, MetricContext, MetricSpec


def call_with_options(func: Callable[[MetricInputs], Any], options: Mapping[str, Any], inputs: MetricInputs) -> Any:
    """``func`` on the inputs with its own options. The copy keeps the output's
    derived values (MetricInputs.output_feature), so what one metric computed
    from this output another reuses, options or not (the composite's PESQ is
    pesq_wb's); a compute that depends on options takes them as parameters."""
    own = dataclasses.replace(inputs, options=options)
    object.__setattr__(own, "_derived", inputs._derived)  # replace() makes init=False fields anew
    return func(own)


def metric_context(registry: Any, use_cache: bool = True, rerun: bool = False) -> MetricContext:
    """The MetricContext of a run: the registry's recognisers, chosen by name."""
    def recogniser(name: str) -> ChosenRecogniser:
        record = registry.recognisers.require_available(name)
        return ChosenRecogniser(record.spec, record.version, record.origin)

    return MetricContext(recogniser=recogniser, use_cache=use_cache, rerun=rerun)


def bind_options(metrics: Sequence[MetricSpec], flags_of: Callable[[MetricSpec], Mapping[str, Any]],
                 context: MetricContext) -> tuple[list[MetricSpec], dict[str, Mapping[str, Any]]]:
    """(the metrics, those with options bound to them; metric name -> its options).

    ``flags_of(metric)``: the flags the metric's plugin added, its only ones."""
    bound, resolved = [], {}
    for metric in metrics:
        if metric.options is None:
            bound.append(metric)
            continue
        options = dict(metric.options(flags_of(metric), context))
        resolved[metric.name] = options
        bound.append(dataclasses.replace(metric, func=functools.partial(call_with_options, metric.func, options)))
    return bound, resolved


def metric_provenance(resolved: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """For the results' provenance: {"metric_options": {metric: what its options say of themselves}}."""
    if not resolved:
        return {}
    return {"metric_options": {name: options.get("provenance", {}) for name, options in resolved.items()}}
