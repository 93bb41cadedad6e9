"""nsbench.testing, the conformance kit plugin authors call: the built-ins
pass it, and an engine that breaks the contract fails with the fault named."""
from __future__ import annotations

import numpy as np
import pytest

import nsbench
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.testing import ConformanceError, check_dataset, check_engine, check_metric

from tests.helpers.audio import make_folder_dataset

REGISTRY = build_registry(get_plugin_manager(load_entry_points=False))
# Koala needs an AccessKey checked online; the python: and command: families
# need the user's model (tests/engines/test_user_models.py runs them).
NOT_HERE = {"koala", "python", "command"}
BUILTIN_ENGINES = [record.spec.name for record in REGISTRY.engines if record.spec.name not in NOT_HERE and record.available]


class Late(nsbench.Engine):
    """Returns its input 32 samples late, whatever it declares."""

    def process(self, audio: np.ndarray) -> np.ndarray:
        return np.concatenate([np.zeros(32, np.float32), audio[:-32]])


class Dithering(nsbench.Engine):
    """Adds fresh random noise on every call: not repeatable, and not declared seeded."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def process(self, audio: np.ndarray) -> np.ndarray:
        return audio + self.rng.normal(0, 1e-4, len(audio)).astype(np.float32)


def spec(factory, delay=0, **fields) -> nsbench.EngineSpec:
    return nsbench.EngineSpec(name="under-test", factory=factory, description="", sample_rate=16000, delay=delay, **fields)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILTIN_ENGINES)
def test_every_builtin_engine_passes_the_kit(name):
    findings = check_engine(REGISTRY.engines.get(name).spec)
    assert not findings.faults


def test_a_wrong_declared_delay_is_named():
    with pytest.raises(ConformanceError, match=r"declared delay 0 samples at 16000 Hz, but the output lags the input by 32 .*declare delay=32"):
        check_engine(spec(lambda options: Late()))
    assert not check_engine(spec(lambda options: Late(), delay=32)).faults


def test_an_engine_that_is_not_repeatable_is_named():
    with pytest.raises(ConformanceError, match=r"not repeatable: two runs on the same clip differ .*declare seeded=True"):
        check_engine(spec(lambda options: Dithering()))


def test_a_wrong_output_length_is_named():
    class Short(nsbench.Engine):
        def process(self, audio):
            return audio[:-1]

    with pytest.raises(ConformanceError, match=r"output length: process\(\) returned shape \(15999,\) for 16000 samples in"):
        check_engine(spec(lambda options: Short()))


def test_close_is_called_on_every_engine_built():
    closed = []

    class Tracked(nsbench.Engine):
        def process(self, audio):
            return audio.copy()

        def close(self):
            closed.append(self)

    check_engine(spec(lambda options: Tracked()))
    assert len(closed) == 2  # the kit's own engine, and the run loop's


def test_datasets_and_metrics_have_their_kits(tmp_path):
    folder = make_folder_dataset(tmp_path / "set", count=2, seconds=0.5)
    assert not check_dataset("folder", {"data_folder": str(folder)}).faults
    for name in ("si_sdr", "si_sdri", "stoi", "voice_level_db"):
        assert not check_metric(name).faults

    def flaky(inputs):
        return float(np.random.default_rng().normal())

    with pytest.raises(ConformanceError, match="not repeatable"):
        check_metric(nsbench.MetricSpec(name="flaky", func=flaky, unit="", higher_is_better=True, description="", ignores=""))
