"""The ``<engine>.json`` format: its JSON Schema, its version, a validator.

The schema is the one description of the file: the writer validates every
payload against it before writing (nsbench.report.model.validated), and
docs/results.md's field table is generated from it (``python -m
nsbench.report.schema``; tests/report/test_schema.py checks the two agree).
The validator covers the subset of JSON Schema used here: ``type`` (one or a
list), ``properties``, ``required``, ``additionalProperties``, ``items``.
"""
from __future__ import annotations

from typing import Any, Mapping

from nsbench.report import layout

# The version of the <engine>.json layout and meaning; --compare refuses
# another. 1 (no key): every cell mean over clips. 2: a metric with a Pooling
# (FUSS SI-SNR, SI-SNRi) has its cell mean and std over items (scored pairs),
# the mean over clips beside it as clip_mean.
FORMAT_VERSION = 2


class ResultsFormatError(ValueError):
    """A payload that does not match the schema: a bug in nsbench, never the user's."""


def prop(kind: str | list[str], description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


STATS = "per metric: n, mean, median, mad, p5, p95, mean_ci95 and median_ci95 (bootstrap 95% CIs); pooled metrics add std, clip_mean, pooling, pooled_over and the item counts"

PROPERTIES: dict[str, dict[str, Any]] = {
    "engine": prop("string", "the engine's name as given to --engine"),
    "dataset": prop("string", "the dataset's name"),
    "format_version": prop("integer", f"this layout's version ({FORMAT_VERSION}); a file without it is version 1, which --compare refuses"),
    "rtf": prop("number", "real-time factor: CPU time of the engine (process and children) over audio duration, resampling included, model loading excluded"),
    "rtf_wall": prop("number", "wall-clock real-time factor (grows with --jobs contention)"),
    "clips": prop("integer", "clips scored (a clip counts once whatever --seeds)"),
    "runs": prop("integer", "clip runs: clips x seeds"),
    "failures": prop("integer", "clip runs that failed"),
    "failed_clips": prop("array", "each failed run's clip_id and error", items={"type": "object"}),
    "metrics": prop("object", f"over all clips, {STATS}", additionalProperties={"type": "object"}),
    "cells": prop("array", "per cell (one combination of the dataset's cell keys): cell, clips, failures, metrics as above; "
                           "rows pooling several cells (FUSS 2-4 sources) have pooled: true", items={"type": "object"}),
    "worst_cell": prop(["object", "null"], "the cell with the worst mean of the headline metric: metric, cell, mean"),
    "alignment": prop("object", "how the output lined up with the clean voice: text, sample_aligned, measured_clips, lags, "
                                "unmeasured_clips, constant_lag; compensation with --align-constant-lag"),
    "flags": prop("object", "degenerate-output flags raised: name -> description and clips"),
    "expected_flags": prop("object", "flags that define the engine (the passthrough's identical output): name -> expected and clips"),
    "worst_clips": prop("array", "the clips worst by the headline metric: clip_id, run, seed, labels, metric, value, source_path, "
                                 "and audio, input_audio, clean_audio where the listening grid or --output-folder holds them",
                        items={"type": "object"}),
    "typical_clips": prop("array", "the clips nearest the headline metric's median, as worst_clips", items={"type": "object"}),
    "metric_notes": prop("object", "what metrics said about their values, counted: metric -> note -> clips"),
    "metric_definitions": prop("object", "each metric's unit, higher_is_better, description, ignores, and pooling rule if any",
                               additionalProperties={"type": "object", "required": ["unit", "higher_is_better"]}),
    "comparisons": prop("object", "baseline -> metric -> paired comparison: all and cells, each with n, mean_difference, "
                                  "hodges_lehmann, hl_ci95, ci_method, p_value, verdict"),
    "engine_info": prop("object", "the engine: name, description, version, origin, sample_rate, declared_delay, oracle, baseline, "
                                  "compared_with, delays_removed, notes"),
    "dataset_description": prop("object", "the dataset's provenance: seed, folder, content hash, attribution (its describe())"),
    "reference_use": prop("object", "clips without a clean reference and the metrics that could not score them"),
    "provenance": prop("object", "nsbench version, command line, git commit, python, platform, package versions, time, jobs"),
    "run_identity": prop("object", "what makes results comparable across runs: dataset, options, clip digest, metrics, conditions, blocks"),
    "from_cache": prop("object", "outputs served by the cache and runs in all"),
    "interrupted": prop("object", "present when the run was interrupted: signal, clips_done, clips_planned"),
    "conditions": prop("array", "with --condition: per condition, cells as above", items={"type": "object"}),
    "streaming": prop("object", "with --block-size: how the streamed outputs compare with whole-clip ones"),
}

REQUIRED = ("engine", "dataset", "format_version", "rtf", "rtf_wall", "clips", "runs", "failures", "failed_clips", "metrics",
            "cells", "worst_cell", "alignment", "flags", "expected_flags", "worst_clips", "typical_clips", "metric_notes",
            "metric_definitions")


def beside_headline_property(name: str) -> dict[str, Any]:
    return prop("number", f"the mean {name} over all clips (NaN when not computed), a top-level key as in Picovoice's "
                          "benchmark: a metric whose spec says beside_headline")


def engine_schema() -> dict[str, Any]:
    """The JSON Schema of ``<engine>.json``; the metrics shown beside the
    headline (stoi) add a top-level number each, named by the metric."""
    beside = {name: beside_headline_property(name) for name in layout.beside_headline()}
    properties = dict(PROPERTIES)
    at = list(properties).index("format_version") + 1  # they follow the version, as written
    ordered = {**dict(list(properties.items())[:at]), **beside, **dict(list(properties.items())[at:])}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "nsbench <engine>.json",
        "type": "object",
        "properties": ordered,
        "required": list(REQUIRED),
        "additionalProperties": False,
    }


# --------------------------------------------------------------------------- the validator

TYPES = {
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, (list, tuple)),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),  # NaN and inf included
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def errors(value: Any, schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """Every way ``value`` departs from ``schema`` (the subset above), as 'path: what'."""
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(TYPES[kind](value) for kind in kinds):
            return [f"{where}: {type(value).__name__} where {' or '.join(kinds)} is expected"]
    found = []
    if isinstance(value, Mapping):
        found += [f"{where}: missing {key!r}" for key in schema.get("required", ()) if key not in value]
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                found += errors(item, properties[key], f"{where}.{key}")
            elif extra is False:
                found.append(f"{where}: unexpected {key!r}")
            elif isinstance(extra, Mapping):
                found += errors(item, extra, f"{where}.{key}")
    if isinstance(value, (list, tuple)) and "items" in schema:
        for index, item in enumerate(value):
            found += errors(item, schema["items"], f"{where}[{index}]")
    return found


def validate(payload: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> None:
    """Raises ResultsFormatError naming every departure from the schema."""
    found = errors(payload, engine_schema() if schema is None else schema)
    if found:
        raise ResultsFormatError(f"{payload.get('engine', '?')}.json does not match its schema: " + "; ".join(found[:10]))


# --------------------------------------------------------------------------- docs/results.md's table


def fields_markdown() -> str:
    """The field table of docs/results.md, from the schema."""
    schema = engine_schema()
    lines = ["| field | type | required | meaning |", "| --- | --- | --- | --- |"]
    for name, field in schema["properties"].items():
        kind = field["type"] if isinstance(field["type"], str) else " or ".join(field["type"])
        lines.append(f"| `{name}` | {kind} | {'yes' if name in schema['required'] else 'no'} | {field['description']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(fields_markdown())
