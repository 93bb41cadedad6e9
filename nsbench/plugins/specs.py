"""What plugins register: the specs of engines, datasets, metrics and
recognisers, validated by the registry (nsbench.plugins.registry).

Plain frozen data (picklable), so a pool of workers receives them unchanged.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nsbench.plugins.engine import MEASURED, Engine
from nsbench.plugins.errors import UserError
from nsbench.plugins.records import ENHANCEMENT, ClipSource, MetricInputs
# Re-exported: where plugins and the registry have always found them.
from nsbench.plugins.recogniser_specs import (  # noqa: F401
    ChosenRecogniser, MetricContext, Recogniser, RecogniserSpec, no_model_files,
)


@dataclass(frozen=True)
class EngineSpec:
    """How to build an engine, registered by a plugin.

    ``factory(options)`` builds the engine. ``options`` holds only what is the
    engine's: the flags its plugin added (``--my-flag`` as ``my_flag``), ``seed``
    (None unless ``seeded`` and --seeds), and for a family ``engine_argument``.
    ``sample_rate`` and ``delay`` are the engine's facts, each declared in one
    place: here (a number; None for the rate: any rate, the clip's own), or
    on the engine (MEASURED here: the built engine sets its ``sample_rate`` or
    ``delay`` attribute, as a class attribute or in ``__init__``). An Engine
    subclass whose own value differs from a number declared here is refused
    with a UserError naming both (``declare_on``). ``requires`` lists importable
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
    # The flags it takes, by option name (``command_name`` for --command-name),
    # where its plugin's flags are not all its own (python: and command: share
    # one plugin); None: every flag its plugin adds. A flag only engines take,
    # given when no engine of the run takes it, stops the run (nsbench.run.flag_use).
    takes_flags: tuple[str, ...] | None = None
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
    # What must hold before the first clip of the run, checked once in the
    # parent from the options (a user's model imports): raises UserError, so
    # a typo stops the run before any engine runs instead of failing every clip.
    check: Callable[[Mapping[str, Any]], None] | None = None
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
    # '' where the engine can run on this machine, else why not (a native
    # library built for one platform and C library): checked once ``requires``
    # is met; an engine that cannot run here is listed unavailable with it.
    unsupported_here: Callable[[], str] | None = None

    def rate_of(self, engine: Any) -> int | None:
        """The rate the built engine works at: the declared one, or its own."""
        return engine.sample_rate if self.sample_rate == MEASURED else self.sample_rate

    def delay_of(self, engine: Any) -> int:
        """The delay the harness removes: the declared one, or the engine's own."""
        return int(engine.delay) if self.delay == MEASURED else self.delay

    def declare_on(self, engine: Any) -> None:
        """Gives an Engine the rate and delay declared here, for it to read.

        A fact is declared in one place: where the spec gives a number and the
        Engine subclass sets its own different value too, this raises a
        UserError naming both instead of overwriting the engine's silently
        (the same value twice is accepted)."""
        if not isinstance(engine, Engine):
            return
        for fact in ("sample_rate", "delay"):
            declared = getattr(self, fact)
            if declared == MEASURED:
                continue
            own = own_value(engine, fact)
            if own is not NOT_SET and own != declared:
                raise UserError(
                    f"engine '{self.name}': its {fact} is declared twice, {declared!r} on its EngineSpec "
                    f"and {own!r} on {type(engine).__name__}; declare it in one place (the spec's "
                    f"{fact}=MEASURED lets the engine's own value stand)"
                )
            setattr(engine, fact, declared)


NOT_SET = object()


def own_value(engine: Engine, fact: str) -> Any:
    """The engine's own ``sample_rate`` or ``delay``: set on the instance, or as
    a class attribute of a subclass; NOT_SET where only Engine's default is."""
    if fact in vars(engine):
        return vars(engine)[fact]
    for cls in type(engine).__mro__:
        if cls is Engine:
            break
        if fact in vars(cls):
            return vars(cls)[fact]
    return NOT_SET


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
    # The flags it takes, by option name (``allow_unpaired``; ``data_folder``
    # for one it can do without), where its plugin's are not all its own;
    # None: every flag its plugin adds, and --data-folder when it needs one. A
    # flag only datasets take, given to one that does not, stops the run
    # (nsbench.run.flag_use): --data-folder without --dataset once ran the demo.
    takes_flags: tuple[str, ...] | None = None
    requires: tuple[str, ...] = ()
    install: str = ""
    version: Callable[[], str] | str = ""
    # --- the headline (nsbench.report.layout) ---
    # "" (the default): the metric whose spec says ``headline_by_default``.
    headline_metric: str = ""
    table_metrics: tuple[str, ...] = ()
    pooled_cells: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The set a run uses without --dataset (the built-in demo); at most one should say so.
    default: bool = False
    # A rated set's ratings (nsbench.ratings.RatedSet, one per cell): the report
    # sets the metrics against them (nsbench.report.human_agreement). None: no ratings.
    ratings: Callable[[Mapping[str, Any]], Sequence[Any]] | None = None


# --------------------------------------------------------------------------- metrics


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
    ``options``: the metric's own options: ``options(flags, context)`` runs
    once per run, in the parent, with only the flags the metric's plugin added
    (``add_arguments`` hook) and a MetricContext (the recognisers it may
    choose from, --no-cache, --rerun), and returns a picklable mapping the
    function finds in ``inputs.options`` (PLUGIN_API 4). Its
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
    options: Callable[[Mapping[str, Any], "MetricContext"], Mapping[str, Any]] | None = None
    # --- where the reports show it (nsbench.report.layout) ---
    # Value name (the metric's own, or one of ``values``) -> its column in the
    # per-cell table; a value without one shows only as a dataset's table_metrics.
    columns: Mapping[str, Column] = field(default_factory=dict)
    # Shown beside the headline in every summary, compared with the baselines,
    # and written as a top-level key of <engine>.json (Picovoice's layout): stoi.
    beside_headline: bool = False
    # The headline of a dataset that names none (DatasetSpec.headline_metric ""): si_sdri.
    headline_by_default: bool = False
    # On a set without references, where no intrusive headline can be computed:
    # this metric's place among the headline's candidates (1 first; 0: never).
    headline_without_reference: int = 0
    # --- the ranking (nsbench.ranking, URGENT's rule) ---
    # The category it ranks in ("non-intrusive", "intrusive", "downstream" or a
    # plugin's own); "": never ranked (levels, timings, input scores, and
    # figures that rank exactly as another: si_sdri as si_sdr). Of a metric
    # with several ``values``, only the value named as the metric ranks.
    category: str = ""
    # Its part in the voice_level_drop flag (nsbench.audio.checks.score_flags): a
    # clip whose "level" value is below -(--voice-drop-db) while its
    # "improvement" value is positive (voice_level_db and si_sdri); "": none.
    voice_drop_role: str = ""


@dataclass(frozen=True)
class MetricSetSpec:
    """A named set of metrics: ``--metric NAME`` runs them all, in order.
    ``columns``: where papers print the set as a row per system, each
    metric's column title; report.md and a LaTeX tabular then hold that table,
    means at ``decimals`` places, ``source`` in its footnote
    (nsbench.report.paper_table). Its metrics' packages are its ``requires``,
    checked together when it is named (Registry.set_members)."""

    name: str
    metrics: tuple[str, ...]
    description: str
    columns: tuple[str, ...] = ()  # () : no paper table; else one title per metric
    decimals: int = 2
    source: str = ""
    requires: tuple[str, ...] = ()  # none of its own
    version: str = ""
    # True: run the members this installation has, leaving out (and naming)
    # those unavailable here; False: every member, or a UserError.
    partial: bool = False


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
            dataclasses.replace(metric, name=name, description=description, values={},
                                category=metric.category if name == metric.name else "")
            for name, description in metric.values.items()
        ]
    return result


def spec_version(spec: EngineSpec | DatasetSpec | MetricSpec | RecogniserSpec) -> str:
    version = spec.version
    return version() if callable(version) else version


# The condition that leaves the input as it is, always run first under --condition.
NO_CONDITION = "none"


@dataclass(frozen=True)
class ConditionSpec:
    """A named transform of a clip's audio, registered by a plugin.

    ``transform(audio, sample_rate)`` returns float32 audio of the same length
    at the same rate; it must be deterministic (the same input gives the same
    bytes) and picklable (a module-level function or a functools.partial).
    ``reference``: also applied to the clean reference (and the reference
    sources). ``parameters`` are recorded in every result file.
    ``missing()`` returns what the machine lacks to run it ("" if nothing;
    for example an encoder the installed FFmpeg build does not have): checked
    before any engine runs. ``describe()`` returns the library versions and
    codec names it used, for provenance.
    """

    name: str
    transform: Callable[[np.ndarray, int], np.ndarray]
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    reference: bool = False
    requires: tuple[str, ...] = ()
    install: str = ""
    version: Callable[[], str] | str = ""
    missing: Callable[[], str] | None = None
    describe: Callable[[], Mapping[str, Any]] | None = None
