"""The untrained baseline: returns its input. It goes in every table, so every
number has the input's own score beside it."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from nsbench.hookspecs import hookimpl
from nsbench.types import EngineSpec


class Passthrough:
    # None: any rate. The baseline must be the input itself, so it is never
    # resampled (a 48 kHz clip through 16 kHz would lose everything above 8 kHz).
    def __init__(self, sample_rate: int | None = None):
        self.sample_rate = sample_rate
        self.delay = 0

    def process(self, audio: np.ndarray) -> np.ndarray:
        return audio.copy()

    def close(self) -> None:
        pass


def build(options: Mapping[str, Any]) -> Passthrough:
    return Passthrough()


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="passthrough",
            factory=build,
            description="untrained baseline: output = input",
            sample_rate=None,
            delay=0,
        )
    )
