"""nsbench: compare noise-suppression engines side by side, honestly.

What this module exports (``__all__``) is the plugin API, versioned by
``PLUGIN_API`` and documented in docs/plugins.md ("Reference"); the rest of
nsbench (records such as ClipRecord, the run loop, the cache) is internal and
may change. Only light modules are imported here: ``import nsbench`` costs
numpy and pluggy, never an engine's package.
"""
from __future__ import annotations

from nsbench.run.conditions import ConditionSpec
from nsbench.plugins.hookspecs import hookimpl
from nsbench.store.reference import ReferenceAudio
from nsbench.plugins.types import (
    MEASURED,
    Clip,
    ClipError,
    ClipSource,
    Column,
    DatasetSpec,
    Engine,
    EngineSpec,
    MetricInputs,
    MetricSpec,
    MetricUndefined,
    PooledValue,
    Pooling,
    RecogniserSpec,
    UserError,
)

__version__ = "0.1.0"

# The plugin contract's version: bumped whenever what a plugin writes or
# receives changes (a new field with a default does not break a plugin, but a
# plugin that uses it needs this version or later).
PLUGIN_API = 3  # 2: Engine.stream(), for --block-size; 3: Clip.clean may be None (no reference)

__all__ = [
    "PLUGIN_API",
    "hookimpl",
    "Engine",
    "EngineSpec",
    "DatasetSpec",
    "MetricSpec",
    "Column",
    "Clip",
    "ClipSource",
    "MetricInputs",
    "MetricUndefined",
    "Pooling",
    "PooledValue",
    "ConditionSpec",
    "RecogniserSpec",
    "ReferenceAudio",
    "ClipError",
    "UserError",
    "MEASURED",
]
