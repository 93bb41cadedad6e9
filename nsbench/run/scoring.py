"""A clip's scores and output checks: each metric's value or the reason it
has none, the residual lag and the flags, from the cache where it holds them.
Metrics run here with one BLAS thread (nsbench.run.clips.run_clip sets it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from nsbench.audio import checks
from nsbench.run.engine_run import EngineRun, NeedsScores, Produced
from nsbench.store.cache import Cache
from nsbench.store.reference import ReferenceFeatures, reference_key
from nsbench.plugins.errors import MetricUndefined
from nsbench.plugins.records import Clip, MetricInputs, ReferenceAudio
from nsbench.plugins.specs import MetricSpec, PooledValue


@dataclass(frozen=True)
class Scored:
    """What scoring gives a clip's record: each metric's value or the reason
    it has none, what metrics noted, pooled items, the residual lag and the flags."""

    scores: dict[str, float]
    undefined: dict[str, str]
    metric_notes: dict[str, str]
    pooled: dict[str, dict[str, float]]
    residual_lag: int | None
    lag_unmeasured: str
    flags: list[str]


def score_and_check(clip: Clip, produced: Produced, run: EngineRun) -> Scored:
    """Scores, residual lag and flags, taking from the cache what it holds and
    storing what was computed. Stored scores belong to the stored output: an
    output just computed (an engine need not be deterministic) is scored anew."""
    output, key = produced.audio, produced.key
    stored = run.cache.get_scores(key) if run.cache and produced.from_cache else {}
    if run.stored_only and not scores_complete(run, stored):
        raise NeedsScores()
    values = dict(stored)
    scores, undefined, notes, pooled = score(clip, produced, run, values)
    checked = values.get(run.identity.checks) if run.cache else None
    if checked is None:
        lag, unmeasured = checks.residual_lag(output, clip)
        checked = {"residual_lag": lag, "lag_unmeasured": unmeasured, "flags": checks.output_flags(output, clip, lag)}
        if run.cache:
            values[run.identity.checks] = checked
    if run.cache and values != stored:
        run.cache.put_scores(key, values)
    return Scored(scores, undefined, notes, pooled, checked["residual_lag"], checked["lag_unmeasured"],
                  checked["flags"] + checks.score_flags(scores, run.metrics, run.voice_drop_db))


def scores_complete(run: EngineRun, stored: Mapping[str, Any]) -> bool:
    """Every metric and the output checks are in the clip's stored scores."""
    return run.identity.checks in stored and all(run.identity.metrics[metric.name] in stored for metric in run.metrics)


def separated(output: np.ndarray, clip: Clip) -> np.ndarray | None:
    """The engine's sources on a separation clip. A single-output engine's
    output is copied to every source slot, as FUSS's mixture-copy baseline."""
    if not clip.is_separation:
        return None
    return output if output.ndim == 2 else np.tile(output, (len(clip.sources), 1))


def score(
    clip: Clip, produced: Produced, run: EngineRun, stored: dict[str, Any]
) -> tuple[dict[str, float], dict[str, str], dict[str, str], dict[str, dict[str, float]]]:
    """Each metric's value or the reason it has none, the notes metrics gave
    and the pooled metrics' items. ``stored`` holds cached results by metric
    identity: those are used, and new ones are added to it."""
    output = produced.audio
    inputs = MetricInputs(
        output=output,
        clean=clip.clean,
        noisy=clip.noisy,
        sample_rate=clip.sample_rate,
        cpu_seconds=produced.cpu_seconds,
        wall_seconds=produced.wall_seconds,
        reference_sources=clip.sources,
        output_sources=separated(output, clip),
        transcript=clip.transcript,
        reference=reference_features(clip, run.cache),
    )
    scores: dict[str, float] = {}
    undefined: dict[str, str] = {}
    notes: dict[str, str] = {}
    pooled: dict[str, dict[str, float]] = {}
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
            notes.update(result.get("notes", {}))
            if "pooled" in result:
                pooled[metric.name] = result["pooled"]
    return scores, undefined, notes, pooled


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
