"""Shared checks for real engines, run on the demo-tts set's stationary-noise cells.

Every engine test uses these, so each engine is held to the same bar: it must
improve SI-SDR at 0 and 5 dB on white and pink noise, and after the harness
removes its declared delay its output must be sample-aligned with the clean
speech. Synthetic speech, not the real demo: these tests check the adapters
(delay, alignment, that the engine suppresses at all), which needs a reference
with nothing an engine may rightly change. On real readers the bar does not
hold clip by clip, and should not: on one low male voice (F0 near 100 Hz) at
5 dB in white noise, RNNoise, DeepFilterNet, NSNet2 and WebRTC lose 2.4-12 dB
of SI-SDR, while RNNoise's and DeepFilterNet's STOI rise (0.92 to 0.97); the
default demo reports that.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.audio.alignment import estimate_lag
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.records import ClipSource
from nsbench.run.engine_run import EngineRun, Outcome
from nsbench.run.runner import run_engine

STATIONARY_CELLS = {("white", "0"), ("white", "5"), ("pink", "0"), ("pink", "5")}
MAX_LAG = 1600  # 100 ms at 16 kHz


def stationary_sources(demo_tts_sources: Sequence[ClipSource]) -> list[ClipSource]:
    return [s for s in demo_tts_sources if (s.labels["noise"], s.labels["snr_db"]) in STATIONARY_CELLS]


def run_builtin(name: str, sources: Sequence[ClipSource], options: Mapping[str, Any] = {}) -> list[Outcome]:
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    record = registry.engines.require_available(name)
    metrics = [registry.metrics.get(m).spec for m in ("si_sdr", "si_sdr_input", "si_sdri")]
    return list(run_engine(EngineRun(record.spec, options, metrics), sources))


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


def delays(outcomes) -> set[str]:
    return {o.record.delay for o in outcomes}


def registry():
    return build_registry(get_plugin_manager(load_entry_points=False))


def noisy_tone(seed: int, length: int = 20000) -> np.ndarray:
    """Bursts of a 220 Hz tone in white noise at 16 kHz (float32): input for the stream checks."""
    t = np.arange(length) / 16000
    noise = 0.05 * np.random.default_rng(seed).standard_normal(length)
    return (0.2 * np.sin(2 * np.pi * 220 * t) * (t % 0.5 < 0.3) + noise).astype(np.float32)


def streamed(engine: Any, audio: np.ndarray, block: int) -> np.ndarray:
    """``audio`` through a fresh stream of ``engine``, ``block`` samples at a time, flushed, closed."""
    stream = engine.stream()
    try:
        parts = [stream.process(audio[start : start + block]) for start in range(0, audio.size, block)]
        return np.concatenate([*parts, stream.flush()])
    finally:
        getattr(stream, "close", lambda: None)()


def modules_a_run_imports(engine: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules starting with ``prefixes`` that building and running the built-in ``engine`` imports, in a fresh interpreter."""
    from tests.helpers.paths import REPO_ROOT

    code = (f"import sys, importlib; m = importlib.import_module('nsbench.builtin.engines.{engine}'); "
            "e = m.build({}); import numpy as np; e.process(np.zeros(1000, np.float32)); e.close(); "
            f"print(sorted(name for name in sys.modules if name.startswith({prefixes!r})))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return ast.literal_eval(result.stdout.strip())


def folder_run_argv(tmp_path: Path, engine: str) -> list[str]:
    """A run of ``engine`` alone on a one-clip folder set, quiet, no plots or HTML."""
    from tests.helpers.audio import make_folder_dataset

    data = make_folder_dataset(tmp_path / "d", count=1)
    return ["--dataset", "folder", "--data-folder", str(data), "--engine", engine,
            "--results-folder", str(tmp_path / "r"), "--quiet", "--no-plots", "--no-html"]
