#!/usr/bin/env python3
"""The harness's share of a cold default demo run (issue 26 item 4).

    python bench/bench_harness_share.py [--tree PATH] [--limit N] [--no-plots-html] [--jobs N]

Runs ``python benchmark.py`` (every default engine and metric over the
embedded demo) in a subprocess with an empty ``NSBENCH_CACHE`` seeded only
with the mixed demo, so the mix is not counted (its cost is printed apart).
Prints the run's CPU (rusage of the waited-for tree), the engines' own CPU
(the sum of ``cpu_seconds`` over the ``.clips.jsonl``), the harness's CPU (the
difference) and its ratio to the engines'. With ``--tree PATH`` another
checkout (a base at main: ``git worktree add /tmp/harness-base main``) runs
first, back to back, and the two runs' per-clip scores are compared
(bench_cold_demo's comparison). The target of the issue: ratio <= 0.33.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_cold_demo import score_difference  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def benchmark(tree: Path, cache: Path, results: Path, extra: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one ``benchmark.py`` run of ``tree``, its output discarded."""
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run([sys.executable, str(tree / "benchmark.py"), "--quiet", "--results-folder", str(results), *extra],
                   cwd=tree, check=True, env={**os.environ, "NSBENCH_CACHE": str(cache)},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, children_cpu() - cpu


def seeded_cache(tree: Path, work: Path, label: str) -> tuple[Path, float]:
    """A cache holding only ``tree``'s mixed demo (a one-clip passthrough run
    mixes it; everything else that run cached is removed), and the CPU it took."""
    seed = work / f"seed-{label}"
    _, cpu = benchmark(tree, seed, work / f"seed-results-{label}", ["--engine", "passthrough", "--limit", "1", "--no-cache"])
    for entry in seed.iterdir():
        if not entry.name.startswith("demo-"):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    return seed, cpu


def engines_cpu(folder: Path) -> dict[str, float]:
    """Engine file -> the sum of its clips' ``cpu_seconds`` (the engines' own processing)."""
    found = {}
    for path in sorted(folder.glob("*.clips.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        found[path.name.removesuffix(".clips.jsonl")] = sum(record.get("cpu_seconds") or 0.0 for record in records)
    return found


def measure(tree: Path, work: Path, label: str, extra: list[str]) -> Path:
    seed, seed_cpu = seeded_cache(tree, work, label)
    cache, results = work / f"cache-{label}", work / f"results-{label}"
    shutil.copytree(seed, cache)
    wall, total = benchmark(tree, cache, results, extra)
    per_engine = engines_cpu(results / "demo")
    engines = sum(per_engine.values())
    harness = total - engines
    print(f"{label}: {tree}")
    print(f"  demo mix (seeding, not counted below): {seed_cpu:.1f} CPU s")
    print(f"  wall {wall:.1f} s; total CPU {total:.1f} s; engines' own CPU {engines:.1f} s; "
          f"harness {harness:.1f} s; harness / engines {harness / engines:.2f}" if engines else "  no engine CPU recorded")
    print("  engines: " + ", ".join(f"{name} {seconds:.1f}" for name, seconds in sorted(per_engine.items(), key=lambda kv: -kv[1])))
    return results / "demo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="another checkout, run first (the baseline)")
    parser.add_argument("--limit", type=int, default=0, help="the first N clips (0: every clip)")
    parser.add_argument("--jobs", type=int, help="benchmark.py --jobs (default: its own)")
    parser.add_argument("--no-plots-html", action="store_true", help="pass --no-plots --no-html")
    args = parser.parse_args()
    extra = (["--limit", str(args.limit)] if args.limit else []) + (["--jobs", str(args.jobs)] if args.jobs else [])
    extra += ["--no-plots", "--no-html"] if args.no_plots_html else []
    with tempfile.TemporaryDirectory(prefix="nsbench-harness-share-") as work:
        work = Path(work)
        base = measure(args.tree.resolve(), work, "base", extra) if args.tree else None
        this = measure(REPO, work, "this", extra)
        if base is not None:
            print(score_difference(base, this))


if __name__ == "__main__":
    main()
