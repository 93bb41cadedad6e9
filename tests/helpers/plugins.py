"""Plugins handed to the CLI from inside a test."""
from __future__ import annotations

import functools
import textwrap
from pathlib import Path
from typing import Callable

import numpy as np

from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import EngineSpec

# A real plugin file (write it to a path, give the path to --plugin): the
# "halving" engine (0.5 times the input; $ENGINE_SLEEP seconds a clip) and the
# "energy" metric (the output's sum of squares). Each call appends a line
# "<engine|metric> <pid> <samples>" to the file named by $CALL_LOG, so a test
# counts what a run computed (logged_lengths) and where (logged_pids).
HALVING_ENERGY_PLUGIN = textwrap.dedent(
    """
    import os, time
    import numpy as np
    from nsbench.plugins.hookspecs import hookimpl
    from nsbench.plugins.specs import EngineSpec, MetricSpec

    def log(kind, length):
        with open(os.environ["CALL_LOG"], "a") as handle:
            handle.write(f"{kind} {os.getpid()} {length}\\n")

    class Halving:
        sample_rate, delay = 16000, 0
        def process(self, audio):
            log("engine", len(audio))
            time.sleep(float(os.environ.get("ENGINE_SLEEP", "0")))
            return GAIN * audio
        def close(self):
            pass

    def energy(inputs):
        log("metric", len(inputs.output))
        return float(np.sum(inputs.output.astype(np.float64) ** 2))

    GAIN = 0.5

    @hookimpl
    def register_engines(register):
        register(EngineSpec(name="halving", factory=lambda options: Halving(), description="halves", sample_rate=16000, delay=0))

    @hookimpl
    def register_metrics(register):
        register(MetricSpec(name="energy", func=energy, unit="", higher_is_better=True, description="sum of squares",
                            ignores="everything", needs_voice=False))
    """
)


def logged_pids(log: Path, kind: str) -> list[int]:
    """The process id of each ``kind`` ("engine", "metric") call HALVING_ENERGY_PLUGIN logged."""
    return [int(fields[1]) for fields in logged_calls(log, kind)]


def logged_lengths(log: Path, kind: str) -> list[int]:
    """The clip length in samples of each ``kind`` call HALVING_ENERGY_PLUGIN logged."""
    return [int(fields[2]) for fields in logged_calls(log, kind)]


def logged_calls(log: Path, kind: str) -> list[list[str]]:
    if not log.is_file():  # no call at all
        return []
    return [line.split() for line in log.read_text().splitlines() if line.startswith(kind)]


def cli_with(*plugins: object) -> Callable[..., int]:
    """The CLI with ``plugins`` registered besides the installed ones, on a
    fresh plugin manager at every call (nsbench.cli.main's ``plugins``)."""
    from nsbench.cli import main

    return functools.partial(main, plugins=plugins)


# The "quieter" engine (0.7 times the input) as a plugin file, for runs whose
# workers cannot import it (it goes to them by value): $ENGINE_SLEEP seconds a
# clip, and a worker that dies (os._exit) on a clip of $DIE_ON_LENGTH samples.
QUIETER_PLUGIN = textwrap.dedent(
    """
    import os, time
    from nsbench.plugins.hookspecs import hookimpl
    from nsbench.plugins.specs import EngineSpec

    class Quieter:
        sample_rate, delay = 16000, 0
        def process(self, audio):
            if len(audio) == int(os.environ.get("DIE_ON_LENGTH", "-1")):
                os._exit(1)  # a crash in native code, as far as the worker can tell
            if len(audio) == int(os.environ.get("FAIL_ON_LENGTH", "-1")):
                raise ValueError("this clip fails in the engine")
            time.sleep(float(os.environ.get("ENGINE_SLEEP", "0")))
            return 0.7 * audio
        def close(self):
            pass

    @hookimpl
    def register_engines(register):
        register(EngineSpec(name="quieter", factory=lambda options: Quieter(), description="0.7x", sample_rate=16000, delay=0))
    """
)


class ResidualEngine:
    """An oracle leaving ``--residual`` of the noise (default 0.3): a larger
    residual is a real regression of every quality metric (--compare's tests)."""

    @hookimpl
    def add_arguments(self, parser):
        parser.add_argument("--residual", type=float, default=0.3)

    @hookimpl
    def register_engines(self, register):
        class Residual:
            sample_rate, delay = 16000, 0

            def __init__(self, residual):
                self.residual = residual

            def process(self, audio, clean):
                return (clean + self.residual * (audio - clean)).astype(np.float32)

            def close(self):
                pass

        register(EngineSpec(name="residual", factory=lambda options: Residual(options["residual"]),
                            description="test", sample_rate=16000, delay=0, oracle=True, default=False))
