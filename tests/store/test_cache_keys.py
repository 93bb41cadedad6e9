"""Cache keys follow all the code a cached value depends on, found from the
modules' imports: the output checks use the SI-SDR maths (nsbench/audio/sdr.py),
so a change there must recompute the flags, not serve them from the cache."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from nsbench.store import cache, digests, keys

from nsbench.audio import checks
from nsbench.builtin.engines.passthrough import build as build_passthrough
from nsbench.run.engine_run import EngineRun
from nsbench.run.runner import run_engine
from nsbench.plugins.records import Clip, ClipSource
from nsbench.plugins.specs import EngineSpec

NSBENCH = Path(keys.__file__).parents[1]


def noisy_source() -> ClipSource:
    rng = np.random.default_rng(12)
    clean = (0.1 * np.sin(2 * np.pi * 220 * np.arange(16000) / 16000)).astype(np.float32)
    noisy = clean + (0.05 * rng.standard_normal(16000)).astype(np.float32)
    clip = Clip(clip_id="tone", noisy=noisy, clean=clean, sample_rate=16000)
    return ClipSource(clip_id="tone", load=lambda: clip)


def run_cached(root: Path):
    spec = EngineSpec(name="passthrough", factory=build_passthrough, description="", sample_rate=None, delay=0)
    run_cache = cache.Cache(root)
    identity = keys.Identity(keys.engine_identity("passthrough", "1", build_passthrough, "", {}), {}, keys.checks_identity())
    [outcome] = run_engine(EngineRun(spec, {}, [], cache=run_cache, identity=identity), [noisy_source()])
    return outcome.record


def test_the_checks_key_covers_every_module_they_import():
    files = {Path(path).relative_to(NSBENCH).as_posix() for path in digests.code_files("nsbench.audio.checks")}
    assert {"audio/checks.py", "audio/sdr.py", "audio/alignment.py", "audio/blocks.py"} <= files


def test_the_si_sdr_metrics_key_covers_the_core_maths():
    from nsbench.builtin.metrics import sisdr

    assert str(NSBENCH / "audio" / "sdr.py") in digests.code_files(sisdr.__name__)


def test_a_change_to_the_si_sdr_code_recomputes_the_cached_flags(tmp_path, monkeypatch):
    first = run_cached(tmp_path)
    assert "identical_to_input" in first.flags and not first.from_cache
    # "Edit" nsbench/audio/sdr.py: its contents now hash differently, and the
    # function the checks call behaves differently (every output now looks
    # far from its input). The file itself is left alone: tests run in parallel.
    sdr_file = str(NSBENCH / "audio" / "sdr.py")
    real_digest = digests.file_digest
    monkeypatch.setattr(digests, "file_digest", lambda path: "edited" if str(path) == sdr_file else real_digest(path))
    monkeypatch.setattr(checks, "si_sdr", lambda estimate, reference: -10.0)
    second = run_cached(tmp_path)
    assert second.from_cache  # the engine's output does not depend on sdr.py: it is reused
    assert "identical_to_input" not in second.flags  # the flags were recomputed with the new code
