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
from nsbench.plugins.records import ENHANCEMENT, SEPARATION, Clip, ClipSource, MetricInputs
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
from nsbench.report.ranking import rank_table
from nsbench.store.reference import ReferenceAudio

__version__ = "0.1.0"

# The plugin contract's version: bumped whenever what a plugin writes or
# receives changes (a new field with a default does not break a plugin, but a
# plugin that uses it needs this version or later).
# 2: Engine.stream(), for --block-size; 3: Clip.clean may be None (no reference);
# 4: datasets and metrics receive only their own plugin's flags (a dataset also
# ``data_folder``), a metric's options(flags, context) gets a MetricContext
# instead of the Registry, and a rate or delay an Engine subclass sets itself
# while its spec declares another number is a UserError, not overwritten;
# 5: the register_metric_sets hook (MetricSetSpec: --metric NAME runs a named set);
# 6: MetricSpec.category (the ranking, URGENT's rule), MetricSetSpec.partial, and rank_table.
PLUGIN_API = 6

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
