"""One clip through one engine: load it, produce the output (from the cache
or the engine, whole or block by block), then score and check it
(nsbench.run.scoring).

It owns what must be the same for every engine: the timing boundary
(resampling in, the engine call, resampling out; never model loading), delay
compensation, the checks on what an engine returns, and rebuilding an engine
that raised. A clip that fails raises ClipError inside and comes back as a
record with its reason.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from typing import Any

import numpy as np
import psutil
from threadpoolctl import ThreadpoolController

from nsbench.run import clip_timeout, streaming
from nsbench.run.engine_run import (
    MIN_CLIP_SECONDS,
    EngineHolder,
    EngineRun,
    NeedsEngine,
    NonFiniteOutput,
    Outcome,
    Produced,
    engine_faults,
    fault_text,
)
from nsbench.run.scoring import score_and_check, scores_complete
from nsbench.audio.files import fit_length, level_problem, non_finite, resample
from nsbench.store.cache import CachedOutput
from nsbench.text import plural
from nsbench.plugins.engine import Engine
from nsbench.plugins.errors import ClipError
from nsbench.plugins.records import Clip, ClipSource
from nsbench.plugins.specs import EngineSpec


def run_clip(holder: EngineHolder, source: ClipSource, run: EngineRun) -> Outcome:
    with holder.kept_cwd():  # an engine's os.chdir must not move the paths of the next clips
        return clip_outcome(holder, source, run)


def clip_outcome(holder: EngineHolder, source: ClipSource, run: EngineRun) -> Outcome:
    """The clip's record, assembled once from what loading, producing and
    scoring returned; a ClipError gives the record of what was known, and why."""
    known: dict[str, Any] = {}
    try:
        clip = loaded(source)
        known = {"notes": list(clip.notes), "duration": clip.duration, "source_path": clip.source_path,
                 "sample_rate": clip.sample_rate}
        produced = produce_for(holder, clip, run)
        known.update(produced.record_fields())
        # One BLAS thread: on 4-second clips BLAS threads cost more than they save
        # (STOI and ESTOI took 30% more CPU with two), and with --jobs the workers
        # already keep every core busy.
        with one_blas_thread():
            scored = score_and_check(clip, produced, run)
    except ClipError as error:
        flags = ["nan_inf"] if isinstance(error, NonFiniteOutput) else []
        ran = {"streaming": error.streaming} if hasattr(error, "streaming") else {}  # produce_streamed's
        record = run.record_for(source, str(error), **{**known, **ran, "flags": flags})
        return Outcome(record, None, 0, cache_warnings(run))
    record = run.record_for(source, **known, **dataclasses.asdict(scored))
    return Outcome(record, produced.audio, clip.sample_rate, cache_warnings(run))


def loaded(source: ClipSource) -> Clip:
    clip = source.load()
    clip_timeout.loaded(clip.duration)  # a long clip's bound is longer
    check_clip(clip)
    return clip


def produce_for(holder: EngineHolder, clip: Clip, run: EngineRun) -> Produced:
    key = run.identity.output_key(clip) if run.cache else ""
    if run.blocks:
        return produce_streamed(holder, clip, run, key, run.blocks.samples(clip.sample_rate))
    return produce(holder, clip, run, key)


def needs_beyond_cache(source: ClipSource, run: EngineRun) -> str | None:
    """What run_clip would need besides the cache for this clip: None (it is
    served whole, or fails before any engine: it does not load, holds NaN, is
    too short), "engine" (no output stored), or "scores" (the output is
    stored but not every score, with ``run.stored_only``). Reads the clip and
    at most its scores entry, never its output: nsbench.run.runner decides
    with it which clips the cache serves, before reading any."""
    try:
        clip = source.load()
        check_clip(clip)
        check_length(clip)
    except ClipError:
        return None
    key = run.identity.output_key(clip)
    if run.blocks:
        key = streaming.stream_key(key, run.blocks.samples(clip.sample_rate))
    if not run.cache.path(key, "output").is_file():
        return "engine"
    if run.stored_only and not scores_complete(run, run.cache.get_scores(key)):
        return "scores"
    return None


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


def stored_output(run: EngineRun, key: str) -> Produced | None:
    """The output the cache holds under ``key``, with the timings of the run that made it."""
    cached = run.cache.get_output(key) if run.cache else None
    return None if cached is None else produced_from(cached, key, from_cache=True)


def keep_output(run: EngineRun, key: str, output: CachedOutput) -> Produced:
    """An output just computed, stored in the cache if there is one."""
    if run.cache:
        run.cache.put_output(key, output)
        run.cache.mark(run.identity.engine)
    return produced_from(output, key, from_cache=False)


def produced_from(output: CachedOutput, key: str, from_cache: bool) -> Produced:
    return Produced(output.audio, output.cpu_seconds, output.wall_seconds, output.delay, from_cache, key, output.streaming)


def produce(holder: EngineHolder, clip: Clip, run: EngineRun, key: str, ready: ReadyEngine | None = None) -> Produced:
    """The engine's output for the clip, from the cache if it is there (with
    the timings of the run that made it), else from the engine, then stored.
    ``ready``: the engine already prepared for this clip."""
    found = stored_output(run, key) or keep_output(
        run, key, CachedOutput(*(run_whole(holder, clip, *ready) if ready else process(holder, clip, run.lag_compensation))))
    return dataclasses.replace(found, streaming={})  # a whole clip's: no block figures


def produce_streamed(holder: EngineHolder, clip: Clip, run: EngineRun, whole_key: str, block_size: int) -> Produced:
    """--block-size: the engine's output streamed block by block (nsbench.run.streaming),
    from the cache under a key that holds the block size, or computed and
    compared with the whole-clip output (its key then the stream's). An
    engine that cannot stream runs the whole clip, marked so (its key the whole clip's)."""
    key = streaming.stream_key(whole_key, block_size) if run.cache else ""
    found = stored_output(run, key)
    if found is not None:
        return found
    ready = ready_engine(holder, clip, run.lag_compensation)
    stream = open_stream(holder, ready)
    if stream is None:
        whole = streaming.not_streamable(block_size, holder.spec.oracle)
        try:
            return dataclasses.replace(produce(holder, clip, run, whole_key, ready), streaming=whole)
        except ClipError as error:
            error.streaming = whole  # the failed clip's record still says why it ran whole (clip_outcome)
            raise
    output = CachedOutput(*run_streamed(holder, clip, stream, ready, block_size))
    output.streaming.update(compared_with_whole(holder, clip, run, whole_key, output.audio))
    return keep_output(run, key, output)


def open_stream(holder: EngineHolder, ready: ReadyEngine) -> streaming.Stream | None:
    try:
        return streaming.open_stream(ready[0], holder.spec.oracle)
    except engine_faults() as error:
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
    except engine_faults() as error:
        holder.discard()
        if isinstance(error, ClipError):
            raise
        raise ClipError(f"engine's stream raised {fault_text(error)}") from error
    check_output(output, len(clip.noisy))
    return output, cpu, wall, f"{delay} samples at {rate} Hz", stats


def compared_with_whole(holder: EngineHolder, clip: Clip, run: EngineRun, whole_key: str, streamed: np.ndarray) -> dict[str, Any]:
    """How far the streamed output is from the whole-clip one: that one from
    the cache if there, else computed (and stored), its cost kept."""
    whole = stored_output(run, whole_key)
    figures: dict[str, Any] = {"whole_from": "cache"}
    if whole is None:
        try:
            whole = keep_output(run, whole_key, CachedOutput(*process(holder, clip, run.lag_compensation)))
        except ClipError as error:
            return {"whole_from": "failed", "versus_whole": f"whole-clip run failed: {error}"}
        figures = {"whole_from": "computed", "whole_seconds": whole.wall_seconds}
    return {**figures, "versus_whole": streaming.versus_whole(streamed, whole.audio)}


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
    except engine_faults() as error:
        raise ClipError(f"engine could not be rebuilt: {fault_text(error)}") from error
    try:
        # Per-clip set-up that is not processing (a fresh model state) stays
        # outside the timer, like model loading.
        getattr(engine, "prepare", lambda: None)()
    except engine_faults() as error:
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
    except engine_faults() as error:
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
    times = os.times()  # the kernel's figures psutil would read from /proc, at a fiftieth of the cost
    total = times.user + times.system + times.children_user + times.children_system
    for pid in getattr(engine, "helper_pids", list)():
        with contextlib.suppress(psutil.Error):
            helper = psutil.Process(pid).cpu_times()
            total += helper.user + helper.system
    return total


def check_clip(clip: Clip) -> None:
    """A dataset's clip with NaN or Inf, or a level no metric can score
    (nsbench.audio.files.LEVEL_LIMIT_DB), fails here with what and where: every
    metric and check downstream would otherwise fail on it in its own way
    (STOI with "window shape cannot be larger than input array shape"), or
    score it wrongly."""
    parts = [("noisy input", clip.noisy), ("clean reference", clip.clean), ("noise", clip.noise)]
    if clip.sources is not None:
        parts += [(f"reference source {index}", source) for index, source in enumerate(clip.sources)]
    for role, audio in parts:
        if audio is None:
            continue
        bad = non_finite(audio)
        if bad:
            raise ClipError(f"the {role} has {bad}")
        level = level_problem(audio)
        if level:
            raise ClipError(f"the {role} {level}")


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
    # No floor: an output however quiet is the engine's silence, scored (and flagged) as such.
    level = level_problem(output, floor=False)
    if level:
        raise ClipError(f"engine output {level}")
