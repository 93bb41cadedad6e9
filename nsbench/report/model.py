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
from typing import Any, Mapping, Sequence

from nsbench.plugins.specs import MetricSpec
from nsbench.report import layout, schema

# The keys of a listening pick that point at audio files.
AUDIO_KEYS = ("audio", "input_audio", "clean_audio")


def file_stem(engine: str) -> str:
    """A file name for an engine name such as ``command:tool --in {input}``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", engine).strip("_") or "engine"


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
    engine: str, dataset: str, summary: Mapping[str, Any], metrics: Sequence[MetricSpec], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``<engine>.json`` payload: Picovoice's keys (the metrics shown beside
    the headline, ``stoi``, then ``rtf``) first."""
    beside = {name: summary["metrics"].get(name, {}).get("mean", math.nan) for name in layout.beside_headline()}
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


def validated(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload, once it matches the schema (raises ResultsFormatError otherwise)."""
    schema.validate(result)
    return result
