#!/usr/bin/env python3
"""Issue 26 item 1 (MEMORY_AUDIT M13): the report's statistics at 1,000,
10,000 and 100,000 clips, before and after, time and traced peak memory.

    git worktree add --detach /tmp/stats-base <the commit before>   # once
    NSBENCH_CACHE=/tmp/x python -u bench/bench_statistics.py [--base /tmp/stats-base] [--columns 3]

Before: nsbench/report/statistics.py and signed_rank.py of the tree at
--base, loaded from their files (baselines.paired_difference's body is
unchanged; it is run with the old signed_rank). After: this tree's.
Measured: uncertainty() (the per-cell mean and median CIs the report prints,
``--columns`` metrics of one size, as one cell's metrics go together),
bootstrap_median_ci (the seeded-runs interval) and paired_difference (the
Wilcoxon p, the Hodges-Lehmann estimate and its interval). Each figure from a
cleared index cache; "held" is what stays allocated after the call (the
caches). Peak memory is tracemalloc's (numpy's arrays included); the wall
time is of a second, untraced call. Before, at 100,000 clips, paired_difference is not run:
its n(n+1)/2 Walsh averages would take 40 GB. The script also checks that
before and after give the same figures, to the last digit, where both ran.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SIZES = (1_000, 10_000, 100_000)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measured(call, clear):
    """(result, seconds, peak MB, held MB): timed untraced (tracemalloc slows
    the 1000 generators a seeded bootstrap makes), then traced, caches cleared before each."""
    clear()
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    clear()
    tracemalloc.start()
    call()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak / 1e6, held / 1e6


def clear_caches(statistics) -> None:
    for name in ("quick_resample_indices", "resample_indices"):
        if hasattr(getattr(statistics, name, None), "cache_clear"):
            getattr(statistics, name).cache_clear()
    if hasattr(statistics, "INDEX_CACHE"):
        statistics.INDEX_CACHE.clear()


def cases(n: int, columns: int):
    rng = np.random.default_rng(n)
    metrics = {f"m{i}": np.round(rng.normal(5.0, 2.0, n), 2) for i in range(columns)}
    theirs = rng.normal(0.0, 1.0, n)
    return metrics, np.round(theirs + rng.normal(0.05, 1.0, n), 3), theirs


def run_side(side: str, statistics, signed_rank, n: int, columns: int) -> dict:
    from nsbench.report import baselines

    metrics, ours, theirs = cases(n, columns)
    clear = lambda: clear_caches(statistics)  # noqa: E731
    figures = {"uncertainty": measured(lambda: statistics.uncertainty(metrics), clear),
               "bootstrap_median_ci": measured(lambda: statistics.bootstrap_median_ci(metrics["m0"]), clear)}
    if side == "before" and n > 20_000:
        figures["paired_difference"] = None
    else:
        kept = baselines.signed_rank
        baselines.signed_rank = signed_rank
        try:
            figures["paired_difference"] = measured(lambda: baselines.paired_difference(ours, theirs, True), clear)
        finally:
            baselines.signed_rank = kept
    return figures


def report(n: int, before: dict, after: dict) -> None:
    for name, now in after.items():
        then = before[name]
        result, seconds, peak, held = now
        line = f"{n:>7,} {name:<20} after {seconds:7.2f} s {peak:8.1f} MB peak {held:7.1f} MB held"
        if then is None:
            print(line + "   before: not run (n(n+1)/2 Walsh averages: %.0f GB)" % (n * (n + 1) / 2 * 8 / 1e9))
            continue
        print(line + f"   before {then[1]:7.2f} s {then[2]:8.1f} MB peak {then[3]:7.1f} MB held"
              f"   ratio time {then[1] / seconds:5.2f}x peak {then[2] / peak:6.1f}x"
              f"   same figures: {repr(then[0]) == repr(result)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/tmp/stats-base"), help="a checkout of the code before")
    parser.add_argument("--columns", type=int, default=3, help="metrics of one size in the uncertainty() call")
    parser.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    args = parser.parse_args()
    old = (load(args.base / "nsbench/report/statistics.py", "before_statistics"),
           load(args.base / "nsbench/report/signed_rank.py", "before_signed_rank"))
    from nsbench.report import signed_rank, statistics

    for n in args.sizes:  # before and after back to back, per size, as the load varies
        before = run_side("before", *old, n, args.columns)
        after = run_side("after", statistics, signed_rank, n, args.columns)
        report(n, before, after)


if __name__ == "__main__":
    main()
