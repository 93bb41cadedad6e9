"""nsbench: compare noise-suppression engines side by side, honestly.

What this module exports (``__all__``) is the plugin API, versioned by
``PLUGIN_API`` and documented in docs/plugins.md ("Reference"); with ``nsbench.adapters`` (the helpers adapter authors share:
loading pairs, resampling, frame streams, running a program, the cache
folder) it is all a plugin needs, and all the built-in adapters use
(tests/plugins/test_public_api.py checks). Both are listed in docs/adapters.md. The
rest of nsbench (records such as ClipRecord, the run loop, the cache) is
internal and may change. Only light modules are imported here: ``import
nsbench`` costs numpy and pluggy, never an engine's package.
"""
from __future__ import annotations

from nsbench.plugins.engine import MEASURED, Engine, Stream
from nsbench.plugins.errors import ClipError, MetricUndefined, UserError
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.records import ENHANCEMENT, SEPARATION, Clip, ClipSource, MetricInputs, ReferenceAudio
from nsbench.plugins.specs import (
    ChosenRecogniser,
    Column,
    ConditionSpec,
    DatasetSpec,
    EngineSpec,
    MetricContext,
    MetricSetSpec,
    MetricSpec,
    PooledValue,
    Pooling,
    RecogniserSpec,
)
from nsbench.ranking import rank_table
from nsbench.version import PLUGIN_API, __version__


__all__ = [
    "PLUGIN_API",
    "hookimpl",
    "Engine",
    "Stream",
    "EngineSpec",
    "DatasetSpec",
    "MetricSpec",
    "MetricSetSpec",
    "Column",
    "MetricContext",
    "ChosenRecogniser",
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
    "rank_table",
    "ENHANCEMENT",
    "SEPARATION",
]
