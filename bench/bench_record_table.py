#!/usr/bin/env python3
"""Bytes the parent keeps per clip-engine for an engine's records: a list of
ClipRecords (as before) against a RecordTable (nsbench/report/record_table.py),
and the transient peak of summarise over each. tracemalloc, exact byte counts.

    python bench/bench_record_table.py [--clips 20000] [--engines 2] [--without-intervals]

The records are a real default-metrics line of a speex run on 1-second
generated clips (bench/generated_clips_plugin.py), repeated with each clip's
own id, labels cycling over twelve cells and scores drawn at random; each
engine's lines go to a .clips.jsonl, as the run writes them, from which the
table rereads the few records a report needs whole.
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsbench.plugins.records import ClipRecord  # noqa: E402
from nsbench.plugins.specs import MetricSpec  # noqa: E402
from nsbench.report.record_table import Pools, RecordTable  # noqa: E402
from nsbench.report.summary import summarise  # noqa: E402

LINE = {
    "engine": "speex", "clip_id": "gen000000", "labels": {"noise": "white", "snr_db": "-5"},
    "scores": {name: 0.0 for name in ("si_sdr", "si_sdr_zm", "si_sdr_input", "si_sdri", "snr", "stoi", "estoi", "voice_level_db",
                                      "rtf_cpu", "rtf_wall", "mdx_sdr_voice", "mdx_sdr_music", "mdx_sdr")},
    "undefined": {"music_attenuation_db": "no voice-silent segment: the voice never pauses for 20 ms"},
    "error": None, "notes": [], "duration": 1.0, "cpu_seconds": 0.01, "wall_seconds": 0.019, "source_path": "",
    "delay": "160 samples at 16000 Hz", "seed": None, "sample_rate": 16000, "residual_lag": 0, "lag_unmeasured": "",
    "flags": [], "from_cache": False, "pooled": {}, "metric_notes": {},
}
NOISES, SNRS = ("white", "pink"), ("-5", "0", "5", "10", "15", "20")


def lines(engine: str, clips: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for index in range(clips):
        line = {**LINE, "engine": engine, "clip_id": f"gen{index:06d}",
                "labels": {"noise": NOISES[index % 2], "snr_db": SNRS[(index // 2) % 6]},
                "scores": {name: rng.gauss(0, 5) for name in LINE["scores"]},
                "cpu_seconds": rng.random() / 50, "wall_seconds": rng.random() / 20}
        out.append(json.dumps(line) + "\n")
    return out


def metrics() -> list[MetricSpec]:
    return [MetricSpec(name=name, func=lambda inputs: 0.0, unit="", higher_is_better=True, description="", ignores="")
            for name in LINE["scores"]]


def held(build) -> tuple[int, object]:
    """Bytes still allocated after ``build()``, and what it built."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, kept


def summary_peak(records) -> tuple[int, float]:
    """summarise's traced peak above what it starts with, and its wall seconds."""
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    began = time.perf_counter()
    summarise(records, metrics(), ("noise", "snr_db"), "si_sdri")
    seconds = time.perf_counter() - began
    peak = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
    return peak, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=20000)
    parser.add_argument("--engines", type=int, default=2)
    parser.add_argument("--without-intervals", action="store_true",
                        help="summarise without its bootstrap intervals (report/statistics.py: their (metrics, 1000, N) "
                             "resamples dominate the peak), to show what gathering the values costs")
    args = parser.parse_args()
    if args.without_intervals:
        import nsbench.report.summary as summary

        summary.uncertainty = lambda columns: {name: {} for name in columns}
    folder = Path(tempfile.mkdtemp(prefix="nsbench-record-table-"))
    texts = {f"engine{k}": lines(f"engine{k}", args.clips, k) for k in range(args.engines)}
    offsets = {}
    for engine, text in texts.items():
        (folder / f"{engine}.clips.jsonl").write_text("".join(text))
        offsets[engine] = [0]
        for line in text[:-1]:
            offsets[engine].append(offsets[engine][-1] + len(line))
    runs = args.clips * args.engines

    def as_records():
        return {engine: [ClipRecord(**json.loads(line)) for line in text] for engine, text in texts.items()}

    def as_tables():
        pools, tables = Pools(), {}
        for engine, text in texts.items():
            tables[engine] = RecordTable(pools, folder / f"{engine}.clips.jsonl")
            for line, offset in zip(text, offsets[engine]):
                tables[engine].append(ClipRecord(**json.loads(line)), offset)
            tables[engine].trim()
        return tables

    listed, records = held(as_records)
    columned, tables = held(as_tables)
    engine = next(iter(texts))
    list_peak, list_seconds = summary_peak(records[engine])
    table_peak, table_seconds = summary_peak(tables[engine])
    print(f"{args.clips} clips x {args.engines} engines ({runs} clip-engines), 13 scores a record")
    print(f"held, list of ClipRecord: {listed / runs:8.0f} B per clip-engine ({listed / 1e6:.1f} MB)")
    print(f"held, RecordTable:        {columned / runs:8.0f} B per clip-engine ({columned / 1e6:.1f} MB), "
          f"{listed / columned:.1f}x less")
    print(f"summarise of one engine, traced peak: list {list_peak / args.clips:.0f} B per clip ({list_seconds:.2f} s), "
          f"table {table_peak / args.clips:.0f} B per clip ({table_seconds:.2f} s)")


if __name__ == "__main__":
    main()
