"""nsbench's version and its plugin contract's (PLUGIN_API), in a module of
their own: what reads them (the plugin manager, the provenance, a new
plugin's scaffold) imports this leaf, not the package's ``__init__``, which
imports the plugin layer (no circle). ``nsbench.__version__`` and
``nsbench.PLUGIN_API`` are these.
"""
from __future__ import annotations

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
