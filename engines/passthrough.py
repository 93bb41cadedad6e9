"""The untrained baseline: returns its input. It goes in every table, so every
number has the input's own score beside it."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from nsbench.hookspecs import hookimpl
from nsbench.types import EngineSpec


class Passthrough:
    def __init__(self, sample_rate: int = 16000):
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
            sample_rate=16000,
            delay=0,
        )
    )
