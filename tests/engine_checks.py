"""Shared checks for real engines, run on the demo set's synthetic stationary noise.

Every engine test uses these, so each engine is held to the same bar: it must
improve SI-SDR at 0 and 5 dB on white and pink noise, and after the harness
removes its declared delay its output must be sample-aligned with the clean
speech.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.alignment import estimate_lag
from nsbench.plugins import get_plugin_manager
from nsbench.registry import build_registry
from nsbench.runner import Outcome, run_engine
from nsbench.types import ClipSource

# (recording, snr_db): the white and pink noise controls of the demo's stationary cells.
STATIONARY_CELLS = {("white", "0"), ("white", "5"), ("pink", "0"), ("pink", "5")}
MAX_LAG = 1600  # 100 ms at 16 kHz


def stationary_sources(demo_sources: Sequence[ClipSource]) -> list[ClipSource]:
    return [s for s in demo_sources if (s.labels["recording"], s.labels["snr_db"]) in STATIONARY_CELLS]


def run_builtin(name: str, sources: Sequence[ClipSource], options: Mapping[str, Any] = {}) -> list[Outcome]:
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    record = registry.engines.require_available(name)
    metrics = [registry.metrics.get(m).spec for m in ("si_sdr", "si_sdr_input", "si_sdri")]
    return list(run_engine(record.spec, options, sources, metrics))


def assert_improves_and_aligned(outcomes: Sequence[Outcome], sources: Sequence[ClipSource], min_gain_db: float = 0.5) -> None:
    assert outcomes, "no clips ran"
    for outcome, source in zip(outcomes, sources):
        record = outcome.record
        assert not record.failed, f"{record.clip_id}: {record.error}"
        assert record.scores["si_sdri"] > min_gain_db, f"{record.clip_id}: SI-SDRi {record.scores['si_sdri']:.2f} dB"
        lag = estimate_lag(outcome.output, source.load().clean, MAX_LAG)
        assert lag == 0, f"{record.clip_id}: output late by {lag} samples after compensation"


def mean_gain(outcomes: Sequence[Outcome]) -> float:
    return float(np.mean([o.record.scores["si_sdri"] for o in outcomes]))
