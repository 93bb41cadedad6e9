#!/usr/bin/env python3
"""Per-block compute times of the streamable engines on the demo set, at 128
samples (a Web Audio worklet's block) and at 10 ms (a call's frame), and the
harness's own per-block overhead.

    python bench/bench_streaming.py [--engine X ...] [--limit 8]

Runs serially (--jobs 1) without the cache (every block is timed anew, and
every whole-clip output is computed for the comparison). Per engine and block
size: p50, p99 and max block time in ms, deadline misses (blocks that took
longer than they last), the algorithmic delay and the distance to the
whole-clip output. Then the harness alone: the passthrough stream through the
same block loop, at the clip's rate and through soxr's streaming resamplers
(16 -> 48 -> 16 kHz, as for DeepFilterNet), against the block's duration.
Wall-clock figures: on a shared machine they are upper bounds, the p99 and the
max most of all.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsbench.run import streaming  # noqa: E402
from nsbench.builtin.datasets import demo  # noqa: E402
from nsbench.builtin.engines.passthrough import PassthroughStream  # noqa: E402
from nsbench.cli import main  # noqa: E402
from nsbench.run.clips import cpu_seconds  # noqa: E402

ENGINES = ("webrtc", "speex", "deepfilternet", "rnnoise")
BLOCKS = (("--block-size", "128"), ("--block-ms", "10"))


def run(engines: list[str], limit: int, block: tuple[str, str]) -> list[dict]:
    results = Path(tempfile.mkdtemp(prefix="nsbench-bench-streaming-"))
    argv = ["--quiet", "--jobs", "1", "--no-cache", "--no-html", "--no-plots", "--metric", "si_sdri",
            "--limit", str(limit), "--results-folder", str(results), *block]
    argv += [arg for name in engines for arg in ("--engine", name)]
    if main(argv) != 0:
        raise SystemExit("the benchmark run failed")
    found = [json.loads(path.read_text()) for path in sorted((results / "demo").glob("*.json"))]
    return sorted(found, key=lambda r: r["engine"] != "passthrough")


def engine_rows(results: list[dict], block: tuple[str, str]) -> None:
    for result in results:
        info = result["streaming"]
        if not info["streamable"]:
            print(f"{result['engine']:14s} {' '.join(block):16s} not streamable: {info['why']}")
            continue
        print(f"{result['engine']:14s} {' '.join(block):16s} {info['block_deadline_ms']:8.3f} {info['block_ms_p50']:8.3f} "
              f"{info['block_ms_p99']:8.3f} {info['block_ms_max']:8.3f} {info['deadline_misses']:5d}/{info['blocks']:<6d} "
              f"{info['block_cpu_ms_p50']:8.3f} {info['block_cpu_ms_p99']:8.3f} "
              f"{result['rtf']:7.3f} {info['algorithmic_delay_ms']:8.1f} {info['resampler_delay_ms']:8.1f}  "
              f"{info['versus_whole']['text']}")


def harness_overhead(limit: int) -> None:
    """The block loop with a stream that only copies: what nsbench itself costs per block."""
    clips = [source.load() for source in demo.clips({"demo_seed": demo.DEFAULT_SEED})[:limit]]
    print("\nharness alone (passthrough stream), ms per block:")
    print(f"{'path':22s} {'block':>6s} {'lasts':>8s} {'p50':>8s} {'p99':>8s} {'max':>8s} {'p50/lasts':>10s}")
    for label, rate in (("16 kHz, no resampling", None), ("16 -> 48 -> 16 kHz", 48000)):
        for size in (128, 160):
            times = []
            for clip in clips:
                _, _, _, stats = streaming.run_stream(PassthroughStream(), clip.noisy, clip.sample_rate,
                                                      rate or clip.sample_rate, 0, size, cpu_seconds)
                times += stats["block_ms"]
            lasts = 1000 * size / clips[0].sample_rate
            p50, p99 = np.percentile(times, [50, 99])
            print(f"{label:22s} {size:6d} {lasts:8.3f} {p50:8.4f} {p99:8.4f} {max(times):8.3f} {p50 / lasts:10.2%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", default=[])
    parser.add_argument("--limit", type=int, default=8, help="demo clips (default 8, 4 s each)")
    arguments = parser.parse_args()
    print(f"{'engine':14s} {'block':16s} {'lasts':>8s} {'p50':>8s} {'p99':>8s} {'max':>8s} {'misses':>12s} "
          f"{'cpu p50':>8s} {'cpu p99':>8s} {'RTF':>7s} {'alg. ms':>8s} {'resamp.':>8s}  vs whole clip")
    for block in BLOCKS:
        engine_rows(run(arguments.engine or list(ENGINES), arguments.limit, block), block)
    harness_overhead(arguments.limit)
    print("\nblock times are wall-clock ms per block (resampling in, the engine's call, resampling out); "
          "alg. ms: declared delay + measured buffering; resamp.: the harness's streaming resamplers' own delay")
