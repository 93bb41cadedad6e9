"""An engine's records as columns (nsbench.report.record_table): what is read
back is what was written, summaries from the table equal those from the
records, and a record costs a few hundred bytes held, not ~3 KB."""
from __future__ import annotations

import gc
import json
import tracemalloc

from nsbench.plugins.records import ClipRecord
from nsbench.plugins.specs import MetricSpec
from nsbench.report.record_table import Pools, RecordTable, as_table
from nsbench.report.summary import summarise
from nsbench.report.clip_log import ClipLog


def metric(name: str) -> MetricSpec:
    return MetricSpec(name=name, func=lambda inputs: 0.0, unit="", higher_is_better=True, description="", ignores="")


def records() -> list[ClipRecord]:
    made = []
    for index in range(30):
        scores = {"a": index * 0.5 - 3.0, **({"b": -float(index)} if index >= 10 else {})}  # "b" first seen on the eleventh clip
        more = {}
        if index % 7 == 3:
            more.update(error="broken")
            scores = {}
        if index % 5 == 0:
            more.update(flags=["silent"], notes=["downmixed"], metric_notes={"b": "short"}, pooled={"a": {"count": 3, "variance": 0.25}},
                        streaming={"streamable": True, "block_ms": [1.0, 2.0]})
        made.append(ClipRecord(engine="e", clip_id=f"c{index:02d}", labels={"snr": str(index % 3), "noise": "white"},
                               scores=scores, duration=1.0, cpu_seconds=0.01 * index, wall_seconds=0.02,
                               source_path=f"/data/c{index}.wav", delay="160 samples at 16000 Hz", sample_rate=16000,
                               residual_lag=(40 if index % 4 else None), seed=index % 2, **more))
    return made


def logged(tmp_path, given: list[ClipRecord]) -> RecordTable:
    """A table filled as the run fills it: each record's line, then its offset."""
    log = ClipLog(tmp_path / "e.clips.jsonl")
    table = RecordTable(Pools(), log.path)
    for record in given:
        table.append(record, log.add(record))
    log.close()
    table.trim()
    return table


def test_records_read_back_from_the_clips_jsonl_are_the_records_written(tmp_path):
    given = records()
    table = logged(tmp_path, given)
    assert list(table.records()) == given
    assert table.record(17) == given[17]
    values, present = table.score("b")
    assert not present[:10].any() and present[10:].sum() == sum("b" in r.scores for r in given[10:])
    assert values[11] == -11.0


def test_a_summary_from_the_table_is_the_summary_from_the_records(tmp_path):
    given = records()
    metrics = [metric("a"), metric("b")]
    expected = json.dumps(summarise(given, metrics, ["snr", "noise"], "a", {"low": ("0", "1")}))
    assert json.dumps(summarise(logged(tmp_path, given), metrics, ["snr", "noise"], "a", {"low": ("0", "1")})) == expected


def test_a_record_held_as_columns_costs_under_400_bytes():
    line = records()[11]
    rows = [ClipRecord(**{**line.__dict__, "clip_id": f"clip{index:06d}", "scores": {f"m{k}": index + k / 7 for k in range(13)}})
            for index in range(4000)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    table = RecordTable(Pools())
    for row in rows:
        table.append(row, 0)
    table.trim()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(table) == 4000
    assert held / len(rows) < 400, f"{held / len(rows):.0f} bytes a record"


def test_as_table_keeps_records_given_in_memory():
    given = records()
    table = as_table(given)
    assert table.record(4) is given[4] and as_table(table) is table
