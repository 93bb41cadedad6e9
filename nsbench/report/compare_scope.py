"""What ``--compare`` compares: like with like, or nothing.

A stored engine result is compared with this run's only when the two runs'
identities (nsbench.report.coverage.run_identity) agree on the dataset and its
options, the metrics (name, version, code, options), the conditions and the
block size; otherwise the engine is not compared, and the reason names what
differs. On the same clips (the identity's clip digest, every run done on both
sides) the two ``<engine>.json`` summaries are compared as they stand. On other
clips (``--limit``, an interrupted run) both sides are summarised afresh from
their ``.clips.jsonl``, over the clip runs they share only; with fewer than
MIN_SHARED_CLIPS shared clips, and the clips not the same, there is no verdict.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.report import coverage, read_back
from nsbench.text import plural

# Below five shared clips a mean says more about which clips were drawn than
# about the engine: no verdict then, unless the two runs had the same clips.
MIN_SHARED_CLIPS = 5


@dataclass
class Scope:
    """What one engine is compared on: ``now`` and ``before`` (summaries with
    failures, metrics and cells), or ``reason`` it is not compared."""

    now: Mapping[str, Any] = field(default_factory=dict)
    before: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""
    clips: int = 0
    only_now: int = 0
    only_stored: int = 0


def clips_beside(result_file: Path) -> Path:
    """The ``.clips.jsonl`` a run wrote beside its ``<engine>.json``."""
    return result_file.with_name(f"{result_file.stem}.clips.jsonl")


def stored_clip_lines(result_file: Path) -> list[dict[str, Any]] | str:
    """The stored run's clip lines, or why there are none to use (read with
    the stored results, before this run may write over the file)."""
    path = clips_beside(result_file)
    if not path.is_file():
        return f"no {path.name} beside {result_file.name} to compare the clips both runs share"
    try:
        return read_back.clip_lines(path)
    except read_back.NotReadable as error:
        return f"{path.name}: {error}"


def scope_of(result: Mapping[str, Any], old: Mapping[str, Any], identity: Mapping[str, Any],
             stored_lines: list[dict[str, Any]] | str, now_lines: Path | None, cell_keys: Sequence[str]) -> Scope:
    """How ``result`` (this run's) and ``old`` (stored) of one engine compare."""
    if not identity:
        return Scope(reason="this run recorded no run identity to compare with")
    descriptions = (old.get("dataset_description"), result.get("dataset_description"))
    reason = coverage.setup_mismatch(old.get(coverage.IDENTITY_KEY), identity, descriptions)
    if reason:
        return Scope(reason=reason)
    if same_runs(result, old, identity):
        return Scope(result, old, clips=result["clips"])
    if isinstance(stored_lines, str):
        return Scope(reason=f"other clips ({old['clips']} stored, {result['clips']} now) and {stored_lines}")
    try:
        lines = read_back.clip_lines(now_lines) if now_lines else []
    except read_back.NotReadable as error:
        return Scope(reason=f"this run's {now_lines.name}: {error}")
    return shared_scope(result, lines, stored_lines, cell_keys)


def same_runs(result: Mapping[str, Any], old: Mapping[str, Any], identity: Mapping[str, Any]) -> bool:
    """Both runs planned the same clips (their identity's digest), ran them
    all, and as many times (seeds)."""
    stored_clips = old[coverage.IDENTITY_KEY]["clips"]
    done = "interrupted" not in result and "interrupted" not in old
    return stored_clips == identity["clips"] and done and old["runs"] == result["runs"]


def run_key(line: Mapping[str, Any]) -> tuple[str, int | None]:
    return line["clip_id"], line.get("seed")


def shared_scope(result: Mapping[str, Any], now: list[dict[str, Any]], stored: list[dict[str, Any]],
                 cell_keys: Sequence[str]) -> Scope:
    """Both sides over the clip runs (clip and seed) both have, or no verdict when too few."""
    shared = {run_key(line) for line in now} & {run_key(line) for line in stored}
    clips_now, clips_stored = {line["clip_id"] for line in now}, {line["clip_id"] for line in stored}
    clips = {clip for clip, _ in shared}
    counts = {"clips": len(clips), "only_now": len(clips_now - clips), "only_stored": len(clips_stored - clips)}
    if len(clips) < MIN_SHARED_CLIPS and not (clips_now == clips_stored == clips):
        return Scope(reason=f"only {plural(len(clips), 'clip')} in common ({counts['only_now']} only now, "
                            f"{counts['only_stored']} only stored), fewer than {MIN_SHARED_CLIPS}", **counts)
    metrics = list(result["metric_definitions"])
    now_summary, stored_summary = (shared_summary([line for line in lines if run_key(line) in shared], metrics, cell_keys)
                                   for lines in (now, stored))
    return Scope(now_summary, stored_summary, **counts)


def shared_summary(lines: Sequence[Mapping[str, Any]], metrics: Sequence[str], cell_keys: Sequence[str]) -> dict[str, Any]:
    """failures, metrics and cells (each metric's mean over clips, a clip by
    its mean over seeds) as the comparison reads a summary, from clip lines."""
    by_cell: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for line in lines:
        by_cell.setdefault(tuple(str(line["labels"].get(key, "")) for key in cell_keys), []).append(line)
    cells = [{"cell": dict(zip(cell_keys, cell)), "metrics": clip_means(members, metrics)} for cell, members in by_cell.items()]
    return {"failures": sum(line.get("error") is not None for line in lines), "metrics": clip_means(lines, metrics), "cells": cells}


def clip_means(lines: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per metric scored on any of ``lines``: the mean over clips of each clip's mean over its seeds."""
    means = {}
    for metric in metrics:
        per_clip: dict[str, list[float]] = {}
        for line in lines:
            if line.get("error") is None and metric in line["scores"]:
                per_clip.setdefault(line["clip_id"], []).append(float(line["scores"][metric]))
        if per_clip:
            means[metric] = {"mean": float(np.mean([np.mean(values) for values in per_clip.values()]))}
    return means
