"""What each cache entry's key is made of (the entries themselves: nsbench.store.cache).

Each key is a sha256 of everything its value depends on:

- an output: the clip's audio (noisy, clean, reference sources, rate), the
  engine's name, version, code and fingerprint (a user's binary or module), the
  options it reads (plugin flags, seed, lag compensation), and the harness code
  that runs it (resampling, delay compensation);
- a clip's scores: the output's key, then one value per metric under the
  metric's name, version and code, and the output checks under theirs.

"Code" is as nsbench.store.digests finds it: a module's file and those it imports.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from nsbench.plugins.records import Clip
from nsbench.store.digests import code_digest, code_files, digest, files_content_digest, json_text, nsbench_digest

FORMAT_VERSION = 1
# The run loop's code around an engine (resampling, delay compensation), on
# which every output depends; the engine's own code and what it imports are
# found from its module (code_files).
HARNESS_SOURCES = ("run/engine_run.py", "run/runner.py", "run/clips.py", "run/scoring.py", "audio/files.py")
CHECKS_MODULE = "nsbench.audio.checks"
CHECKS_ENTRY = "checks"


def clip_digest(clip: Clip) -> str:
    """The clip's audio and rate (and transcript): what any output of it, and its scores, depend on."""
    parts: list[bytes | str] = [str(clip.sample_rate)]
    for array in (clip.noisy, clip.clean, clip.sources):
        if array is None:
            parts.append("none")
        else:
            array = np.ascontiguousarray(array)
            parts += [f"{array.dtype.str}{array.shape}", array.data.cast("B")]
    if clip.transcript is not None:  # the wer metric's reference: a corrected text is scored anew
        parts += ["transcript", clip.transcript]
    return digest(*parts)


@dataclass(frozen=True)
class Identity:
    """What a run's outputs and scores depend on, besides each clip: computed
    once per engine in the parent, and sent to worker processes."""

    engine: str  # digest of the engine's name, version, code, fingerprint and options
    metrics: Mapping[str, str] = field(default_factory=dict)  # metric name -> digest
    checks: str = ""

    def output_key(self, clip: Clip) -> str:
        return digest("output", self.engine, clip_digest(clip))


def engine_identity(name: str, version: str, factory: Any, fingerprint: str, options: Mapping[str, Any]) -> str:
    return digest(
        f"nsbench-cache-v{FORMAT_VERSION}", name, version, code_digest(factory), fingerprint,
        json_text(options), nsbench_digest(HARNESS_SOURCES),
    )


def metric_identity(name: str, version: str, func: Any, fingerprint: str = "") -> str:
    """``fingerprint``: what the metric's own options make of it (a recogniser and its model)."""
    return digest(name, version, code_digest(func), *([fingerprint] if fingerprint else []))


def checks_identity() -> str:
    """The output checks' code: nsbench.audio.checks and all it imports (the SI-SDR maths, the lag search)."""
    return digest(CHECKS_ENTRY, files_content_digest(code_files(CHECKS_MODULE)))
