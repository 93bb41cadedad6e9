#!/usr/bin/env python3
"""Times the default demo run and the per-clip cost of each metric.

    python bench/bench_demo.py [--engine X ...]

Prints: demo-set generation time (in a fresh cache), the wall and CPU time of
the default run (every available engine, or the ones named) serially and with
two worker processes, and for each
metric its median CPU cost per 4-second clip, with its share of the metric
total and its ratio to SI-SDR (the cheapest full-clip metric) measured in the
same run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsbench.cli import main  # noqa: E402
from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402
from nsbench.plugins.records import ENHANCEMENT, MetricInputs  # noqa: E402
from nsbench.plugins.errors import MetricUndefined

COST_CLIP_STRIDE = 7
JOBS = (1, 2)  # the default run uses every core; 2 on the machines this was written for


def timed(function) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def metric_costs(clips, metrics) -> dict[str, float]:
    """Median CPU per clip; all metrics on one clip back to back, as the runner
    scores them (the three DNSMOS scores share one inference)."""
    samples: dict[str, list[float]] = {metric.name: [] for metric in metrics}
    for clip in clips:
        inputs = MetricInputs(clip.noisy * 0.9, clip.clean, clip.noisy, clip.sample_rate, 0.1, 0.1)
        for metric in metrics:
            start = time.process_time()
            try:
                metric.func(inputs)
            except MetricUndefined:
                continue
            samples[metric.name].append(time.process_time() - start)
    return {name: statistics.median(values) if values else float("nan") for name, values in samples.items()}


def run(engines: list[str]) -> None:
    cache = tempfile.mkdtemp(prefix="nsbench-bench-")
    os.environ["NSBENCH_CACHE"] = cache
    registry = build_registry(get_plugin_manager())
    demo = registry.datasets.get("demo").spec
    generation = timed(lambda: demo.clips({"demo_seed": 2020}))
    count = len(demo.clips({"demo_seed": 2020}))
    print(f"demo set generation: {generation[0]:.1f} s wall, {generation[1]:.1f} s CPU ({count} clips of 4 s)")

    results = tempfile.mkdtemp(prefix="nsbench-bench-results-")
    walls: dict[int, float] = {}
    argv = ["--quiet", "--results-folder", results] + [a for name in engines for a in ("--engine", name)]
    for jobs in JOBS:
        wall, cpu = timed(lambda: main([*argv, "--jobs", str(jobs)]))
        walls[jobs] = wall
        print(f"demo run, {' '.join(engines) or 'all available engines'}, --jobs {jobs}: {wall:.1f} s wall, {cpu:.1f} s CPU in the parent")
    print(f"speed-up of --jobs {JOBS[-1]} over --jobs 1: {walls[1] / walls[JOBS[-1]]:.2f}x")

    # Every tenth clip: all noise kinds, a music-only and a clean one; DNSMOS costs seconds each.
    clips = [source.load() for source in demo.clips({"demo_seed": 2020})[::COST_CLIP_STRIDE]]
    metrics = [record.spec for record in registry.metrics if record.available and ENHANCEMENT in record.spec.tasks]
    costs = metric_costs(clips, metrics)
    total = sum(cost for name, cost in costs.items() if cost == cost and registry.metrics.get(name).spec.default)
    print(f"\nper-clip metric cost (median CPU over {len(clips)} demo clips; default metrics total {total * 1000:.1f} ms per clip and engine)")
    print(f"{'metric':24s} {'ms':>8s} {'/total':>7s} {'x si_sdr':>9s}")
    for name, cost in sorted(costs.items(), key=lambda item: -item[1]):
        default = "" if registry.metrics.get(name).spec.default else "  (optional)"
        print(f"{name:24s} {cost * 1000:8.2f} {cost / total:7.1%} {cost / costs['si_sdr']:9.1f}{default}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", default=[])
    run(parser.parse_args().engine)
