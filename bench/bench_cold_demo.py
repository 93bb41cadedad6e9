#!/usr/bin/env python3
"""A cold default demo run, before and after issue 13, alternating.

    python bench/bench_cold_demo.py [--before REV] [--limit 14 | --limit 0] [--rounds 2]

"Before" is this repository at REV (default: the commit before issue 13's
golden table), unpacked with ``git archive`` into a temporary folder; "after"
is this checkout. Each run is a fresh ``python benchmark.py --no-cache
--no-plots --no-html --quiet --limit N`` (every available default engine and
metric, the default workers; ``--limit 0``: every clip), so it pays start-up,
imports and every clip; each tree's demo set is generated once beforehand
(shared where both trees mix the same set), outside the timings. Prints the wall and
CPU time of each run and the median ratio. Needs a git checkout.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_metric_stage import before_issue_13  # noqa: E402


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def run(tree: Path, limit: int, results: Path) -> tuple[float, float]:
    start, cpu = time.perf_counter(), cpu_seconds()
    clips = ["--limit", str(limit)] if limit else []
    subprocess.run([sys.executable, str(tree / "benchmark.py"), "--no-cache", "--no-plots", "--no-html", "--quiet",
                    *clips, "--results-folder", str(results)], cwd=tree, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None)
    parser.add_argument("--limit", type=int, default=14, help="the first N clips (0: every clip)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    revision = args.before or before_issue_13()
    with tempfile.TemporaryDirectory(prefix="nsbench-cold-demo-") as work:
        work = Path(work)
        before = work / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", revision], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        os.environ.setdefault("NSBENCH_CACHE", str(work / "cache"))
        subprocess.run([sys.executable, str(REPO / "benchmark.py"), "--list", "datasets"], check=True, stdout=subprocess.DEVNULL)
        # Generates each tree's demo set once, outside the timings: a tree whose
        # generator version differs mixes its own, which would land in its first run.
        for label, tree in (("before", before), ("after", REPO)):
            run(tree, 1, work / f"warm-{label}")
        times: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            for label, tree in (("before", before), ("after", REPO)):
                times[label].append(run(tree, args.limit, work / label))
        print(f"cold default demo run, {f'--limit {args.limit}' if args.limit else 'every clip'}; before = {revision}")
        for label, values in times.items():
            print(f"{label:6s} wall s: {', '.join(f'{w:.1f}' for w, _ in values)}; CPU s: {', '.join(f'{c:.1f}' for _, c in values)}")
        for index, what in ((0, "wall"), (1, "CPU")):
            ratios = [b[index] / a[index] for b, a in zip(times["before"], times["after"])]
            print(f"{what}: before over after, median ratio {statistics.median(ratios):.2f}x")
        print(score_difference(work / "before" / "demo", work / "after" / "demo"))


def clip_scores(folder: Path) -> dict[tuple[str, str, str], float]:
    """(engine file, clip, metric) -> value, from every <engine>.clips.jsonl; timings left out."""
    found = {}
    for path in folder.glob("*.clips.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            for metric, value in (record.get("scores") or {}).items():
                if not metric.startswith("rtf") and isinstance(value, (int, float)):
                    found[(path.name, f"{record['clip_id']}#{record.get('seed')}", metric)] = float(value)
    return found


def score_difference(before: Path, after: Path) -> str:
    """Whether the two trees' last runs scored every clip alike: the count and the largest difference."""
    old, new = clip_scores(before), clip_scores(after)
    shared = old.keys() & new.keys()
    largest = max((0.0 if old[key] == new[key] or (math.isnan(old[key]) and math.isnan(new[key]))
                   else abs(old[key] - new[key]) for key in shared), default=0.0)
    return (f"scores: {len(shared)} (engine, clip, metric) values in both runs, {len(old.keys() ^ new.keys())} in one only; "
            f"largest difference {largest:.3g}")


if __name__ == "__main__":
    main()
