#!/usr/bin/env python3
"""Throughput and memory of runs of 1,000 to 100,000 clips (issue 26, items 1 and 5).

    python bench/bench_throughput.py [--sizes 1000,10000] [--full] [--executor local|dask|both]
                                     [--cache on|off|both] [--jobs N] [--with-report] [--keep]

Each run is a subprocess of

    benchmark.py --plugin bench/generated_clips_plugin.py --dataset generated-clips \
        --generated-clips N --engine speex --quiet --no-plots --no-html [--executor dask] [--no-cache]

(the harness adds the passthrough baseline, so two engines run: 2N
clip-engines), with an empty NSBENCH_CACHE and results folder of its own. The
clips are made when loaded (bench/generated_clips_plugin.py: one second of a
harmonic burst in white or pink noise at -5..20 dB), so nothing is read from
disk. ``--no-plots --no-html`` by default: the plots and report.html cost the
same at any N and would blur the per-clip figures; ``--with-report`` drops
them. ``--full`` adds 100,000 clips (hours on 2 cores; printed as skipped
otherwise).

Per run it prints:

* wall seconds, and CPU seconds: the children's rusage of this script (the
  benchmark process and every process it waited for) and, beside it, the
  tree's CPU as last polled (psutil, every 50 ms), which also counts Dask
  workers whose nanny does not wait for them;
* clips per second (N / wall);
* the parent's peak RSS: VmHWM from /proc/self/status, read by the benchmark
  process itself as it ends (a small wrapper around nsbench.cli.main,
  tests/helpers/peak_rss_run.py: exact, not polled); and the tree's peak RSS
  (the sum over the process and its descendants, polled every 50 ms);
* the clip loops' peak: the parent's VmHWM while the engines ran their clips,
  each engine's summary left out (the wrapper resets VmHWM after each one),
  what nsbench.run holds, apart from what the report's statistics make;
* harness CPU per clip-engine: (tree CPU - the engines' own CPU) / 2N, where
  the engines' own CPU is the sum of ``cpu_seconds`` (= rtf_cpu x the clip's
  seconds) over both engines' .clips.jsonl. The results do not record the
  metrics' CPU, so scoring is part of this figure;
* the cache on disk (bytes and files) after the run;
* the parent's peak RSS as a ratio of its peak at the first size (issue 26's
  targets: 1.15x at 4,000, 1.25x at 10,000).

"Before" figures (main at 02ca693, the re-layered core; speex + passthrough,
default --jobs 2, local executor, with cache, --no-plots --no-html; a 2-core
machine SHARED WITH ~6 OTHER JOBS, load average 3-7, so wall and CPU are
inflated and noisy; the RSS figures are not):

    clips  wall s  CPU s  clips/s  parent peak MB  tree peak MB  engines' CPU s  harness ms/clip-engine  cache MB  cache files  vs 1,000
    1,000  204.5   85.9   4.9      472             469           3.4             41.3                    146       9,002        1.00x
    4,000  1060.8  347.0  3.8      1634            1627          13.2            41.7                    583       36,002       3.46x

Dask, a local cluster of 2 single-threaded workers (the same flags plus --executor dask):

    1,000  204.2   169.5  4.9      447             814           4.3             82.6                    146       9,002        1.00x

(Twice the local run's CPU for the same work, and the tree's peak 814 MB:
the workers keep every result until the engine ends, nsbench.run.dask_executor:run_on_dask.)
10,000 clips did not fit the time left (4,000 took 18 minutes on the loaded machine).

After the pool's bounded window and the lazy cache (nsbench.run.executors,
nsbench.run.runner; branch flow), against main at c10540b in the same
sitting, local, with cache (load average 7-14: wall and CPU noisy):

    clips  tree        parent peak MB  vs 1,000
    1,000  main        473             1.00x
    4,000  main        1634            3.45x
    1,000  flow        408             1.00x
    4,000  flow        1373            3.36x

The clip loops' peak (the next column, run just after on flow, load 1-4):
1,000 clips 69 MB, 4,000 clips 121 MB (1.76x, 17 KB a clip over two engines
with every default metric: the records the run keeps for the report, and the
sources); tests/run/test_memory_growth.py (si_sdr only): 13 KB a clip, 79 KB
before. So the whole run's peak is the summaries'
bootstrap, nsbench.report.statistics.uncertainty, which resamples every
column at once: (columns, 1000, clips) float64, and np.median's copy of it.

(The tree's peak is polled, the parent's exact: a polled tree peak under the
parent's is the poll missing the peak. The engines' own CPU is 4% of the
total: on 1-second clips with speex nearly all of it is the harness, scoring
first: STOI/ESTOI, bench/MEMORY_AUDIT.md.) Dask needed ``PYTHONPATH=bench``
before nsbench.run.dask_executor sent a plugin file's functions by value; it
no longer does, and this script no longer sets it.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "bench" / "generated_clips_plugin.py"
POLL_SECONDS = 0.05
MB = 1e6
ENGINES = ("speex",)  # plus the passthrough baseline, which the harness adds
# Runs nsbench.cli.main in this process (tests/helpers/peak_rss_run.py), then
# writes its peaks (bytes; VmHWM, exact) as JSON to the file named by argv[1]:
# the whole run's, and the engines' clip loops' (each engine's summary left out).
WRAPPER = (
    "import json, sys; sys.path.insert(0, sys.argv[2]); from tests.helpers.peak_rss_run import measure; "
    "code, figures = measure(sys.argv[3:]); open(sys.argv[1], 'w').write(json.dumps(figures)); sys.exit(code)"
)


@dataclass
class Figures:
    clips: int
    executor: str
    cache: bool
    wall: float = 0.0
    cpu_rusage: float = 0.0
    cpu_tree: float = 0.0
    parent_peak: float = 0.0  # bytes, VmHWM
    clips_peak: float = 0.0  # bytes, VmHWM while the engines ran their clips (summaries left out)
    tree_peak: float = 0.0  # bytes, polled
    engine_cpu: float = 0.0
    clip_engines: int = 0
    cache_bytes: int = 0
    cache_files: int = 0
    exit_code: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def harness_ms(self) -> float:
        return 1000 * (self.cpu_tree - self.engine_cpu) / max(self.clip_engines, 1)


class TreePoller(threading.Thread):
    """Peak summed RSS of a process and its descendants, and each one's last
    seen CPU time (a process that ended keeps its last reading)."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.peak = 0
        self.cpu: dict[tuple[int, float], float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                processes = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                break
            total = 0
            for process in processes:
                try:
                    with process.oneshot():
                        total += process.memory_info().rss
                        times = process.cpu_times()
                        self.cpu[(process.pid, process.create_time())] = times.user + times.system
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(POLL_SECONDS)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def folder_size(folder: Path) -> tuple[int, int]:
    sizes = [path.stat().st_size for path in folder.rglob("*") if path.is_file()]
    return sum(sizes), len(sizes)


def engines_cpu(results: Path) -> tuple[float, int]:
    """Sum of the engines' own cpu_seconds over every clips.jsonl, and the clip-engines."""
    total, count = 0.0, 0
    for path in results.rglob("*.clips.jsonl"):
        with path.open() as lines:
            for line in lines:
                record = json.loads(line)
                count += 1
                if record.get("error") is None:
                    total += record["cpu_seconds"]
    return total, count


def run_once(clips: int, executor: str, use_cache: bool, jobs: int | None, with_report: bool, work: Path) -> Figures:
    figures = Figures(clips, executor, use_cache)
    run_folder = Path(tempfile.mkdtemp(prefix=f"tp-{clips}-{executor}-", dir=work))
    cache, results, hwm_file = run_folder / "cache", run_folder / "results", run_folder / "peaks.json"
    argv = ["--plugin", str(PLUGIN), "--dataset", "generated-clips", "--generated-clips", str(clips),
            *(a for engine in ENGINES for a in ("--engine", engine)), "--quiet", "--results-folder", str(results),
            "--executor", executor, *([] if use_cache else ["--no-cache"]), *(["--jobs", str(jobs)] if jobs else []),
            *([] if with_report else ["--no-plots", "--no-html"])]
    env = {**os.environ, "NSBENCH_CACHE": str(cache)}
    before = children_cpu()
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", WRAPPER, str(hwm_file), str(REPO), *argv], cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    poller = TreePoller(process.pid)
    poller.start()
    _, stderr = process.communicate()
    figures.wall = time.perf_counter() - start
    poller.done.set()
    poller.join()
    figures.exit_code = process.returncode
    if process.returncode:
        figures.notes.append(f"exit {process.returncode}: {stderr.strip().splitlines()[-1:] or ''}")
    figures.cpu_rusage = children_cpu() - before
    figures.cpu_tree = max(sum(poller.cpu.values()), figures.cpu_rusage)
    figures.tree_peak = poller.peak
    peaks = json.loads(hwm_file.read_text()) if hwm_file.is_file() else {"whole": math.nan, "clips": math.nan}
    figures.parent_peak, figures.clips_peak = peaks["whole"], peaks["clips"]
    figures.engine_cpu, figures.clip_engines = engines_cpu(results)
    if cache.is_dir():
        figures.cache_bytes, figures.cache_files = folder_size(cache)
    return figures


HEADER = ("clips", "executor", "cache", "wall s", "CPU s (rusage/tree)", "clips/s", "parent peak MB", "tree peak MB",
          "engines' CPU s", "harness ms/clip-engine", "cache MB", "cache files", "parent peak vs first",
          "clip loops' peak MB", "clip loops vs first")


def row(figures: Figures, first: Figures | None) -> tuple[str, ...]:
    ratio = figures.parent_peak / first.parent_peak if first else 1.0
    loops = figures.clips_peak / first.clips_peak if first else 1.0
    return (f"{figures.clips:,}", figures.executor, "on" if figures.cache else "off", f"{figures.wall:.1f}",
            f"{figures.cpu_rusage:.1f}/{figures.cpu_tree:.1f}", f"{figures.clips / figures.wall:.1f}",
            f"{figures.parent_peak / MB:.0f}", f"{figures.tree_peak / MB:.0f}", f"{figures.engine_cpu:.1f}",
            f"{figures.harness_ms:.1f}", f"{figures.cache_bytes / MB:.0f}" if figures.cache else "-",
            f"{figures.cache_files:,}" if figures.cache else "-", f"{ratio:.2f}x", f"{figures.clips_peak / MB:.0f}",
            f"{loops:.2f}x")


def print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    for r in [HEADER, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(r, widths)), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="clip counts, comma-separated (default 1000,10000)")
    parser.add_argument("--full", action="store_true", help="also 100,000 clips (hours on 2 cores)")
    parser.add_argument("--executor", choices=("local", "dask", "both"), default="both")
    parser.add_argument("--cache", choices=("on", "off", "both"), default="on", help="with the cache, --no-cache, or both")
    parser.add_argument("--jobs", type=int, help="--jobs for the runs (default: the benchmark's, the usable cores)")
    parser.add_argument("--with-report", action="store_true", help="draw the plots and write report.html too")
    parser.add_argument("--work", help="folder for the runs' caches and results (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the runs' caches and results")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    if args.full and 100_000 not in sizes:  # once: --sizes 100000 --full ran it twice, an hour each
        sizes.append(100_000)
    elif 100_000 not in sizes:
        print("100,000 clips: skipped (--full runs it)")
    executors = ("local", "dask") if args.executor == "both" else (args.executor,)
    caches = {"on": (True,), "off": (False,), "both": (True, False)}[args.cache]
    work = Path(args.work or tempfile.mkdtemp(prefix="nsbench-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    rows, firsts = [], {}
    try:
        for executor in executors:
            for use_cache in caches:
                for clips in sizes:
                    figures = run_once(clips, executor, use_cache, args.jobs, args.with_report, work)
                    first = firsts.setdefault((executor, use_cache), figures)
                    rows.append(row(figures, first))
                    print_table(rows[-1:]) if len(rows) > 1 else print_table(rows)
                    for note in figures.notes:
                        print(f"  {note}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print_table(rows)
    print(f"(speex + passthrough; {'plots and report.html drawn' if args.with_report else '--no-plots --no-html'}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
