"""The records that engines, datasets, metrics and the run loop exchange.

Plugins build these; the registry validates them. Everything here is plain data
(picklable), so later a pool of workers can receive it unchanged.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np


class UserError(Exception):
    """An expected problem (bad flag, missing folder): one line for the user, no traceback."""


class ClipError(Exception):
    """A problem confined to one clip (unreadable file, engine returned NaN): recorded, run goes on."""


class MetricUndefined(Exception):
    """The metric has no value on this clip (for example no voice-silent segment); the reason is kept."""


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


# --------------------------------------------------------------------------- engines


# An engine spec's ``delay`` (or ``sample_rate``) that the engine itself
# reports once built, in its ``delay`` (``sample_rate``) attribute: RNNoise
# measures its program's delay on a probe, Koala reads its SDK's, a user's
# python: class declares its own.
MEASURED = "measured"


class Engine:
    """Base class for engines: subclass it and override ``process``.

    ``process(audio)``: float32 mono in (at the spec's ``sample_rate``), float32
    out of the same length. Oracle engines also receive the clean reference at
    the same rate as keyword ``clean``; on separation clips an engine may return
    (sources, samples).

    The rate and the delay are declared once, on the EngineSpec; the harness
    sets ``sample_rate`` and ``delay`` here from it when it builds the engine
    (an engine whose spec says MEASURED sets its own, in ``__init__``). The
    harness resamples into and out of the rate, appends ``delay`` zeros to the
    input and removes the first ``delay`` output samples.

    ``prepare()`` is called before each clip, outside the timer (a fresh model
    state, like model loading, is not processing time). ``close()`` releases
    processes, handles and temporary files; the harness always calls it.
    ``notes``: strings the engine found out about itself (a measured delay),
    copied into the results.

    ``stream()``, for ``--block-size`` (nsbench.run.streaming): called after
    ``prepare()`` once per clip, outside the timer; returns a fresh stateful
    stream, or None: not streamable, the default here (and for an engine
    without the method), and the engine then runs whole clips, marked so. A
    stream has ``process(block)``: float32 mono blocks of any length (at the
    engine's rate), fed in order; each call returns whatever output is ready,
    possibly none, possibly more than it was given; and ``flush()``: the rest,
    so that the outputs together are exactly as long as the input. The same
    delay applies; ``close()`` on the stream, if it has one, releases its
    state. Streamed, an engine should give the output ``process`` gives (the
    report shows how far it is, per engine).
    """

    sample_rate: int | None = None
    delay: int = 0

    def process(self, audio: np.ndarray, **reference: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must define process(audio)")

    def prepare(self) -> None:
        """Called before each clip, outside the timer."""

    def stream(self) -> Any:
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


@dataclass(frozen=True)
class EngineSpec:
    """How to build an engine, registered by a plugin.

    ``factory(options)`` builds the engine. ``options`` holds only what is the
    engine's: the flags its plugin added (``--my-flag`` as ``my_flag``), ``seed``
    (None unless ``seeded`` and --seeds), and for a family ``engine_argument``.
    ``sample_rate`` and ``delay`` are the engine's facts, declared here once
    (MEASURED: the built engine reports them). ``requires`` lists importable
    module names checked before building, so a missing package makes the
    engine unavailable (with ``install``) instead of breaking anything else.
    Heavy imports belong inside ``factory``.
    """

    name: str
    factory: Callable[[Mapping[str, Any]], Any]
    description: str
    sample_rate: int | None | str  # None: any rate, the clip's own; MEASURED: the engine's attribute
    delay: int | str  # samples at sample_rate the output lags; MEASURED: the engine's attribute
    requires: tuple[str, ...] = ()
    install: str = ""
    version: Callable[[], str] | str = ""
    oracle: bool = False
    default: bool = True  # run when the user names no engine
    # A family named by prefix: "--engine python:pkg.mod:fn" builds the spec
    # "python" with options["engine_argument"] = "pkg.mod:fn".
    takes_argument: bool = False
    # The factory reads options["seed"]: with --seeds the engine runs once per
    # seed. Deterministic engines (False) run once whatever --seeds says.
    seeded: bool = False
    # What identifies the engine's outputs beyond its name, version, code and
    # options, for the cache (nsbench.store.cache): e.g. the digest of a user's binary.
    fingerprint: Callable[[Mapping[str, Any]], str] | None = None
    # For a family whose facts its own flags give (a command: engine's delay
    # and display name): spec fields to replace, from the options; applied
    # once, when the run selects the engine (nsbench.cli.declared_by_flags).
    declared_by: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    # A reference engine every other is compared with, clip by clip (passthrough,
    # rnnoise), as ``oracle`` marks upper bounds.
    baseline: bool = False
    # Flags that are this engine's definition, not a fault (the passthrough's
    # output is identical to its input): flag name -> why; listed apart.
    expected_flags: Mapping[str, str] = field(default_factory=dict)
    # --- where the reports place it (nsbench.report.layout) ---
    # The engine returns its input unchanged (passthrough): the reference
    # point listed first in every table and left out of the listening grid,
    # whose rows already play the input. ``baseline`` cannot say this: it
    # also marks rnnoise.
    passes_input_through: bool = False

    def rate_of(self, engine: Any) -> int | None:
        """The rate the built engine works at: the declared one, or its own."""
        return engine.sample_rate if self.sample_rate == MEASURED else self.sample_rate

    def delay_of(self, engine: Any) -> int:
        """The delay the harness removes: the declared one, or the engine's own."""
        return int(engine.delay) if self.delay == MEASURED else self.delay

    def declare_on(self, engine: Any) -> None:
        """Gives an Engine the rate and delay declared here, for it to read."""
        if isinstance(engine, Engine):
            if self.sample_rate != MEASURED:
                engine.sample_rate = self.sample_rate
            if self.delay != MEASURED:
                engine.delay = self.delay


# --------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class DatasetSpec:
    """A test set, registered by a plugin.

    ``clips(options)`` returns the clip sources; it raises UserError when the data
    folder is missing or does not match the layout. ``cell_keys`` are the labels
    whose values define a report cell, in table order.
    ``describe(options)`` gives provenance (seed, content hash, root folder).
    ``headline_metric`` names each engine's worst cell; ``table_metrics`` adds
    columns to the per-cell table; ``pooled_cells`` adds rows that pool several
    values of the first cell key (FUSS reports 2-4 sources together), one
    per combination of the other cell keys' values.
    """

    name: str
    clips: Callable[[Mapping[str, Any]], list[ClipSource]]
    description: str
    cell_keys: tuple[str, ...]
    needs_data_folder: bool = False
    describe: Callable[[Mapping[str, Any]], dict[str, Any]] = lambda options: {}
    requires: tuple[str, ...] = ()
    install: str = ""
    version: Callable[[], str] | str = ""
    # --- the headline (nsbench.report.layout) ---
    # "" (the default): the metric whose spec says ``headline_by_default``.
    headline_metric: str = ""
    table_metrics: tuple[str, ...] = ()
    pooled_cells: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


# --------------------------------------------------------------------------- metrics


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
        per clip for the whole run when the runner shares it."""
        from nsbench.store.reference import ReferenceAudio, ReferenceFeatures

        reference = self.reference or ReferenceFeatures(ReferenceAudio(self.clean, self.noisy, self.sample_rate))
        return reference.get(compute, *params)

    def output_feature(self, compute: Callable[..., Any], *params: Any) -> Any:
        """``compute(self, *params)``, once for this output however many metrics
        ask (STOI and ESTOI share the output's band envelopes)."""
        key = (compute.__module__, compute.__qualname__, params)
        if key not in self._derived:
            self._derived[key] = compute(self, *params)
        return self._derived[key]


@dataclass(frozen=True)
class Pooling:
    """How a metric pools over a cell when its value on a clip is the mean of
    several items (FUSS: the clip's scored source pairs), as an official
    evaluation that pools those items reports it.

    The metric then returns a PooledValue per clip. A cell's ``mean`` and
    ``std`` are over every item of its clips (each clip weighs by its count),
    with ``<items>`` (the number of items) and ``clip_mean`` (each clip once)
    beside them. Bootstrap intervals still resample clips, the unit that was
    sampled, and paired tests against the baselines stay per clip.
    """

    items: str  # what a clip's value averages, plural; also the results key of their count ("pairs")
    description: str  # for the reports, e.g. "pooled over scored pairs, as evaluate_lib.py"


@dataclass(frozen=True)
class PooledValue:
    """A clip's value of a pooled metric: the mean of ``count`` items and their
    variance (population, as np.var), from which the cell's std over items
    follows exactly. ``float()`` of it is the mean, so callers that want a
    number get one."""

    mean: float
    count: int
    variance: float = 0.0

    def __float__(self) -> float:
        return float(self.mean)


@dataclass(frozen=True)
class MetricSpec:
    """A metric: a pure function of MetricInputs returning a float (a PooledValue with ``pooling``).

    ``ignores`` says in a few words what the metric cannot see (shown beside it in
    reports, so a scale-invariant score is never read as a level check).
    ``needs_reference``: the metric reads the clean reference (every intrusive
    metric); a clip without one skips it, uncounted as a failure. A metric that
    judges the output alone (or against the input) says False.
    ``needs_voice``: the metric is meaningless when the clean target is silent
    (music-only clips) and is skipped there. The function raises MetricUndefined
    when it has no value on a clip; any other exception fails this metric on
    this clip (recorded with its reason under the clip's ``undefined``), not
    the clip: the other metrics stand. ``pooling``: None, each clip counts once
    in a cell's figures; a Pooling, the function returns a PooledValue and the
    cells pool its items (see Pooling).

    ``values``: a metric that writes several values (``wer``, ``wer_input``,
    ``wer_delta``) names each, with its description; its function then returns
    a mapping with those keys. A string among them is a note about the clip's
    value (``wer_reference``), kept in the record's ``metric_notes``.
    ``options``: the metric's own options (its flags come through the
    ``add_arguments`` hook): ``options(flags, registry)`` runs once per run and
    returns a picklable mapping the function finds in ``inputs.options``. Its
    ``"fingerprint"`` (a string) keys the cache beside the metric's code, and
    its ``"provenance"`` goes into the results (a recogniser's model hashes).
    """

    name: str
    func: Callable[[MetricInputs], float]
    unit: str
    higher_is_better: bool
    description: str
    ignores: str
    needs_voice: bool = True
    needs_reference: bool = True
    requires: tuple[str, ...] = ()
    install: str = ""
    version: Callable[[], str] | str = ""
    default: bool = True
    tasks: tuple[str, ...] = (ENHANCEMENT,)  # the clips it scores; others skip it
    pooling: Pooling | None = None  # None: a cell's figures weigh each clip once
    values: Mapping[str, str] = field(default_factory=dict)  # value name -> description
    options: Callable[[Mapping[str, Any], Any], Mapping[str, Any]] | None = None
    # --- where the reports show it (nsbench.report.layout) ---
    # Value name (the metric's own, or one of ``values``) -> its column in the
    # per-cell table; a value without one shows only as a dataset's table_metrics.
    columns: Mapping[str, Column] = field(default_factory=dict)
    # Shown beside the headline in every summary, compared with the baselines,
    # and written as a top-level key of <engine>.json (Picovoice's layout): stoi.
    beside_headline: bool = False
    # The headline of a dataset that names none (DatasetSpec.headline_metric ""): si_sdri.
    headline_by_default: bool = False


@dataclass(frozen=True)
class Column:
    """A metric's column in the per-cell table: its ``title``, the ``decimals``
    shown, its place (columns sort by ``order``), and whether the plots draw it
    (not an input's own score, nor a timing)."""

    title: str
    decimals: int
    order: int
    plotted: bool = True


def reported_values(metrics: Sequence[MetricSpec]) -> list[MetricSpec]:
    """One spec per value the metrics write into a clip's ``scores``, for the
    summaries and tables: a metric with several ``values`` stands there as one
    spec per value (its unit and direction, the value's description)."""
    result = []
    for metric in metrics:
        if not metric.values:
            result.append(metric)
            continue
        result += [
            dataclasses.replace(metric, name=name, description=description, values={})
            for name, description in metric.values.items()
        ]
    return result


# --------------------------------------------------------------------------- recognisers


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


# --------------------------------------------------------------------------- results


@dataclass
class ClipRecord:
    """The outcome of one engine on one clip: scores, or the reason it failed."""

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
    flags: list[str] = field(default_factory=list)  # degenerate output (nsbench.run.checks.FLAGS)
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


def spec_version(spec: EngineSpec | DatasetSpec | MetricSpec | RecogniserSpec) -> str:
    version = spec.version
    return version() if callable(version) else version


