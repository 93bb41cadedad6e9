"""The run loop: one engine over a list of clips, one record per clip.

It owns what must be the same for every engine: the timing boundary (resampling
in, the engine call, resampling out; never model loading), delay compensation,
output checks, scoring, and cleanup (the engine is always closed). It does no
file I/O: it yields records and output audio, and the caller writes them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import pickle
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Protocol, Sequence

import numpy as np
import psutil
from threadpoolctl import ThreadpoolController

from nsbench.run import checks, streaming
from nsbench.audio.files import fit_length, non_finite, resample
from nsbench.store.cache import Cache, CachedOutput, Identity
from nsbench.store.reference import ReferenceAudio, ReferenceFeatures, reference_key
from nsbench.text import plural
from nsbench.plugins.records import Clip, ClipRecord, ClipSource, MetricInputs
from nsbench.plugins.errors import ClipError, MetricUndefined, UserError
from nsbench.plugins.engine import Engine
from nsbench.plugins.specs import EngineSpec, MetricSpec, PooledValue


# A user's model may end with sys.exit() on an error, as scripts do: that fails
# its clip like an exception, rather than ending the whole run.
ENGINE_FAULTS = (Exception, SystemExit)
# Clips shorter than one 20 ms level segment (two 10 ms engine frames) give
# engines and metrics nothing to work on; resampling may even leave an engine
# no sample at all. They fail with this reason rather than score.
MIN_CLIP_SECONDS = 0.020


# Option set by --align-constant-lag's second pass: seconds of lag removed on
# top of the engine's declared delay (negative: an early output is delayed).
LAG_COMPENSATION = "lag_compensation_seconds"


class NonFiniteOutput(ClipError):
    """The engine returned NaN or Inf: the clip fails, and is flagged."""


@dataclass
class Outcome:
    record: ClipRecord
    output: np.ndarray | None  # the engine's output at the clip's rate, None if it failed
    sample_rate: int
    warnings: list[str] = field(default_factory=list)  # about the cache, for the user


@dataclass(frozen=True)
class EngineRun:
    """What every clip of one engine's run needs, in this process or a worker.
    With a cache, ``identity`` keys its entries (nsbench.store.cache)."""

    spec: EngineSpec
    options: Mapping[str, Any]
    metrics: Sequence[MetricSpec]
    cache: Cache | None = None
    identity: Identity | None = None
    # Seconds of lag removed on top of the declared delay (--align-constant-lag's second pass).
    lag_compensation: float = 0.0
    voice_drop_db: float = checks.VOICE_DROP_DB  # --voice-drop-db, for the voice_level_drop flag
    blocks: streaming.Blocks | None = None  # --block-size: streamable engines run block by block
    # Serve only what the cache holds whole (output and every score): a clip
    # that needs scoring raises NeedsScores, for the executor's workers to score.
    stored_only: bool = False

    def record_for(self, source: ClipSource, error: str | None = None) -> ClipRecord:
        """The clip's record before it runs, or with the reason it failed."""
        return ClipRecord(engine=self.spec.name, clip_id=source.clip_id, labels=dict(source.labels),
                          seed=self.options.get("seed"), error=error)


class NeedsEngine(Exception):
    """Raised by a holder that may not build its engine: the clip is not
    complete in the cache."""


class NeedsScores(Exception):
    """Raised for a clip whose output is cached but some score is not (a metric
    newly asked for), when only what is stored may be served (EngineRun.stored_only)."""


class EngineHolder:
    """Builds the engine on first use and rebuilds it after it raised, so a
    broken internal state cannot leak into the next clip."""

    def __init__(self, spec: EngineSpec, options: Mapping[str, Any], may_build: bool = True):
        self.spec = spec
        self.options = options
        self.may_build = may_build
        self._engine: Engine | None = None
        self.notes: list[str] = []

    def get(self) -> Engine:
        if self._engine is None:
            if not self.may_build:
                raise NeedsEngine()
            engine = self.spec.factory(self.options)
            if engine is None or not hasattr(engine, "process"):
                raise UserError(f"engine '{self.spec.name}': its factory returned {engine!r}")
            self.spec.declare_on(engine)
            self._engine = engine
        return self._engine

    def all_notes(self) -> list[str]:
        """Notes kept from engines already discarded, and the live engine's."""
        live = getattr(self._engine, "notes", []) if self._engine is not None else []
        return self.notes + [note for note in live if note not in self.notes]

    def discard(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            # What the engine found out about itself (an estimated delay) outlives it.
            for note in getattr(engine, "notes", []):
                if note not in self.notes:
                    self.notes.append(note)
            engine.close()


class Executor(Protocol):
    """Where an engine's clips run: nsbench.run.executors (a pool of worker
    processes) and nsbench.run.dask_executor (a Dask cluster) implement it; the
    run loop itself runs them in this process. Chosen in one place,
    nsbench.run.executors.executor_for.

    ``run`` yields one Outcome per source, in order. It receives the holder
    of the engine the parent built (which proved the engine starts and
    measured what it measures): in-process it may use it; a strategy whose
    workers build their own engines discards it first, and adds what the
    workers noted to ``holder.notes``."""

    def run(self, run: EngineRun, sources: Sequence[ClipSource], holder: EngineHolder) -> Iterator[Outcome]: ...


def in_process(run: EngineRun, sources: Sequence[ClipSource], holder: EngineHolder) -> Iterator[Outcome]:
    return (run_clip(holder, source, run) for source in sources)


def run_engine(
    spec: EngineSpec,
    options: Mapping[str, Any],
    sources: Sequence[ClipSource],
    metrics: Sequence[MetricSpec],
    engine_notes: list[str] | None = None,
    *,
    executor: Executor | None = None,
    cache: Cache | None = None,
    identity: Identity | None = None,
    lag_compensation: float = 0.0,
    voice_drop_db: float = checks.VOICE_DROP_DB,
    blocks: streaming.Blocks | None = None,
    built: EngineHolder | None = None,
) -> Iterator[Outcome]:
    """Run one engine over every clip, in order. A clip that fails is recorded
    with its reason and the loop goes on. An engine that cannot be built raises
    UserError before the first clip (the caller reports it and moves on).
    The engine's own notes (``engine.notes``) are added to ``engine_notes``.

    The ``executor`` runs the clips (default: here, one after the other);
    records come back in clip order whatever it is, so the results equal a
    serial run's (only the timings differ).

    With a ``cache`` (and the run's ``identity``), clips whose output and
    scores are all stored come from it first, and the engine is built only if
    some clip still needs it; what is computed is stored as it comes.

    With ``blocks``, engines that can stream run block by block (nsbench.run.streaming).

    ``built``: the engine already built with these options (the run loop
    builds the next engine while this one's clips run in workers); it is
    used, or closed if every clip comes from the cache."""
    run = EngineRun(spec, options, metrics, cache if identity else None, identity, lag_compensation, voice_drop_db, blocks)
    # With an executor, cached outputs that a new metric must score go to its workers too.
    stored, engine_needed = complete_in_cache(run, sources, scores_elsewhere=executor is not None)
    missing = [source for index, source in enumerate(sources) if index not in stored]
    if not missing:
        if built is not None:
            built.discard()
        yield from stored.values()
        return
    holder = built if built is not None else EngineHolder(spec, options)
    try:
        try:
            if engine_needed:  # only scoring left: the engine need not start
                holder.get()
        except UserError:
            raise
        except ENGINE_FAULTS as error:
            raise UserError(f"engine '{spec.name}' could not start: {type(error).__name__}: {error}") from error
        computed = (executor.run if executor else in_process)(run, missing, holder)
        yield from in_clip_order(stored, computed, len(sources))
    finally:
        holder.discard()
        if engine_notes is not None:
            engine_notes.extend(holder.notes)


def complete_in_cache(run: EngineRun, sources: Sequence[ClipSource], scores_elsewhere: bool = False) -> tuple[dict[int, Outcome], bool]:
    """The clips whose output and every score are in the cache, by index,
    served from it, and whether a clip left out needs the engine. Only these
    are served: a clip that would need the engine is left out; with
    ``scores_elsewhere``, so is one whose output is cached but not some score
    (scoring it here would run serially while the executor's workers wait)."""
    if run.cache is None or not run.cache.knows(run.identity.engine):
        return {}, True
    holder = EngineHolder(run.spec, run.options, may_build=False)
    served = dataclasses.replace(run, stored_only=True) if scores_elsewhere else run
    stored, engine_needed = {}, False
    for index, source in enumerate(sources):
        try:
            stored[index] = run_clip(holder, source, served)
        except NeedsScores:
            pass
        except NeedsEngine:
            engine_needed = True
    return stored, engine_needed


def in_clip_order(stored: Mapping[int, Outcome], computed: Iterator[Outcome], count: int) -> Iterator[Outcome]:
    try:
        for index in range(count):
            yield stored[index] if index in stored else next(computed)
        next(computed, None)  # lets it end normally: its workers close their engines
    finally:
        computed.close()  # stops the workers now if the consumer stopped early


def sources_pickle(sources: Sequence[ClipSource], notes: list[str]) -> bool:
    try:
        pickle.dumps(sources[0])
    except Exception as error:
        notes.append(f"ran serially: the dataset's clips cannot be sent to worker processes ({error})")
        return False
    return True


def run_clip(holder: EngineHolder, source: ClipSource, run: EngineRun) -> Outcome:
    record = run.record_for(source)
    try:
        clip = source.load()
        check_clip(clip)
        record.notes.extend(clip.notes)
        record.duration = clip.duration
        record.source_path = clip.source_path
        record.sample_rate = clip.sample_rate
        key = run.identity.output_key(clip) if run.cache else ""
        if run.blocks:
            output, key = produce_streamed(holder, clip, run, key, record, run.blocks.samples(clip.sample_rate))
        else:
            output = produce(holder, clip, run, key, record)
        # One BLAS thread: on 4-second clips BLAS threads cost more than they save
        # (STOI and ESTOI took 30% more CPU with two), and with --jobs the workers
        # already keep every core busy.
        with one_blas_thread():
            score_and_check(clip, output, run, key, record)
    except ClipError as error:
        record.error = str(error)
        record.flags = ["nan_inf"] if isinstance(error, NonFiniteOutput) else []
        return Outcome(record, None, 0, cache_warnings(run))
    return Outcome(record, output, clip.sample_rate, cache_warnings(run))


class OneBlasThread:
    """threadpoolctl's limit to one thread, without listing the loaded
    libraries on every clip (threadpool_limits does: 1.5 to 4 ms a clip). The
    list is made again only when modules were imported since, which may have
    loaded another BLAS."""

    def __init__(self) -> None:
        self._controller: ThreadpoolController | None = None
        self._modules_seen = -1

    def __call__(self):
        if len(sys.modules) != self._modules_seen:
            self._controller = ThreadpoolController()
            self._modules_seen = len(sys.modules)
        return self._controller.limit(limits=1)


one_blas_thread = OneBlasThread()


def cache_warnings(run: EngineRun) -> list[str]:
    if run.cache is None:
        return []
    warnings, run.cache.warnings[:] = list(run.cache.warnings), []
    return warnings


def produce(
    holder: EngineHolder, clip: Clip, run: EngineRun, key: str, record: ClipRecord, ready: ReadyEngine | None = None
) -> np.ndarray:
    """The engine's output for the clip, from the cache if it is there (with
    the timings of the run that made it), else from the engine, then stored.
    ``ready``: the engine already prepared for this clip."""
    cached = run.cache.get_output(key) if run.cache else None
    if cached is not None:
        record.from_cache = True
    else:
        cached = CachedOutput(*(run_whole(holder, clip, *ready) if ready else process(holder, clip, run.lag_compensation)))
        if run.cache:
            run.cache.put_output(key, cached)
            run.cache.mark(run.identity.engine)
    record.cpu_seconds, record.wall_seconds, record.delay = cached.cpu_seconds, cached.wall_seconds, cached.delay
    return cached.audio


def produce_streamed(
    holder: EngineHolder, clip: Clip, run: EngineRun, whole_key: str, record: ClipRecord, block_size: int
) -> tuple[np.ndarray, str]:
    """--block-size: the engine's output streamed block by block (nsbench.run.streaming),
    from the cache under a key that holds the block size, or computed and
    compared with the whole-clip output. An engine that cannot stream runs the
    whole clip, marked so. Returns the output and its cache key."""
    key = streaming.stream_key(whole_key, block_size) if run.cache else ""
    cached = run.cache.get_output(key) if run.cache else None
    if cached is not None:
        record.from_cache = True
    else:
        ready = ready_engine(holder, clip, run.lag_compensation)
        stream = open_stream(holder, ready)
        if stream is None:
            record.streaming = streaming.not_streamable(block_size, holder.spec.oracle)
            return produce(holder, clip, run, whole_key, record, ready), whole_key
        cached = CachedOutput(*run_streamed(holder, clip, stream, ready, block_size))
        cached.streaming.update(compared_with_whole(holder, clip, run, whole_key, cached.audio))
        if run.cache:
            run.cache.put_output(key, cached)
            run.cache.mark(run.identity.engine)
    record.cpu_seconds, record.wall_seconds, record.delay = cached.cpu_seconds, cached.wall_seconds, cached.delay
    record.streaming = cached.streaming
    return cached.audio, key


def open_stream(holder: EngineHolder, ready: ReadyEngine) -> streaming.Stream | None:
    try:
        return streaming.open_stream(ready[0], holder.spec.oracle)
    except ENGINE_FAULTS as error:
        holder.discard()
        raise ClipError(f"engine could not open its stream: {fault_text(error)}") from error


def run_streamed(
    holder: EngineHolder, clip: Clip, stream: streaming.Stream, ready: ReadyEngine, block_size: int
) -> tuple[np.ndarray, float, float, str, dict[str, Any]]:
    """As run_whole, block by block; also returns the per-block figures."""
    engine, rate, delay = ready
    try:
        output, cpu, wall, stats = streaming.run_stream(stream, clip.noisy, clip.sample_rate, rate, delay, block_size,
                                                        lambda: cpu_seconds(engine))
    except ENGINE_FAULTS as error:
        holder.discard()
        if isinstance(error, ClipError):
            raise
        raise ClipError(f"engine's stream raised {fault_text(error)}") from error
    check_output(output, len(clip.noisy))
    return output, cpu, wall, f"{delay} samples at {rate} Hz", stats


def compared_with_whole(holder: EngineHolder, clip: Clip, run: EngineRun, whole_key: str, streamed: np.ndarray) -> dict[str, Any]:
    """How far the streamed output is from the whole-clip one: that one from
    the cache if there, else computed (and stored), its cost kept."""
    whole = run.cache.get_output(whole_key) if run.cache else None
    figures: dict[str, Any] = {"whole_from": "cache"}
    if whole is None:
        try:
            whole = CachedOutput(*process(holder, clip, run.lag_compensation))
        except ClipError as error:
            return {"whole_from": "failed", "versus_whole": f"whole-clip run failed: {error}"}
        figures = {"whole_from": "computed", "whole_seconds": whole.wall_seconds}
        if run.cache:
            run.cache.put_output(whole_key, whole)
    return {**figures, "versus_whole": streaming.versus_whole(streamed, whole.audio)}


def score_and_check(clip: Clip, output: np.ndarray, run: EngineRun, key: str, record: ClipRecord) -> None:
    """Scores, residual lag and flags, taking from the cache what it holds and
    storing what was computed. Stored scores belong to the stored output: an
    output just computed (an engine need not be deterministic) is scored anew."""
    stored = run.cache.get_scores(key) if run.cache and record.from_cache else {}
    if run.stored_only and not scores_complete(run, stored):
        raise NeedsScores()
    values = dict(stored)
    record.scores, record.undefined = score(clip, output, run, record, values)
    checked = values.get(run.identity.checks) if run.cache else None
    if checked is None:
        lag, unmeasured = checks.residual_lag(output, clip)
        checked = {"residual_lag": lag, "lag_unmeasured": unmeasured, "flags": checks.output_flags(output, clip)}
        if run.cache:
            values[run.identity.checks] = checked
    record.residual_lag, record.lag_unmeasured = checked["residual_lag"], checked["lag_unmeasured"]
    record.flags = checked["flags"] + checks.score_flags(record.scores, run.voice_drop_db)
    if run.cache and values != stored:
        run.cache.put_scores(key, values)


def scores_complete(run: EngineRun, stored: Mapping[str, Any]) -> bool:
    """Every metric and the output checks are in the clip's stored scores."""
    return run.identity.checks in stored and all(run.identity.metrics[metric.name] in stored for metric in run.metrics)


# The engine, prepared for a clip, with the rate it runs at and the delay to remove.
ReadyEngine = tuple[Engine, int, int]


def process(holder: EngineHolder, clip: Clip, lag_compensation: float = 0.0) -> tuple[np.ndarray, float, float, str]:
    """Run the engine on one clip; returns (output at the clip's rate, CPU s,
    wall s, the delay removed as "N samples at R Hz")."""
    return run_whole(holder, clip, *ready_engine(holder, clip, lag_compensation))


def ready_engine(holder: EngineHolder, clip: Clip, lag_compensation: float = 0.0) -> ReadyEngine:
    check_length(clip)
    try:
        engine = holder.get()
    except NeedsEngine:
        raise
    except ENGINE_FAULTS as error:
        raise ClipError(f"engine could not be rebuilt: {fault_text(error)}") from error
    try:
        # Per-clip set-up that is not processing (a fresh model state) stays
        # outside the timer, like model loading.
        getattr(engine, "prepare", lambda: None)()
    except ENGINE_FAULTS as error:
        holder.discard()
        raise ClipError(f"engine could not prepare: {fault_text(error)}") from error
    # An engine whose rate is None works at any rate: it gets the clip's own.
    rate = holder.spec.rate_of(engine) or clip.sample_rate
    # The declared delay, and the lag --align-constant-lag found over a first pass.
    delay = holder.spec.delay_of(engine) + round(lag_compensation * rate)
    return engine, rate, delay


def run_whole(holder: EngineHolder, clip: Clip, engine: Engine, rate: int, delay: int) -> tuple[np.ndarray, float, float, str]:
    reference = oracle_reference(holder.spec, clip, rate, delay)
    cpu_start, wall_start = cpu_seconds(engine), time.perf_counter()
    engine_input = resample(clip.noisy, clip.sample_rate, rate)
    try:
        # Zeros appended so the delayed output still holds the clip's last samples.
        raw = engine.process(padded(engine_input, delay), **reference)
    except ENGINE_FAULTS as error:
        holder.discard()
        if isinstance(error, ClipError):  # the adapter already said what went wrong
            raise
        raise ClipError(f"engine raised {fault_text(error)}") from error
    check_output(raw, len(engine_input) + delay, several_allowed=clip.is_separation)
    kept = np.asarray(raw, dtype=np.float32)[..., delay : delay + len(engine_input)]
    output = resample(kept, rate, clip.sample_rate)
    cpu, wall = cpu_seconds(engine) - cpu_start, time.perf_counter() - wall_start
    return fit_length(output, len(clip.noisy)), cpu, wall, f"{delay} samples at {rate} Hz"


def oracle_reference(spec: EngineSpec, clip: Clip, rate: int, delay: int) -> dict[str, np.ndarray]:
    """An oracle's keyword ``clean`` at its rate, padded as its input is; a
    clip without a reference cannot run an oracle, and fails with that reason."""
    if not spec.oracle:
        return {}
    if clip.clean is None:
        raise ClipError(NO_REFERENCE_FOR_ORACLE)
    return {"clean": padded(resample(clip.clean, clip.sample_rate, rate), delay)}


NO_REFERENCE_FOR_ORACLE = "an oracle engine needs the clean reference, and this clip has none"


def check_length(clip: Clip) -> None:
    shortest = int(np.ceil(MIN_CLIP_SECONDS * clip.sample_rate))
    length = len(clip.noisy)
    if length < shortest:
        raise ClipError(
            f"the clip is {length} sample{'' if length == 1 else 's'} long at {clip.sample_rate} Hz; "
            f"nsbench needs at least {1000 * MIN_CLIP_SECONDS:g} ms ({shortest} samples) to run an engine on it"
        )


def fault_text(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"SystemExit: the engine called sys.exit({error.code!r})"
    return f"{type(error).__name__}: {error}"


def padded(audio: np.ndarray, count: int) -> np.ndarray:
    """A float32 copy of ``audio`` with ``count`` zeros appended. Always a
    copy, so an engine that works in place cannot change the clip; only one
    (a long file's clip is not copied twice)."""
    if count == 0:
        return np.array(audio, dtype=np.float32)
    result = np.zeros(len(audio) + count, dtype=np.float32)
    result[: len(audio)] = audio
    return result


def cpu_seconds(engine: Engine | None = None) -> float:
    """User + system CPU time of this process and its waited-for children, so a
    subprocess engine's work is counted like an in-process one; and of the
    programs an engine keeps running across clips (optional
    ``engine.helper_pids()``, e.g. rnnoise's served program)."""
    times = psutil.Process().cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for pid in getattr(engine, "helper_pids", list)():
        with contextlib.suppress(psutil.Error):
            helper = psutil.Process(pid).cpu_times()
            total += helper.user + helper.system
    return total


def check_clip(clip: Clip) -> None:
    """A dataset's clip with NaN or Inf fails here with what and where: every
    metric and check downstream would otherwise fail on it in its own way
    (STOI with "window shape cannot be larger than input array shape")."""
    parts = [("noisy input", clip.noisy), ("clean reference", clip.clean), ("noise", clip.noise)]
    if clip.sources is not None:
        parts += [(f"reference source {index}", source) for index, source in enumerate(clip.sources)]
    for role, audio in parts:
        bad = non_finite(audio) if audio is not None else ""
        if bad:
            raise ClipError(f"the {role} has {bad}")


def check_output(output: object, expected_length: int, several_allowed: bool = False) -> None:
    """Mono (1-D); on separation clips also (sources, samples)."""
    if not isinstance(output, np.ndarray):
        raise ClipError(f"engine returned {type(output).__name__}, expected a numpy array")
    if several_allowed and output.ndim == 2 and output.shape[0] >= 1:
        pass
    elif output.ndim != 1:
        expected = "mono (1-D) or (sources, samples)" if several_allowed else "mono (1-D)"
        raise ClipError(f"engine returned an array of shape {output.shape}, expected {expected}")
    if not np.issubdtype(output.dtype, np.floating):
        raise ClipError(f"engine returned dtype {output.dtype}, expected floating point")
    if output.shape[-1] != expected_length:
        raise ClipError(f"engine returned {output.shape[-1]} samples for {expected_length} in")
    bad = int(np.count_nonzero(~np.isfinite(output)))
    if bad:
        raise NonFiniteOutput(f"engine output has {plural(bad, 'NaN or Inf sample')}")


def separated(output: np.ndarray, clip: Clip) -> np.ndarray | None:
    """The engine's sources on a separation clip. A single-output engine's
    output is copied to every source slot, as FUSS's mixture-copy baseline."""
    if not clip.is_separation:
        return None
    return output if output.ndim == 2 else np.tile(output, (len(clip.sources), 1))


def score(
    clip: Clip, output: np.ndarray, run: EngineRun, record: ClipRecord, stored: dict[str, Any]
) -> tuple[dict[str, float], dict[str, str]]:
    """Each metric's value or the reason it has none. ``stored`` holds cached
    results by metric identity: those are used, and new ones are added to it."""
    inputs = MetricInputs(
        output=output,
        clean=clip.clean,
        noisy=clip.noisy,
        sample_rate=clip.sample_rate,
        cpu_seconds=record.cpu_seconds,
        wall_seconds=record.wall_seconds,
        reference_sources=clip.sources,
        output_sources=separated(output, clip),
        transcript=clip.transcript,
        reference=reference_features(clip, run.cache),
    )
    scores: dict[str, float] = {}
    undefined: dict[str, str] = {}
    for metric in run.metrics:  # with one BLAS thread: see run_clip
        identity = run.identity.metrics[metric.name] if run.cache else metric.name
        if identity not in stored:
            stored[identity] = score_one(metric, clip, inputs)
        result = stored[identity]
        if "failed" in result:  # not cached: a failure may pass (a recogniser's service)
            undefined[metric.name] = result["failed"]
            del stored[identity]
        elif "undefined" in result:
            undefined[metric.name] = result["undefined"]
        elif "values" in result:
            scores.update(result["values"])
            record.metric_notes.update(result.get("notes", {}))
            if "pooled" in result:
                record.pooled[metric.name] = result["pooled"]
    return scores, undefined


def reference_features(clip: Clip, cache: Cache | None) -> ReferenceFeatures:
    """The clip's reference-side features, shared with the run's other engines
    (nsbench.store.reference): computed by the first, then from memory or the cache."""
    key = reference_key(clip.clean, clip.noisy, clip.sample_rate)
    return ReferenceFeatures(ReferenceAudio(clip.clean, clip.noisy, clip.sample_rate), key, cache)


def score_one(metric: MetricSpec, clip: Clip, inputs: MetricInputs) -> dict[str, Any]:
    """{"values": {name: value}, "notes": {name: text}}, {"undefined": reason},
    {"failed": reason}, or {} where the metric does not apply to this clip's
    task. A metric that raises or returns no number fails alone: the clip's
    other metrics stand."""
    if clip.task not in metric.tasks:
        return {}
    if metric.needs_reference and not clip.has_reference:
        return {}  # not a failure, nor undefined: the set cannot use it (the report lists it so)
    if metric.needs_voice and not clip.has_voice:
        return {"undefined": "no voice in this clip"}
    try:
        returned = metric.func(inputs)
    except MetricUndefined as reason:
        return {"undefined": str(reason)}
    except Exception as error:
        return {"failed": f"metric {metric.name} raised {type(error).__name__}: {error}"}
    try:
        result = named_values(metric, returned)
        if metric.pooling is not None:
            result["pooled"] = pooled_items(returned)
        return result
    except (TypeError, ValueError) as error:
        return {"failed": f"metric {metric.name} {error}"}


def named_values(metric: MetricSpec, returned: Any) -> dict[str, Any]:
    """A metric's result as {"values": ...} (and "notes" where it gave text);
    ValueError or TypeError says what is wrong with it."""
    raw = returned if metric.values else {metric.name: returned}
    if not isinstance(raw, Mapping):
        raise TypeError(f"returned {type(raw).__name__}, expected a mapping of {', '.join(metric.values)}")
    values, notes = {}, {}
    for name, value in raw.items():
        if isinstance(value, str):
            notes[name] = value
            continue
        value = float(value)
        if not np.isfinite(value):
            raise ValueError(f"returned {value}" + (f" for {name}" if metric.values else ""))
        values[name] = value
    missing = [name for name in metric.values if name not in values]
    if missing:
        raise ValueError(f"returned no {', '.join(missing)}")
    return {"values": values, "notes": notes} if notes else {"values": values}


def pooled_items(returned: object) -> dict[str, float]:
    """The item count and variance of a pooled metric's clip value; a plain
    number is one item."""
    if not isinstance(returned, PooledValue):
        return {"count": 1, "variance": 0.0}
    if returned.count < 1 or not np.isfinite(returned.variance) or returned.variance < 0:
        raise ValueError(f"returned {returned}: a pooled value needs a count of at least 1 "
                         "and a finite, non-negative variance")
    return {"count": int(returned.count), "variance": float(returned.variance)}
