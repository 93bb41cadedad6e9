"""The results model and its schema: every payload the model builds matches
the schema, the validator catches what departs from it, the writer refuses an
invalid payload, and docs/results.md documents exactly the schema's fields."""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import pytest

from nsbench.plugins.records import ClipRecord

from nsbench.plugins.specs import MetricSpec
from nsbench.report import model, schema
from nsbench.report.summary import summarise
from nsbench.report.writer import write_json

DOCS = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def metric(name: str) -> MetricSpec:
    return MetricSpec(name=name, func=lambda inputs: 0.0, unit="dB", higher_is_better=True, description="d", ignores="i")


def payload(view, **extra) -> dict:
    records = []
    for index, value in enumerate([1.0, 3.0, -2.0]):
        records.append(ClipRecord(engine="e", clip_id=f"c{index}", labels={"cell": "a"}, duration=1.0, cpu_seconds=0.1,
                                  wall_seconds=0.2, scores={"si_sdri": value, "stoi": 0.8}))
    metrics = [metric("si_sdri"), metric("stoi")]
    return model.engine_result("e", "demo", summarise(records, metrics, ["cell"], "si_sdri"), metrics, {"engine_info": {"name": "e"}, **extra}, view)


def test_a_built_payload_matches_the_schema_and_carries_the_version(view):
    result = payload(view)
    assert schema.errors(result, schema.engine_schema(view.beside_headline)) == []
    assert result["format_version"] == schema.FORMAT_VERSION
    assert list(result)[:4] == ["engine", "dataset", "format_version", "stoi"]  # Picovoice's keys first, as before
    assert result["stoi"] == pytest.approx(0.8)


def test_the_validator_names_each_departure(view):
    result = payload(view)
    del result["cells"]
    result["clips"] = "three"
    result["typo_key"] = 1
    found = schema.errors(result, schema.engine_schema(view.beside_headline))
    assert "$: missing 'cells'" in found
    assert "$.clips: str where integer is expected" in found
    assert "$: unexpected 'typo_key'" in found
    with pytest.raises(schema.ResultsFormatError, match="typo_key"):
        model.validated(result, view)


def test_numbers_may_be_nan_or_infinite_but_not_booleans(view):
    result = payload(view)
    result["rtf"] = math.nan
    assert schema.errors(result, schema.engine_schema(view.beside_headline)) == []
    result["rtf"] = True
    assert schema.errors(result, schema.engine_schema(view.beside_headline)) == ["$.rtf: bool where number is expected"]


def test_what_the_writer_adds_makes_a_new_payload_through_the_model(tmp_path, view):
    result = payload(view)
    before = copy.deepcopy(result)
    run = result["worst_clips"][0]["run"]
    done = model.finished(result, {"passthrough": {}}, {run: {"audio": "audio/e/c2.wav", "input_audio": "audio/_input/c2.wav"}})
    assert result == before  # built once: the payload it came from is unchanged
    with pytest.raises(ValueError):
        model.finished(result, audio={run: {"waveform": "x.wav"}})
    write_json(tmp_path / "e.json", model.validated(done, view))
    written = json.loads((tmp_path / "e.json").read_text())
    assert written["comparisons"] == {"passthrough": {}} and written["worst_clips"][0]["audio"] == "audio/e/c2.wav"
    assert list(written) == list(before) + ["comparisons"]  # the file's key order: comparisons last, as ever
    without = model.finished(done)  # an earlier run's, whose grid was rebuilt without it
    assert "audio" not in without["worst_clips"][0] and "input_audio" not in without["worst_clips"][0]
    assert done["worst_clips"][0]["audio"] == "audio/e/c2.wav"


def test_the_typed_result_has_the_schemas_keys_and_requires_what_it_requires():
    """model.EngineResult and schema.PROPERTIES describe one file: they stay equal."""
    assert set(model.EngineResult.__annotations__) == set(schema.PROPERTIES)
    assert model.EngineResult.__required_keys__ == set(schema.REQUIRED)


def documented_fields(text: str) -> list[str]:
    block = text.split("<!-- generated from nsbench/report/schema.py: begin -->")[1].split("<!-- generated")[0]
    return re.findall(r"^\| `([^`]+)` \|", block, re.M)


def test_docs_document_every_schema_field_and_no_other(view):
    text = DOCS.read_text()
    properties = list(schema.engine_schema(view.beside_headline)["properties"])
    assert documented_fields(text) == properties
    assert schema.fields_markdown() in text, "docs/results.md is stale: python -m nsbench.report.schema"
