"""Reading a run back: an ``<engine>.json`` or ``.clips.jsonl`` in a results
folder is a stranger's data (an earlier run's, a --compare target, copied or
edited by hand). Each file is parsed, checked against the results schema
(nsbench.report.schema) before a report reads it, and either returned whole
or refused with one reason, so a caller names the file and leaves it out.

Nothing a file names is imported, loaded or run: its text is only data.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from nsbench.report import schema
from nsbench.report.model import EngineResult

# Nothing nsbench writes nests deeper than about eight levels; a file that
# does is not a result, and copying or reporting it could exhaust the stack.
MAX_DEPTH = 32
# Departures named in a reason; the rest are counted.
ERRORS_NAMED = 3

# A .clips.jsonl line as --compare reads it (nsbench.plugins.records.ClipRecord.to_json):
# the clip, its seed, its labels (its cell) and its scores, or its error.
CLIP_LINE = schema.shaped(("clip_id", "labels", "scores"), clip_id=schema.STRING, seed=schema.typed(["integer", "null"]),
                          labels=schema.object_of(schema.typed(["string", "number", "boolean"])),
                          scores=schema.object_of(schema.NUMBER), error=schema.typed(["string", "null"]))


class NotReadable(ValueError):
    """A file read back that cannot be used; the message is the reason, without the file's name."""


def parsed(text: str) -> Any:
    """JSON text as Python values, NaN and infinities included (as nsbench writes them)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise NotReadable(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise NotReadable(f"cannot read it: not JSON ({error})") from None
    if schema.depth(value) > MAX_DEPTH:
        raise NotReadable(f"nested deeper than {MAX_DEPTH} levels")
    return value


def departures(value: Any, shape: Mapping[str, Any]) -> str:
    """"" if ``value`` has ``shape``, else the first departures, counted."""
    found = schema.errors(value, shape)
    more = f" and {len(found) - ERRORS_NAMED} more" if len(found) > ERRORS_NAMED else ""
    return "; ".join(found[:ERRORS_NAMED]) + more


def engine_result(path: Path) -> EngineResult:
    """The ``<engine>.json`` at ``path``, with only the keys the schema knows
    (a report reads nothing else): the typed result the writer wrote, once it
    matches the schema; NotReadable with the reason otherwise."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise NotReadable(f"cannot read it: {error}") from None
    result = parsed(text)
    if not isinstance(result, dict) or "engine" not in result:
        raise NotReadable("not an engine's result (no \"engine\" key at its top)")
    shape = schema.read_back_schema()
    wrong = departures(result, shape)
    if wrong:
        raise NotReadable(f"does not match the results schema: {wrong}")
    return {key: value for key, value in result.items() if key in shape["properties"]}  # type: ignore[return-value]


def clip_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a ``.clips.jsonl`` as CLIP_LINE reads it; NotReadable naming the first bad line."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise NotReadable(f"cannot read it: {error}") from None
    records = []
    for number, line in enumerate(lines, 1):
        try:
            record = parsed(line)
        except NotReadable as error:
            raise NotReadable(f"line {number}: {error}") from None
        wrong = departures(record, CLIP_LINE)
        if wrong:
            raise NotReadable(f"line {number}: {wrong}")
        records.append(record)
    return records
