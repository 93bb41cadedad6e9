"""The records plugins and the run loop exchange: clips, their sources, a
metric's inputs, and the outcome of one engine on one clip.

Everything here is plain data (picklable), so a pool of workers receives it
unchanged.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np


# --------------------------------------------------------------------------- clips

# What a clip asks of an engine; a metric declares which it scores.
ENHANCEMENT = "enhancement"
SEPARATION = "separation"


@dataclass(frozen=True)
class Clip:
    """One test item, loaded. Arrays are float32 mono at ``sample_rate``.

    ``clean`` is the target the engine should produce; on a music-only clip it is
    all zeros (the user wants silence); None: the clip has no clean reference
    (a user's recording, DNS 2020's real and blind sets), and only metrics
    with ``needs_reference=False`` score it (PLUGIN_API 3). ``noise`` is the interfering stem (noise or
    music) where the dataset knows it. ``sources`` makes it a separation clip
    (FUSS): the reference sources, (sources, samples); engines may then return
    several outputs, and only separation metrics apply.
    """

    clip_id: str
    noisy: np.ndarray
    clean: np.ndarray | None
    sample_rate: int
    noise: np.ndarray | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    source_path: str = ""
    sources: np.ndarray | None = None
    # What the clean voice says, where the dataset knows it (for word error rate).
    transcript: str | None = None

    @property
    def duration(self) -> float:
        return len(self.noisy) / self.sample_rate

    @property
    def has_reference(self) -> bool:
        return self.clean is not None

    @property
    def has_voice(self) -> bool:
        # Without a reference nothing says the voice is absent: a recording
        # brought to be denoised is taken to hold one.
        return self.clean is None or bool(np.any(self.clean))

    @property
    def is_separation(self) -> bool:
        return self.sources is not None

    @property
    def task(self) -> str:
        return SEPARATION if self.is_separation else ENHANCEMENT


@dataclass(frozen=True)
class ClipSource:
    """A clip not yet loaded: its id, its report labels, and how to load it.

    Loading is deferred so that an unreadable file fails that clip only.
    ``load`` must be a picklable callable (a module-level function or a partial).
    """

    clip_id: str
    load: Callable[[], Clip]
    labels: Mapping[str, str] = field(default_factory=dict)
    # False: the clip loads with ``clean=None``; the run then picks the
    # metrics that need no reference (nsbench.cli.select_metrics).
    has_reference: bool = True



# What a reference feature returns (MetricInputs.feature): arrays by name.
Features = dict[str, Any]


@dataclass(frozen=True)
class ReferenceAudio:
    """What a reference feature may read: the clip's clean voice and noisy
    input as the metrics score them, and their rate."""

    clean: np.ndarray | None  # None: the clip has no reference
    noisy: np.ndarray
    sample_rate: int


@dataclass(frozen=True)
class MetricInputs:
    """Everything a metric may look at for one clip and one engine.

    Arrays are float32 at ``sample_rate``, all the same length, with the
    engine's delay already removed. On separation clips ``reference_sources``
    and ``output_sources`` are (sources, samples); ``output`` is then what the
    engine returned (mono or several sources).
    """

    output: np.ndarray
    clean: np.ndarray | None  # None: the clip has no reference (only needs_reference=False metrics see it)
    noisy: np.ndarray
    sample_rate: int
    cpu_seconds: float = float("nan")
    wall_seconds: float = float("nan")
    reference_sources: np.ndarray | None = None
    output_sources: np.ndarray | None = None
    transcript: str | None = None  # the clip's, where the dataset knows it
    options: Mapping[str, Any] = field(default_factory=dict)  # the metric's own (MetricSpec.options)
    # The clip's reference-side features, shared by every engine of a run
    # (nsbench.store.reference); None computes them here, for this call alone.
    reference: Any = None
    # What metrics derive from this output, shared among them (output_feature).
    _derived: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def duration(self) -> float:
        return len(self.noisy) / self.sample_rate

    def feature(self, compute: Callable[..., dict[str, Any]], *params: Any) -> dict[str, Any]:
        """``compute(ReferenceAudio(clean, noisy, rate), *params)``: what a metric
        derives from the clip's clean voice and noisy input alone, computed once
        per clip for the whole run when the runner shares it (``reference``,
        nsbench.store.reference.ReferenceFeatures); without it, for this call alone."""
        if self.reference is not None:
            return self.reference.get(compute, *params)
        return compute(ReferenceAudio(self.clean, self.noisy, self.sample_rate), *params)

    def output_feature(self, compute: Callable[..., Any], *params: Any) -> Any:
        """``compute(self, *params)``, once for this output however many metrics
        ask (STOI and ESTOI share the output's band envelopes; the composite
        measures, pesq_wb's score), whatever their options: what a compute
        reads of a metric's options it takes as ``params``."""
        key = (compute.__module__, compute.__qualname__, params)
        if key not in self._derived:
            self._derived[key] = compute(self, *params)
        return self._derived[key]



# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ClipRecord:
    """The outcome of one engine on one clip: scores, or the reason it failed.
    Built once, from what the clip's steps returned (nsbench.run.clips.clip_outcome)."""

    engine: str
    clip_id: str
    labels: dict[str, str]
    scores: dict[str, float] = field(default_factory=dict)
    undefined: dict[str, str] = field(default_factory=dict)  # metric -> reason
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    duration: float = 0.0
    cpu_seconds: float = float("nan")
    wall_seconds: float = float("nan")
    source_path: str = ""
    delay: str = ""  # the delay the harness removed, "N samples at R Hz"
    seed: int | None = None  # the engine's seed, for seeded engines run with --seeds
    sample_rate: int = 0  # the clip's rate, at which residual_lag counts samples
    # Samples the output still lags the clean voice once the delay was removed
    # (negative: early); None where not measured, and then lag_unmeasured says
    # why, unless the check does not apply (no voice, a separation clip).
    residual_lag: int | None = None
    lag_unmeasured: str = ""
    flags: list[str] = field(default_factory=list)  # degenerate output (nsbench.audio.checks.FLAGS)
    # The output came from the cache (nsbench.store.cache): its timings are those of
    # the run that made it.
    from_cache: bool = False
    # Metrics with a Pooling: metric -> {"count": items, "variance": their
    # variance} on this clip, beside its value in ``scores``.
    pooled: dict[str, dict[str, float]] = field(default_factory=dict)
    # Notes a metric returned about its value (wer_reference: "asr_of_clean").
    metric_notes: dict[str, str] = field(default_factory=dict)
    # With --block-size (nsbench.run.streaming): how the clip ran, streamed or
    # whole, its per-block compute times and how far it is from the whole-clip
    # output. Empty without --block-size.
    streaming: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def run_id(self) -> str:
        """The clip, and the seed where several ran: names output files and flagged clips."""
        return self.clip_id if self.seed is None else f"{self.clip_id}_seed{self.seed}"

    def to_json(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        if not self.streaming:  # only runs with --block-size have the key
            del record["streaming"]
        return record

