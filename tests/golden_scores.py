"""The golden score table: every score of every engine and metric on a subset
of the synthetic demo set, as computed before the metric stage was sped up
(issue 13). tests/test_golden_scores.py recomputes it and compares.

Regenerate (only when a score is meant to change, and say why in the commit):

    NSBENCH_CACHE=/tmp/nsbench-golden python tests/golden_scores.py

It writes tests/data/golden_scores.json. Engines that need an argument, a key
or a network (python, command, koala) and unavailable ones are left out, and so
are the timing metrics (rtf_cpu, rtf_wall), which no two runs share.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
GOLDEN_PATH = Path(__file__).resolve().parent / "data" / "golden_scores.json"
# The dataset the table was computed on: the synthetic set, named "demo"
# then and "demo-tts" since the default demo speaks with real voices (issue 11).
DATASET = "demo-tts"
DATASET_OPTIONS = {"demo_seed": 2020}
# Indices into the demo's clip order: white, pink, babble, hum and transient
# noise at several SNRs, a music-only clip and a clean-voice clip.
CLIP_INDICES = (0, 5, 10, 15, 20, 24, 25)
SKIPPED_ENGINES = ("python", "command", "koala")
# wer came later (issue 15) and needs its recogniser bound by the CLI.
SKIPPED_METRICS = ("rtf_cpu", "rtf_wall", "wer")


def compute(clip_indices: tuple[int, ...] = CLIP_INDICES, skipped_metrics: tuple[str, ...] = ()) -> dict[str, Any]:
    """{"engines": {engine: {clip: {"scores": {...}, "undefined": {...}, "error": ...}}}},
    on the clips at ``clip_indices`` with every metric but ``skipped_metrics``
    (and the timing metrics)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from nsbench.plugins import get_plugin_manager
    from nsbench.registry import build_registry
    from nsbench.runner import run_engine
    from nsbench.types import ENHANCEMENT

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    sources = registry.datasets.get(DATASET).spec.clips(DATASET_OPTIONS)
    sources = [sources[index] for index in clip_indices]
    skipped = SKIPPED_METRICS + skipped_metrics
    metrics = [
        record.spec for record in registry.metrics
        if record.available and ENHANCEMENT in record.spec.tasks and record.spec.name not in skipped
    ]
    engines = [record.spec for record in registry.engines if record.available and record.spec.name not in SKIPPED_ENGINES]
    table: dict[str, Any] = {}
    for engine in engines:
        records = [outcome.record for outcome in run_engine(engine, {}, sources, metrics)]
        table[engine.name] = {
            record.clip_id: {"scores": record.scores, "undefined": record.undefined, "error": record.error}
            for record in records
        }
    return {"dataset": DATASET, "clips": [source.clip_id for source in sources],
            "metrics": [metric.name for metric in metrics], "engines": table}


def main() -> None:
    GOLDEN_PATH.parent.mkdir(parents=True, exist_ok=True)
    # repr-exact floats: json writes the shortest string that reads back the same double
    GOLDEN_PATH.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN_PATH}")


if __name__ == "__main__":
    main()
