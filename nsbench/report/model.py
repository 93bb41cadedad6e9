"""The results model: the ``<engine>.json`` payload, built here and only here.

``engine_result`` builds it from an engine's summary (nsbench.report.summary)
and what the run adds (provenance, engine info, conditions, streaming); the
writer then adds what is known only once every engine has run, through the
functions below (the paired comparisons, the listening grid's audio paths),
and writes it after ``validated`` checked it against the schema
(nsbench.report.schema). The payload stays a plain dict: it is what the
reports read, and what an earlier run's file is read back as.
"""
from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping, Sequence

from nsbench.plugins.errors import UserError
from nsbench.plugins.specs import MetricSpec
from nsbench.report import schema
from nsbench.report.layout import View
from nsbench.store import folders

# The keys of a listening pick that point at audio files.
AUDIO_KEYS = ("audio", "input_audio", "clean_audio")


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
) -> dict[str, Any]:
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


def with_comparisons(result: dict[str, Any], comparisons: Mapping[str, Any]) -> None:
    """The engine's paired comparisons with the baselines (nsbench.report.baselines)."""
    result["comparisons"] = dict(comparisons)


def listening_picks(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The worst and typical clips, whose audio the report links."""
    return [*result.get("worst_clips", []), *result.get("typical_clips", [])]


def link_audio(pick: dict[str, Any], **paths: str) -> None:
    """A pick's audio (``audio``, ``input_audio``, ``clean_audio``), relative to the results folder."""
    unknown = set(paths) - set(AUDIO_KEYS)
    if unknown:
        raise ValueError(f"not an audio key of a pick: {sorted(unknown)}")
    pick.update(paths)


def unlink_audio(result: dict[str, Any]) -> None:
    """Drops every pick's audio paths (an earlier run's, whose grid was rebuilt without it)."""
    for pick in listening_picks(result):
        for key in AUDIO_KEYS:
            pick.pop(key, None)


def validated(result: Mapping[str, Any], view: View) -> Mapping[str, Any]:
    """The payload, once it matches the schema (raises ResultsFormatError otherwise)."""
    schema.validate(result, schema.engine_schema(view.beside_headline))
    return result
