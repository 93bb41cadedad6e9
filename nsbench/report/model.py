"""The results model: the ``<engine>.json`` payload, built here and only here.

``engine_result`` builds it from an engine's summary (nsbench.report.summary)
and what the run adds (provenance, engine info, conditions, streaming); what
is known only once every engine has run (the paired comparisons, the listening
grid's audio paths) makes a new payload through ``finished``: nothing edits a
payload once built. The writer writes it after ``validated`` checked it
against the schema (nsbench.report.schema), whose properties ``EngineResult``
types (tests/report/test_schema.py keeps the two equal). It stays a dict at
run time: it is what the reports read, and what an earlier run's file is read
back as (nsbench.report.read_back, checked against the same schema).
"""
from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping, Sequence, TypedDict

from nsbench.plugins.errors import UserError
from nsbench.plugins.specs import MetricSpec
from nsbench.report import schema
from nsbench.report.layout import View
from nsbench.store import folders

# The keys of a listening pick that point at audio files.
AUDIO_KEYS = ("audio", "input_audio", "clean_audio")


class RequiredKeys(TypedDict):
    """What every ``<engine>.json`` holds (nsbench.report.schema.REQUIRED)."""

    engine: str
    dataset: str
    format_version: int
    rtf: float
    rtf_wall: float
    clips: int
    runs: int
    failures: int
    failed_clips: list[dict[str, Any]]
    metrics: dict[str, dict[str, Any]]
    cells: list[dict[str, Any]]
    worst_cell: dict[str, Any] | None
    alignment: dict[str, Any]
    flags: dict[str, dict[str, Any]]
    expected_flags: dict[str, dict[str, Any]]
    worst_clips: list[dict[str, Any]]
    typical_clips: list[dict[str, Any]]
    metric_notes: dict[str, dict[str, int]]
    metric_definitions: dict[str, dict[str, Any]]


class EngineResult(RequiredKeys, total=False):
    """``<engine>.json``: the keys of nsbench.report.schema.PROPERTIES, required
    as its REQUIRED says (``NotRequired`` is not seen under postponed
    annotations, hence two classes). The metrics shown beside the headline,
    such as ``stoi``, add a top-level number each, named by the metric."""

    comparisons: dict[str, dict[str, Any]]
    engine_info: dict[str, Any]
    dataset_description: dict[str, Any]
    reference_use: dict[str, Any]
    provenance: dict[str, Any]
    run_identity: dict[str, Any]
    from_cache: dict[str, int]
    interrupted: dict[str, Any]
    conditions: list[dict[str, Any]]
    streaming: dict[str, Any]

# Audio paths of an engine's picks, by run: run -> audio key -> path relative to the results folder.
AudioLinks = Mapping[str, Mapping[str, str]]


# The stems of the files and folders a run writes itself under results/<dataset>/,
# and of those the open issues add (a ranking, the listeners' agreement, the
# paper's table): no engine's file takes one (check_file_names). A file the
# run adds there takes its stem from this list.
RUN_FILE_STEMS = ("report", "comparison", "agreement", "listening-key", "listening-results", "listening-test", "audio",
                  "ranking", "human-agreement", "paper-table")


def file_stem(engine: str) -> str:
    """A file name for an engine name such as ``command:tool --in {input}``:
    never hidden, never "." or "..", never starting with "_" (the listening
    grid's own folders do)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", engine).lstrip("._").rstrip("_") or "engine"


def check_file_names(dataset: str, engines: Sequence[str], clip_ids: Iterable[str]) -> None:
    """Before anything runs: every name that becomes a path (each engine's
    files, each clip's audio) stays inside the run's folders, and each engine
    has files of its own, apart from the run's. (The dataset's name, the
    results folder's, is an identifier: nsbench.plugins.registry.)"""
    owners: dict[str, str] = {}
    for engine in engines:
        stem = file_stem(engine)
        key = stem.casefold()  # a case-insensitive file system holds one of Report.json and report.json
        if key in RUN_FILE_STEMS:
            raise UserError(f"engine {engine!r} would write {stem}.json, a name the run keeps for its own files; give it another name")
        if key in owners:
            raise UserError(f"engines {owners[key]!r} and {engine!r} would both write {stem}.json and {stem}.clips.jsonl: "
                            "give one of them another name")
        owners[key] = engine
    for clip_id in clip_ids:
        reason = folders.unsafe_name(clip_id)
        if reason:
            raise UserError(f"clip id {clip_id!r} of dataset {dataset!r} cannot name its output file: {reason}")


def metric_legend(metrics: Sequence[MetricSpec]) -> dict[str, dict[str, Any]]:
    return {
        metric.name: {
            "unit": metric.unit,
            "higher_is_better": metric.higher_is_better,
            "description": metric.description,
            "ignores": metric.ignores,
            **({"pooling": metric.pooling.description} if metric.pooling else {}),
        }
        for metric in metrics
    }


def engine_result(
    engine: str, dataset: str, summary: Mapping[str, Any], metrics: Sequence[MetricSpec], extra: Mapping[str, Any], view: View
) -> EngineResult:
    """The ``<engine>.json`` payload: Picovoice's keys (the metrics shown beside
    the headline, ``stoi``, then ``rtf``) first."""
    beside = {name: summary["metrics"].get(name, {}).get("mean", math.nan) for name in view.beside_headline}
    return {
        "engine": engine,
        "dataset": dataset,
        "format_version": schema.FORMAT_VERSION,
        **beside,
        "rtf": summary["rtf"],
        "rtf_wall": summary["rtf_wall"],
        "clips": summary["clips"],
        "runs": summary["runs"],
        "failures": summary["failures"],
        "failed_clips": summary["failed_clips"],
        "metrics": summary["metrics"],
        "cells": summary["cells"],
        "worst_cell": summary["worst_cell"],
        "alignment": summary["alignment"],
        "flags": summary["flags"],
        "expected_flags": summary["expected_flags"],
        "worst_clips": summary["worst_clips"],
        "typical_clips": summary["typical_clips"],
        "metric_notes": summary.get("metric_notes", {}),
        "metric_definitions": metric_legend(metrics),
        **extra,
    }


def finished(result: Mapping[str, Any], comparisons: Mapping[str, Any] | None = None,
             audio: AudioLinks | None = None) -> EngineResult:
    """A new payload: ``result`` with its paired comparisons with the baselines
    (nsbench.report.baselines), if given, and its picks' audio: ``audio``'s
    paths where given, none otherwise (an earlier run's, whose grid was rebuilt
    without it, loses its own)."""
    links = audio or {}
    done = {**result, "worst_clips": linked(result.get("worst_clips", []), links),
            "typical_clips": linked(result.get("typical_clips", []), links)}
    if comparisons is not None:
        done["comparisons"] = dict(comparisons)
    return done  # type: ignore[return-value]


def linked(picks: Sequence[Mapping[str, Any]], audio: AudioLinks) -> list[dict[str, Any]]:
    """New picks, each with its audio paths from ``audio`` (by run) and no other."""
    made = []
    for pick in picks:
        paths = audio.get(pick["run"], {})
        unknown = set(paths) - set(AUDIO_KEYS)
        if unknown:
            raise ValueError(f"not an audio key of a pick: {sorted(unknown)}")
        made.append({**{key: value for key, value in pick.items() if key not in AUDIO_KEYS}, **paths})
    return made


def listening_picks(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The worst and typical clips, whose audio the report links."""
    return [*result.get("worst_clips", []), *result.get("typical_clips", [])]


def validated(result: Mapping[str, Any], view: View) -> Mapping[str, Any]:
    """The payload, once it matches the schema (raises ResultsFormatError otherwise)."""
    schema.validate(result, schema.engine_schema(view.beside_headline))
    return result
