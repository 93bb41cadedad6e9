"""What a recogniser plugin registers and what a metric's options may use:
the recogniser specs (``register_recognisers``) and the MetricContext.

Apart from nsbench.plugins.specs so that each module stays short; that
module re-exports these names, which plugins import from ``nsbench``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Recogniser(Protocol):
    """A speech recogniser for the ``wer`` metric: ``transcribe`` takes float32
    mono at its spec's ``sample_rate`` (the harness resamples) and returns the
    words it heard ("" for none). It must be a function of the audio alone:
    the same audio gives the same words, whatever it transcribed before."""

    def transcribe(self, audio: np.ndarray) -> str: ...


def no_model_files() -> tuple[str, ...]:
    """RecogniserSpec's default: a module-level function, so a spec pickles (Dask)."""
    return ()


@dataclass(frozen=True)
class RecogniserSpec:
    """How to build a recogniser, registered through ``register_recognisers``.

    ``factory()`` builds it (once per process; heavy imports belong inside).
    ``model_files()`` lists the files its output depends on: their sha256 go
    into the results' provenance and key the transcript cache, so a changed
    model never reuses old transcripts.
    """

    name: str
    factory: Callable[[], Recogniser]
    description: str
    sample_rate: int = 16000
    model_files: Callable[[], Sequence[str]] = no_model_files
    requires: tuple[str, ...] = ()
    install: str = ""
    version: Callable[[], str] | str = ""



@dataclass(frozen=True)
class ChosenRecogniser:
    """A registered, available recogniser, as a metric's options see it."""

    spec: RecogniserSpec
    version: str  # the spec's own version, else its plugin's
    origin: str  # the plugin that registered it


@dataclass(frozen=True)
class MetricContext:
    """What a metric's ``options(flags, context)`` may use besides its flags.

    ``recogniser(name)`` gives the registered recogniser of that name, or
    raises a UserError (unknown: the names there are; missing a package: its
    install line). ``use_cache`` is False with --no-cache, ``rerun`` True with
    --rerun: a metric that keeps its own cache (wer's transcripts) follows them.
    """

    recogniser: Callable[[str], ChosenRecogniser]
    use_cache: bool = True
    rerun: bool = False


