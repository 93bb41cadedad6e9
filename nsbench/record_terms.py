"""Words a clip record or an engine result holds whose meaning the run and
the report share: the run writes them (nsbench.run.conditions,
nsbench.run.streaming), the report reads them back (conditions_summary,
streaming_summary). Kept below both, so that neither imports the other.
"""
from __future__ import annotations

# --condition: the condition that leaves the input as it is, always run
# first, and the clip label (and table cell key) naming each clip's condition.
NONE = "none"
LABEL = "condition"

# --block-size: a streamed output equal to the whole-clip one to the bit
# (the record's streaming["versus_whole"]; else a float, SI-SDR in dB).
IDENTICAL = "identical"
