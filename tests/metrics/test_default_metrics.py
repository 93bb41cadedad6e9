"""The default metrics' modules together (sisdr, intelligibility, levels,
realtime): each name registered once and described, through pluggy too, and
each a finite float on an ordinary clip."""
from __future__ import annotations

import importlib
import math
import pickle

import numpy as np
import pluggy
import pytest

from nsbench.plugins import hookspecs
from nsbench.plugins.specs import MetricSpec

from tests.helpers.metric_signals import SR, inputs, rng, speechlike

MODULES = [importlib.import_module(f"nsbench.builtin.metrics.{name}") for name in ("sisdr", "intelligibility", "levels", "realtime")]


def registered() -> list[MetricSpec]:
    specs: list[MetricSpec] = []
    for module in MODULES:
        module.register_metrics(specs.append)
    return specs


def test_every_metric_is_described_and_named_once():
    specs = registered()
    names = [spec.name for spec in specs]
    assert len(names) == len(set(names))
    assert set(names) == {
        "si_sdr", "si_sdr_zm", "si_sdr_input", "si_sdri", "snr", "stoi", "estoi",
        "voice_level_db", "music_attenuation_db", "rtf_cpu", "rtf_wall",
    }
    for spec in specs:
        assert spec.unit.strip() and spec.description.strip() and spec.ignores.strip(), spec.name
        assert pickle.loads(pickle.dumps(spec.func)) is spec.func, spec.name
    by_name = {spec.name: spec for spec in specs}
    description = by_name["si_sdr"].description
    assert "without mean removal" in description
    assert "torchmetrics zero_mean=False" in description and "earthspecies/biodenoising" in description
    assert by_name["music_attenuation_db"].ignores == "what happens while the voice is active"
    assert not by_name["music_attenuation_db"].needs_voice and by_name["voice_level_db"].needs_voice
    assert by_name["stoi"].requires == ()  # pystoi's steps are in the module (see its docstring)


def test_hooks_register_through_pluggy():
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for module in MODULES:
        pm.register(module)
    pm.check_pending()
    specs: list[MetricSpec] = []
    pm.hook.register_metrics(register=specs.append)
    assert sorted(s.name for s in specs) == sorted(s.name for s in registered())


def test_every_metric_returns_a_float_on_an_ordinary_clip():
    pytest.importorskip("pystoi")
    clean = speechlike(2.0, 40)
    noisy = clean + 0.05 * rng(41).standard_normal(clean.size).astype(np.float32)
    noisy[: SR // 2] += 0.05  # make sure some segments are voice-silent
    clean[: SR // 2] = 0.0
    x = inputs(0.8 * noisy, clean, noisy, cpu_seconds=0.1, wall_seconds=0.2)
    for spec in registered():
        value = spec.func(x)
        assert isinstance(value, float) and math.isfinite(value), spec.name
