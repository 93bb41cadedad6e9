"""The Engine base class, the Stream it may offer for --block-size, and MEASURED."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


# An engine spec's ``delay`` (or ``sample_rate``) that the engine itself
# reports once built, in its ``delay`` (``sample_rate``) attribute: RNNoise
# measures its program's delay on a probe, Koala reads its SDK's, a user's
# python: class declares its own.
MEASURED = "measured"


@runtime_checkable
class Stream(Protocol):
    """What ``Engine.stream()`` returns, for --block-size (nsbench.run.streaming).

    ``process(block)`` takes float32 mono blocks of any length at the engine's
    rate, fed in order, and returns whatever output is ready: possibly none,
    possibly more than it was given. ``flush()`` returns the rest, so that the
    outputs together are exactly as long as the input. A stream may also have
    ``close()``, called when the clip is done, to release its state.
    """

    def process(self, block: np.ndarray) -> np.ndarray: ...

    def flush(self) -> np.ndarray: ...


class Engine:
    """Base class for engines: subclass it and override ``process``.

    ``process(audio)``: float32 mono in (at the spec's ``sample_rate``), float32
    out of the same length. Oracle engines also receive the clean reference at
    the same rate as keyword ``clean``; on separation clips an engine may return
    (sources, samples).

    The rate and the delay are each declared in one place: on the EngineSpec
    (a number, or None for the rate: any rate), and the harness then sets
    ``sample_rate`` and ``delay`` here from it when it builds the engine; or on
    the engine, when the spec says MEASURED: the engine sets its own attribute
    (as a class attribute or in ``__init__``). A subclass that sets its own
    value while the spec declares a different number is an error
    (EngineSpec.declare_on raises a UserError naming both), never silently
    overwritten. The harness resamples into and out of the rate, appends
    ``delay`` zeros to the input and removes the first ``delay`` output samples.

    ``prepare()`` is called before each clip, outside the timer (a fresh model
    state, like model loading, is not processing time). ``close()`` releases
    processes, handles and temporary files; the harness always calls it.
    ``notes``: strings the engine found out about itself (a measured delay),
    copied into the results.

    ``stream()``, for ``--block-size`` (nsbench.run.streaming): called after
    ``prepare()`` once per clip, outside the timer; returns a fresh stateful
    Stream (see there), or None: not streamable, the default here (and for an
    engine without the method), and the engine then runs whole clips, marked
    so. The same delay applies. Streamed, an engine should give the output ``process`` gives (the
    report shows how far it is, per engine).
    """

    sample_rate: int | None = None
    delay: int = 0

    def process(self, audio: np.ndarray, **reference: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must define process(audio)")

    def prepare(self) -> None:
        """Called before each clip, outside the timer."""

    def stream(self) -> Stream | None:
        """A fresh stream for --block-size, or None: not streamable (the default)."""
        return None

    def close(self) -> None:
        """Called once when the run is done with the engine, whatever happened."""

    @property
    def notes(self) -> list[str]:
        # Per instance, created on first use: a subclass need not call super().__init__().
        return self.__dict__.setdefault("_notes", [])

    @notes.setter
    def notes(self, value: list[str]) -> None:
        self.__dict__["_notes"] = list(value)

