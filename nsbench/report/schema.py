"""The ``<engine>.json`` format: its JSON Schema, its version, a validator.

The schema is the one description of the file: the writer validates every
payload against it before writing (nsbench.report.model.validated), and
docs/results.md's field table is generated from it (``python -m
nsbench.report.schema``; tests/report/test_schema.py checks the two agree).
The validator covers the subset of JSON Schema used here: ``type`` (one or a
list), ``properties``, ``required``, ``additionalProperties``, ``items``,
``minItems``, ``maxItems``, ``enum``, ``anyOf``. What is read back (an
earlier run's file, a --compare target) is checked against ``read_back_schema``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence


# The version of the <engine>.json layout and meaning; --compare refuses
# another. 1 (no key): every cell mean over clips. 2: a metric with a Pooling
# (FUSS SI-SNR, SI-SNRi) has its cell mean and std over items (scored pairs),
# the mean over clips beside it as clip_mean.
FORMAT_VERSION = 2


class ResultsFormatError(ValueError):
    """A payload that does not match the schema: a bug in nsbench, never the user's."""


def prop(kind: str | list[str], description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


# The shapes inside the file, as deep as the reports read them: an earlier
# run's file or a --compare target is checked against them before a report
# reads it (nsbench.report.read_back), so a stranger's file cannot crash one.
def typed(kind: str | list[str], **more: Any) -> dict[str, Any]:
    return {"type": kind, **more}


def shaped(required: tuple[str, ...] = (), kind: str | list[str] = "object", **properties: Any) -> dict[str, Any]:
    return {"type": kind, "required": list(required), "properties": properties}


def object_of(value: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": value}


def array_of(value: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "array", "items": value, **more}


NUMBER, INTEGER, STRING, BOOLEAN = typed("number"), typed("integer"), typed("string"), typed("boolean")
INTERVAL = array_of(NUMBER, minItems=2, maxItems=2)  # NaN where there is none
STATS_BLOCK = shaped(("n", "mean"), n=INTEGER, mean=NUMBER, median=NUMBER, mad=NUMBER, p5=NUMBER, p95=NUMBER,
                     mean_ci95=INTERVAL, median_ci95=INTERVAL, std=NUMBER, clip_mean=NUMBER, pooling=STRING, pooled_over=STRING)
CELL_ROW = shaped(("cell", "clips", "failures", "metrics"), cell=object_of(STRING), clips=INTEGER, failures=INTEGER,
                  metrics=object_of(STATS_BLOCK), pooled=BOOLEAN)
FLAG = shaped(("description", "clips"), description=STRING, clips=array_of(STRING))
EXPECTED_FLAG = shaped(("expected", "clips"), expected=STRING, clips=array_of(STRING))
PICK = shaped(("run", "labels", "metric", "value"), clip_id=STRING, run=STRING, labels=typed("object"), metric=STRING,
              value=NUMBER, audio=STRING, input_audio=STRING, clean_audio=STRING)
PAIRED = shaped(("n", "mean_difference", "p_value", "verdict"), n=INTEGER, mean_difference=NUMBER, hodges_lehmann=NUMBER,
                hl_ci95=array_of(typed(["number", "null"]), minItems=2, maxItems=2), ci_method=STRING, p_value=NUMBER,
                verdict=STRING)
COMPARISON = shaped(("all", "cells"), all=PAIRED, cells=array_of(PAIRED))
DEFINITION = shaped(("unit", "higher_is_better", "description", "ignores"), unit=STRING, higher_is_better=BOOLEAN,
                    description=STRING, ignores=STRING, pooling=STRING)
COMPENSATION = shaped(("first_pass", "samples", "sample_rate"), samples=INTEGER, sample_rate=INTEGER,
                      first_pass=shaped(("text", "measured_clips"), text=STRING, measured_clips=INTEGER))
ALIGNMENT = shaped(("text",), text=STRING, sample_aligned=BOOLEAN, measured_clips=INTEGER, unmeasured_clips=array_of(STRING),
                   constant_lag=shaped(("samples", "sample_rate"), ["object", "null"], samples=INTEGER, sample_rate=INTEGER),
                   compensation=COMPENSATION)
STREAMED_NUMBERS = ("block_ms_p50", "block_ms_p99", "block_ms_max", "block_cpu_ms_p50", "block_cpu_ms_p99", "declared_delay_ms",
                    "algorithmic_delay_ms", "resampler_delay_ms")
STREAMED = shaped(("streamable", "block_size", "block_deadline_ms", "blocks", "deadline_misses", "versus_whole", *STREAMED_NUMBERS),
                  streamable=typed("boolean", enum=[True]), blocks=INTEGER, deadline_misses=INTEGER,
                  versus_whole=shaped(("text", "whole_runs_computed", "whole_runs_seconds"), text=STRING,
                                      whole_runs_computed=INTEGER, whole_runs_seconds=NUMBER),
                  **{key: NUMBER for key in STREAMED_NUMBERS})
WHOLE = shaped(("streamable", "block_size", "why"), streamable=typed("boolean", enum=[False]), why=STRING)
REFERENCE_USE = shaped(("clips", "clips_without_reference", "metrics_without_reference", "metrics_needing_reference"),
                       clips=INTEGER, clips_without_reference=INTEGER, metrics_without_reference=array_of(STRING),
                       metrics_needing_reference=array_of(STRING))
RUN_IDENTITY = shaped(("dataset", "dataset_options", "clips", "metrics", "conditions", "blocks"), dataset=STRING,
                      dataset_options=STRING, clips=shaped(("count", "digest"), count=INTEGER, digest=STRING),
                      metrics=object_of(STRING), conditions=array_of(STRING), blocks=typed("object"))


def described(shape: Mapping[str, Any], description: str) -> dict[str, Any]:
    """A shape above as a field of the file, with its meaning (docs/results.md's table)."""
    return {**shape, "description": description}


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
    "metrics": prop("object", f"over all clips, {STATS}", additionalProperties=STATS_BLOCK),
    "cells": prop("array", "per cell (one combination of the dataset's cell keys): cell, clips, failures, metrics as above; "
                           "rows pooling several cells (FUSS 2-4 sources) have pooled: true", items=CELL_ROW),
    "worst_cell": described(shaped(("metric", "cell", "mean"), ["object", "null"], metric=STRING, cell=object_of(STRING), mean=NUMBER),
                            "the cell with the worst mean of the headline metric: metric, cell, mean"),
    "alignment": described(ALIGNMENT, "how the output lined up with the clean voice: text, sample_aligned, measured_clips, "
                                      "lags, unmeasured_clips, constant_lag; compensation with --align-constant-lag"),
    "flags": prop("object", "degenerate-output flags raised: name -> description and clips", additionalProperties=FLAG),
    "expected_flags": prop("object", "flags that define the engine (the passthrough's identical output): name -> expected and clips",
                           additionalProperties=EXPECTED_FLAG),
    "worst_clips": prop("array", "the clips worst by the headline metric: clip_id, run, seed, labels, metric, value, source_path, "
                                 "and audio, input_audio, clean_audio where the listening grid or --output-folder holds them",
                        items=PICK),
    "typical_clips": prop("array", "the clips nearest the headline metric's median, as worst_clips", items=PICK),
    "metric_notes": prop("object", "what metrics said about their values, counted: metric -> note -> clips",
                         additionalProperties=object_of(INTEGER)),
    "metric_definitions": prop("object", "each metric's unit, higher_is_better, description, ignores, and pooling rule if any",
                               additionalProperties=DEFINITION),
    "comparisons": prop("object", "baseline -> metric -> paired comparison: all and cells, each with n, mean_difference, "
                                  "hodges_lehmann, hl_ci95, ci_method, p_value, verdict", additionalProperties=object_of(COMPARISON)),
    "engine_info": prop("object", "the engine: name, description, version, origin, sample_rate, declared_delay, oracle, baseline, "
                                  "compared_with, delays_removed, notes",
                        properties={"compared_with": array_of(STRING), "delays_removed": object_of(INTEGER), "notes": array_of(STRING)}),
    "dataset_description": prop("object", "the dataset's provenance: seed, folder, content hash, attribution (its describe())",
                                properties={"attribution": STRING}),
    "reference_use": described(REFERENCE_USE, "clips without a clean reference and the metrics that could not score them"),
    "provenance": prop("object", "nsbench version, command line, git commit, python, platform, package versions, time, jobs",
                       properties={"time_utc": STRING}),
    "run_identity": described(RUN_IDENTITY, "what makes results comparable across runs: dataset, options, clip digest, metrics, conditions, blocks"),
    "from_cache": described(shaped(("outputs", "runs"), outputs=INTEGER, runs=INTEGER), "outputs served by the cache and runs in all"),
    "interrupted": prop("object", "present when the run was interrupted: signal, clips_done, clips_planned"),
    "conditions": prop("array", "with --condition: per condition, cells as above", items=CELL_ROW),
    "streaming": prop("object", "with --block-size: how the streamed outputs compare with whole-clip ones", anyOf=[STREAMED, WHOLE]),
}

# What the reports print of every engine's info (markdown.engine_line), so need in a file read back.
ENGINE_INFO_READ = ("version", "origin", "oracle", "delays_removed", "notes")

REQUIRED = ("engine", "dataset", "format_version", "rtf", "rtf_wall", "clips", "runs", "failures", "failed_clips", "metrics",
            "cells", "worst_cell", "alignment", "flags", "expected_flags", "worst_clips", "typical_clips", "metric_notes",
            "metric_definitions")


def beside_headline_property(name: str) -> dict[str, Any]:
    return prop("number", f"the mean {name} over all clips (NaN when not computed), a top-level key as in Picovoice's "
                          "benchmark: a metric whose spec says beside_headline")


def engine_schema(beside_headline: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema of ``<engine>.json``; the metrics shown beside the
    headline (stoi; the run's View.beside_headline, nsbench.report.layout) add
    a top-level number each, named by the metric."""
    beside = {name: beside_headline_property(name) for name in beside_headline}
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
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} where one of {schema['enum']} is expected"]
    if "anyOf" in schema:
        found = [errors(value, option, where) for option in schema["anyOf"]]
        if all(found):
            return min(found, key=len)  # the nearest option's departures
    found = []
    if isinstance(value, (list, tuple)) and not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
        found.append(f"{where}: {len(value)} items where {schema.get('minItems', 0)} to {schema.get('maxItems', 'any')} are expected")
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


def read_back_schema() -> dict[str, Any]:
    """engine_schema for a file read back: keys it does not know are left
    alone (a newer nsbench's, a plugin's headline metric), a file without
    ``format_version`` is version 1 (its reader decides), and the engine's
    info the reports print must be there. The numbers beside the headline
    are a plugin's keys to the reader, left alone like any it does not know."""
    schema = engine_schema(())
    info = {**schema["properties"]["engine_info"], "required": list(ENGINE_INFO_READ)}
    required = [key for key in schema["required"] if key != "format_version"]
    return {**schema, "properties": {**schema["properties"], "engine_info": info},
            "required": [*required, "engine_info"], "additionalProperties": True}


def depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, (list, tuple)) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


def validate(payload: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Raises ResultsFormatError naming every departure from ``schema``."""
    found = errors(payload, schema)
    if found:
        raise ResultsFormatError(f"{payload.get('engine', '?')}.json does not match its schema: " + "; ".join(found[:10]))


# --------------------------------------------------------------------------- docs/results.md's table


def fields_markdown() -> str:
    """The field table of docs/results.md, from the schema of the installed plugins."""
    from nsbench.report.layout import installed_view

    schema = engine_schema(installed_view().beside_headline)
    lines = ["| field | type | required | meaning |", "| --- | --- | --- | --- |"]
    for name, field in schema["properties"].items():
        kind = field["type"] if isinstance(field["type"], str) else " or ".join(field["type"])
        lines.append(f"| `{name}` | {kind} | {'yes' if name in schema['required'] else 'no'} | {field['description']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(fields_markdown())
