"""Input conditions: what happens to a clip before the engine hears it.

A condition is a named, deterministic transform of a clip's noisy input (a
codec round trip, a limiter, a telephone band), registered by a plugin with
``register_conditions``. ``--condition`` runs the whole set once per condition
named, each its own cell under the label ``condition`` (beside ``noise`` and
``snr_db``); ``none`` (the input as it is) is always among them, so every
condition's gain has the unprocessed gain beside it. ``a+b`` composes: ``a``
first, then ``b``.

A condition says whether it also applies to the clean reference: band-limiting
both keeps an intelligibility score fair, while a codec's loss is exactly what
the engine should not be credited for, so the reference stays as it was.

Conditioned clips keep their dataset's loader and wrap it (a partial of a
module-level function, so worker processes and Dask receive them); their id is
``<clip>@<condition>``. The cache keys outputs on the clip's audio, which is
now the conditioned audio: outputs and scores under one condition are never
served for another. The conditioned audio itself is cached too (a codec round
trip costs more than most engines), keyed on the dataset's clip and the
condition's names, parameters, code and library versions.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from nsbench.store import cache
from nsbench.store.digests import code_digest, digest, json_text, nsbench_digest
from nsbench.store.keys import clip_digest
from nsbench.plugins.specs import ConditionSpec
from nsbench.plugins.errors import ClipError, UserError
from nsbench.plugins.records import Clip, ClipSource
from nsbench.plugins.specs import spec_version
from nsbench.record_terms import LABEL, NONE  # noqa: F401 (NONE: this module's API too)

COMPOSE = "+"
ID_SEPARATOR = "@"


@dataclass(frozen=True)
class Step:
    """One condition of a chain, as a worker needs it: picklable."""

    name: str
    transform: Callable[[np.ndarray, int], np.ndarray]
    reference: bool


@dataclass(frozen=True)
class Condition:
    """What one ``--condition`` names: registered conditions applied in order."""

    name: str
    specs: tuple[ConditionSpec, ...]

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(Step(spec.name, spec.transform, spec.reference) for spec in self.specs if spec.name != NONE)

    def identity(self) -> str:
        """What the conditioned audio depends on besides the clip, for the cache."""
        parts = [
            f"{spec.name}:{json_text(spec.parameters)}:{spec.reference}:{code_digest(spec.transform)}:{spec_version(spec)}"
            for spec in self.specs
        ]
        return digest("condition", *parts, nsbench_digest(HARNESS_SOURCES))


# The parts of nsbench conditioned audio depends on (application, resampling, alignment).
HARNESS_SOURCES = ("run/conditions.py", "audio/files.py", "audio/alignment.py")
# Where conditioned audio is cached: (cache root, whether to read it, the run's size cap in bytes or None);
# None: nowhere.
Store = tuple[str, bool, "int | None"]


def resolve(names: Sequence[str], kind: Any) -> list[Condition]:
    """The conditions ``--condition`` asked for, ``none`` first if it was not
    named; [] when none was asked (the run is then exactly as without).
    ``kind`` is the registry's conditions. An unknown name, a missing package or
    a missing codec raises UserError, before any engine runs."""
    if not names:
        return []
    ordered = list(dict.fromkeys(name.strip() for name in names))
    if NONE not in ordered:
        ordered.insert(0, NONE)
    conditions = []
    for name in ordered:
        parts = name.split(COMPOSE)
        specs = tuple(kind.require_available(part.strip()).spec for part in parts)
        conditions.append(Condition(COMPOSE.join(spec.name for spec in specs), specs))
    for spec in {spec.name: spec for condition in conditions for spec in condition.specs}.values():
        check_picklable(spec)
        lacking = spec.missing() if spec.missing else ""
        if lacking:
            raise UserError(f"condition '{spec.name}' cannot run: {lacking}")
    return conditions


def check_picklable(spec: ConditionSpec) -> None:
    """Conditioned clips go to worker processes and Dask with their transform:
    one that does not pickle would fail there, clip by clip; it is refused here."""
    try:
        pickle.dumps(spec.transform)
    except Exception as error:
        raise UserError(
            f"condition '{spec.name}': its transform cannot be sent to worker processes ({error}); "
            "make it a module-level function or a functools.partial of one"
        ) from None


def conditioned_sources(
    sources: Sequence[ClipSource], conditions: Sequence[Condition], store: Store | None = None
) -> list[ClipSource]:
    """Each clip under each condition, a clip's conditions together (so a
    partial or interrupted run still pairs them). Unchanged without conditions."""
    if not conditions:
        return list(sources)
    identities = {condition.name: condition.identity() for condition in conditions}
    return [
        conditioned(source, condition, identities[condition.name], store) for source in sources for condition in conditions
    ]


def conditioned(source: ClipSource, condition: Condition, identity: str = "", store: Store | None = None) -> ClipSource:
    labels = {**source.labels, LABEL: condition.name}
    if not condition.steps:  # none: the dataset's own clip, the same id, the same cache entries
        return ClipSource(source.clip_id, source.load, labels, source.has_reference)
    return ClipSource(
        clip_id=f"{source.clip_id}{ID_SEPARATOR}{condition.name}",
        load=functools.partial(load_conditioned, source.load, condition.name, condition.steps, identity, store),
        labels=labels,
        has_reference=source.has_reference,
    )


def load_conditioned(
    load: Callable[[], Clip], name: str, steps: Sequence[Step], identity: str = "", store: Store | None = None
) -> Clip:
    """The dataset's clip with the condition applied: each step to the noisy
    input, and to the references where the step says so (from the cache when
    it holds them). A step that fails fails this clip, with the reason."""
    clip = load()
    references = any(step.reference for step in steps)
    key = digest(identity, clip_digest(clip)) if store else ""
    arrays = stored_arrays(store, key)
    if arrays is None:
        arrays = apply_steps(clip, steps)
        if store:
            cache.Cache(Path(store[0]), max_size=store[2]).put_output(key, cache.CachedOutput(np.vstack(arrays), math.nan, math.nan, ""))
    noisy, clean = arrays[0], arrays[1] if references and clip.clean is not None else clip.clean
    sources = np.stack(arrays[2:]) if references and clip.sources is not None else clip.sources
    # The noise stem no longer adds up with the conditioned input: dropped.
    return dataclasses.replace(
        clip, clip_id=f"{clip.clip_id}{ID_SEPARATOR}{name}", noisy=noisy, clean=clean, sources=sources, noise=None,
        labels={**clip.labels, LABEL: name},
    )


def stored_arrays(store: Store | None, key: str) -> list[np.ndarray] | None:
    if not store or not store[1]:
        return None
    entry = cache.Cache(Path(store[0])).get_output(key)
    return None if entry is None else list(entry.audio)


def apply_steps(clip: Clip, steps: Sequence[Step]) -> list[np.ndarray]:
    """[noisy], or [noisy, clean, *sources] when a step applies to the references."""
    noisy, clean, sources = clip.noisy, clip.clean, clip.sources
    for step in steps:
        noisy = apply(step, noisy, clip.sample_rate, "noisy input")
        if step.reference:
            # A clip without a reference (clean None) has only its input to condition.
            clean = apply(step, clean, clip.sample_rate, "clean reference") if clean is not None else None
            if sources is not None:
                sources = np.stack([apply(step, row, clip.sample_rate, "reference sources") for row in sources])
    if not any(step.reference for step in steps):
        return [noisy]
    if clean is None:
        return [noisy]
    return [noisy, clean, *(sources if sources is not None else [])]


def apply(step: Step, audio: np.ndarray, rate: int, role: str) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32)
    try:
        result = step.transform(audio, rate)
    except ClipError as error:
        raise ClipError(f"condition {step.name} failed on the {role}: {error}") from error
    except Exception as error:
        raise ClipError(f"condition {step.name} failed on the {role}: {type(error).__name__}: {error}") from error
    result = np.asarray(result, dtype=np.float32)
    if result.shape != audio.shape:
        raise ClipError(f"condition {step.name} returned {result.shape} samples for {audio.shape} on the {role}")
    if not np.all(np.isfinite(result)):
        raise ClipError(f"condition {step.name} returned NaN or Inf on the {role}")
    return result


def with_condition_cells(cell_keys: Sequence[str]) -> tuple[str, ...]:
    """The dataset's cell keys with ``condition`` last: FUSS pools the values
    of its first key, which must stay first."""
    return (*cell_keys, LABEL) if LABEL not in cell_keys else tuple(cell_keys)


# --------------------------------------------------------------------------- provenance


def provenance(conditions: Sequence[Condition], kind: Any) -> list[dict[str, Any]]:
    """Per condition: its steps' names, parameters, and what they ran with."""
    return [
        {"name": condition.name, "steps": [step_provenance(spec, kind) for spec in condition.specs]}
        for condition in conditions
    ]


def step_provenance(spec: ConditionSpec, kind: Any) -> dict[str, Any]:
    record = kind.get(spec.name)
    return {
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "applies_to_reference": spec.reference,
        "version": record.version,
        "origin": record.origin,
        **(dict(spec.describe()) if spec.describe else {}),
    }


# --------------------------------------------------------------------------- summaries
