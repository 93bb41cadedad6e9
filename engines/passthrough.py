"""The untrained baseline: returns its input. It goes in every table, so every
number has the input's own score beside it."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from nsbench import Engine, EngineSpec, hookimpl


class PassthroughStream:
    """Each block straight back: with --block-size, what the harness's own
    per-block work costs (bench/bench_streaming.py)."""

    def process(self, block: np.ndarray) -> np.ndarray:
        return np.array(block, dtype=np.float32)

    def flush(self) -> np.ndarray:
        return np.zeros(0, dtype=np.float32)


class Passthrough(Engine):
    def process(self, audio: np.ndarray) -> np.ndarray:
        return audio.copy()

    def stream(self) -> PassthroughStream:
        return PassthroughStream()


def build(options: Mapping[str, Any]) -> Passthrough:
    return Passthrough()


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="passthrough",
            factory=build,
            description="untrained baseline: output = input",
            # Any rate: the baseline must be the input itself, so it is never
            # resampled (a 48 kHz clip through 16 kHz would lose everything above 8 kHz).
            sample_rate=None,
            delay=0,
            baseline=True,
            passes_input_through=True,  # listed first, left out of the listening grid
            expected_flags={"identical_to_input": "the untrained baseline returns its input by definition"},
        )
    )
