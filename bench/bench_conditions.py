#!/usr/bin/env python3
"""Input conditions: the cost per clip of each, and every engine's gain under some.

    python bench/bench_conditions.py [--clips 8] [--limit N] [--jobs 2] [--skip-costs] [--skip-gains]

1. Cost: each built-in condition applied to the noisy input of the first
   ``--clips`` demo clips (4 s at 16 kHz), CPU and wall milliseconds per clip
   (a codec's one-off delay probe is excluded: it runs once per process); and,
   in the same run, loading a conditioned clip from the cache against
   computing it.
2. Gains: every available built-in engine on the demo under none, opus-16k,
   amr-nb-12k and limiter (``--limit N``: the first N demo clips only), the mean
   SI-SDRi per condition from each engine's JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsbench.run import conditions  # noqa: E402
from nsbench.builtin.datasets import demo  # noqa: E402
from nsbench.cli import main  # noqa: E402
from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402

GAIN_CONDITIONS = ("opus-16k", "amr-nb-12k", "limiter")


def cpu() -> float:
    times = psutil.Process().cpu_times()
    return times.user + times.system


def costs(count: int) -> None:
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    names = [record.spec.name for record in registry.conditions if record.spec.name != conditions.NONE]
    chosen = conditions.resolve(names, registry.conditions)[1:]  # also measures each codec's delay once
    clips = [source.load() for source in demo.clips({"demo_seed": demo.DEFAULT_SEED})[:count]]
    seconds = sum(clip.duration for clip in clips)
    print(f"{'condition':18s} {'CPU ms/clip':>12s} {'wall ms/clip':>12s} {'CPU RTF':>8s}")
    for condition in chosen:
        cpu_start, wall_start = cpu(), time.perf_counter()
        for clip in clips:
            conditions.apply_steps(clip, condition.steps)
        used, wall = cpu() - cpu_start, time.perf_counter() - wall_start
        print(f"{condition.name:18s} {1000 * used / len(clips):12.1f} {1000 * wall / len(clips):12.1f} {used / seconds:8.4f}")
    print(f"\nover {len(clips)} demo clips of {seconds / len(clips):.1f} s at {clips[0].sample_rate} Hz")
    cached_against_computed(chosen, count)


def cached_against_computed(chosen: list, count: int) -> None:
    """Loading opus-16k clips through the conditioned-audio cache: first
    (computed and stored) against second (read back)."""
    opus = next(condition for condition in chosen if condition.name == "opus-16k")
    with tempfile.TemporaryDirectory() as root:
        sources = conditions.conditioned_sources(demo.clips({"demo_seed": demo.DEFAULT_SEED})[:count], [opus], (root, True))
        timings = []
        for _ in range(2):
            start = time.perf_counter()
            for source in sources:
                source.load()
            timings.append(time.perf_counter() - start)
    print(f"opus-16k clip loads: computed {1000 * timings[0] / count:.1f} ms/clip, from the cache "
          f"{1000 * timings[1] / count:.1f} ms/clip ({timings[0] / timings[1]:.1f}x)")


def gains(limit: int | None, jobs: int) -> None:
    results = Path(tempfile.mkdtemp(prefix="nsbench-bench-conditions-"))
    argv = ["--quiet", "--no-html", "--no-plots", "--jobs", str(jobs), "--results-folder", str(results),
            "--metric", "si_sdri", "--metric", "si_sdr_input", "--metric", "rtf_cpu"]
    argv += [arg for name in GAIN_CONDITIONS for arg in ("--condition", name)]
    if limit:
        argv += ["--limit", str(limit)]
    if main(argv) != 0:
        raise SystemExit("the benchmark run failed")
    names = [conditions.NONE, *GAIN_CONDITIONS]
    rows = [json.loads(path.read_text()) for path in sorted((results / "demo").glob("*.json"))]
    rows.sort(key=lambda r: r["engine"] != "passthrough")
    print(f"\n| engine | {' | '.join(names)} |\n| --- |{' --- |' * len(names)}")
    for result in rows:
        by_condition = {row["cell"]["condition"]: row["metrics"] for row in result["conditions"]}
        key = "si_sdr_input" if result["engine"] == "passthrough" else "si_sdri"
        print(f"| {result['engine']}{' (input SI-SDR)' if key == 'si_sdr_input' else ''} | "
              + " | ".join(f"{by_condition[name][key]['mean']:.2f}" for name in names) + " |")
    clips = rows[0]["clips"] // len(names)
    print(f"\nmean SI-SDRi in dB per condition over {clips} demo clips with a voice each; results in {results}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=8, help="demo clips to time each condition on")
    parser.add_argument("--limit", type=int, help="demo clips for the gain table (default: all 56)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip-costs", action="store_true")
    parser.add_argument("--skip-gains", action="store_true")
    arguments = parser.parse_args()
    if not arguments.skip_costs:
        costs(arguments.clips)
    if not arguments.skip_gains:
        gains(arguments.limit, arguments.jobs)
