"""The hooks a plugin may implement. Built-ins use exactly these too.

Each registration hook hands the plugin a ``register`` callback; the host builds
and validates the registry from what it receives (as simonw/llm does), so a
plugin never touches nsbench's internals.
"""
from __future__ import annotations

import argparse
from typing import Callable

import pluggy

from nsbench.plugins.specs import ConditionSpec
from nsbench.plugins.specs import DatasetSpec, EngineSpec, MetricSetSpec, MetricSpec, RecogniserSpec

PROJECT = "nsbench"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_engines(register: Callable[[EngineSpec], None]) -> None:
    """Call ``register(EngineSpec(...))`` once per engine."""


@hookspec
def register_datasets(register: Callable[[DatasetSpec], None]) -> None:
    """Call ``register(DatasetSpec(...))`` once per dataset."""


@hookspec
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    """Call ``register(MetricSpec(...))`` once per metric."""


@hookspec
def register_metric_sets(register: Callable[[MetricSetSpec], None]) -> None:
    """Call ``register(MetricSetSpec(...))`` once per named set of metrics
    (``--metric vbd-row`` runs the VoiceBank-DEMAND paper row)."""


@hookspec
def register_conditions(register: Callable[[ConditionSpec], None]) -> None:
    """Call ``register(ConditionSpec(...))`` once per input condition (a codec
    round trip, a limiter): a transform of the noisy input before the engine."""


@hookspec
def register_recognisers(register: Callable[[RecogniserSpec], None]) -> None:
    """Call ``register(RecogniserSpec(...))`` once per speech recogniser the
    ``wer`` metric may use (``--recogniser NAME``)."""


@hookspec
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add command-line options a plugin's engines or datasets need (for example
    ``--rnnoise-demo-path``). Their values reach factories in ``options``."""
