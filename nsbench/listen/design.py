"""What a listening test holds, decided before any audio is written: which
clips (drawn at random within each cell from a seed: the report's listening
grid picks clips by their metric values, which would bias the very agreement
the test measures), which conditions, and how the trials split into parts.

A part is what one listener rates. Each (clip, condition) pair is in exactly
one part, so listeners spread evenly over the parts rate every pair equally
often: MUSHRA puts clip i in part i mod P (a trial holds all its conditions);
P.835 puts the pair (clip i, condition j) in part (i + j) mod P, so a part
mixes conditions and clips.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np


MUSHRA, P835 = "mushra", "p835"
REFERENCE, ANCHOR, INPUT, ENGINE = "reference", "anchor", "input", "engine"
P835_SCALES = ("sig", "bak", "ovrl")  # in the order P.835 asks them


@dataclass(frozen=True)
class Condition:
    """One thing heard for each clip: an engine's output, the input, the hidden reference, the anchor."""

    kind: str
    engine: str = ""  # for ENGINE; the input's engine is the run's baseline, where it ran

    @property
    def name(self) -> str:
        return self.engine if self.kind == ENGINE else {REFERENCE: "hidden reference", ANCHOR: "anchor 3.5 kHz",
                                                        INPUT: "unprocessed input"}[self.kind]


@dataclass
class Design:
    method: str
    clips: list[str]  # clip ids, in draw order
    cells: dict[str, dict[str, str]]  # clip id -> its cell
    conditions: list[Condition]
    parts: list[list[tuple[int, int]]] = field(default_factory=list)  # per part: (clip index, condition index)


def cell_of(labels: Mapping[str, Any], keys: Sequence[str]) -> dict[str, str]:
    return {key: str(labels.get(key, "")) for key in keys}


def draw_clips(records: Mapping[str, Sequence[Mapping[str, Any]]], engines: Sequence[str], keys: Sequence[str],
               per_cell: int, seed: int) -> tuple[list[str], dict[str, dict[str, str]]]:
    """``per_cell`` clips drawn at random in each cell among those every engine ran without failing."""
    usable: dict[str, dict[str, str]] | None = None
    for engine in engines:
        done = {r["clip_id"]: cell_of(r.get("labels", {}), keys) for r in records.get(engine, []) if not r.get("error")}
        usable = done if usable is None else {c: cell for c, cell in usable.items() if c in done}
    usable = usable or {}
    rng = np.random.default_rng(seed)
    by_cell: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for clip, cell in sorted(usable.items()):
        by_cell.setdefault(tuple(sorted(cell.items())), []).append(clip)
    chosen: list[str] = []
    for cell in sorted(by_cell):
        members = by_cell[cell]
        picks = rng.permutation(len(members))[:per_cell]
        chosen += [members[i] for i in sorted(picks)]
    return chosen, {clip: usable[clip] for clip in chosen}


def conditions_for(method: str, engines: Sequence[str], has_reference: bool, baseline: str) -> list[Condition]:
    """MUSHRA: hidden reference, 3.5 kHz anchor, input, engines. P.835: input and engines (and the clean
    reference where the set has one, as a top for the scales). ``baseline``: the engine
    that passes its input through, "" where none ran."""
    # The input is played from the engine that passes it through, where it ran.
    found = [Condition(INPUT, engine=baseline)] + [Condition(ENGINE, e) for e in engines]
    if method == MUSHRA:
        return [Condition(REFERENCE), Condition(ANCHOR), *found]
    return ([Condition(REFERENCE)] if has_reference else []) + found


def split(method: str, clips: int, conditions: int, parts: int) -> list[list[tuple[int, int]]]:
    """The (clip, condition) pairs of each part (module docstring)."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(parts)]
    for i in range(clips):
        for j in range(conditions):
            out[(i if method == MUSHRA else i + j) % parts].append((i, j))
    return out


def part_count(method: str, clips: int, conditions: int, max_trials: int) -> int:
    """Enough parts that none has more than ``max_trials`` trials (a MUSHRA trial is a clip, a P.835 one a pair)."""
    trials = clips if method == MUSHRA else clips * conditions
    return max(1, min(trials, math.ceil(trials / max(1, max_trials))))
