#!/usr/bin/env python3
"""Times how nsbench scales: harness overhead, --jobs, clip count, resume.

    python bench/bench_scale.py [--part overhead|jobs|growth|resume|all] [sizes]

Every figure is a ratio against a baseline measured in the same run:

overhead  `--engine passthrough --jobs 1 --no-cache` with a fixed metric list
          (OVERHEAD_METRICS) over N clips, timed in-process with cli.main after
          a warm-up call (so no interpreter start-up or imports), against a
          plain loop in the same process that loads the same clips and calls the
          same metric functions once per clip and metric. Target: within 10 %.
          N > 56 uses a generated folder dataset instead of the demo set.
jobs      wall time of `--engine E --no-cache` (default metrics, demo clips)
          with --jobs 1 and --jobs 2, in-process after a warm-up. Target >= 1.8x.
growth    a generated folder dataset of short clips (tones + noise, seed 0);
          passthrough with cheap metrics (si_sdr, voice_level_db), --jobs 1,
          --no-cache, on --limit SMALL and on all; ratio of per-clip times
          (1.0 = linear).
resume    subprocess runs of `--engine E --jobs 1` with a private cache holding
          only the demo set: a full run; then a run killed with SIGKILL once
          E.clips.jsonl has half the clips, and the same command rerun; then a
          run with everything cached. Rerun and cached times vs the full run's.

Timings come from whatever else the machine is running; say so with them.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nsbench.cli import main  # noqa: E402
from nsbench.flags import build_parser  # noqa: E402
from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402
from nsbench.plugins.records import MetricInputs  # noqa: E402
from nsbench.plugins.errors import MetricUndefined

OVERHEAD_METRICS = ("si_sdr", "si_sdr_zm", "snr", "stoi", "estoi", "voice_level_db")
CHEAP_METRICS = ("si_sdr", "voice_level_db")
DEMO_CLIPS = 56
QUIET = ["--quiet", "--no-plots", "--no-html"]


def flags(name: str, values) -> list[str]:
    return [a for v in values for a in (name, v)]


def timed_main(argv: list[str]) -> float:
    start = time.perf_counter()
    code = main(argv)
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"nsbench exited {code}: {' '.join(argv)}")
    return wall


def make_folder(root: Path, count: int, seconds: float, rate: int = 16000) -> Path:
    """count clip pairs: clean = two amplitude-modulated tones, noisy = clean + white noise."""
    rng = np.random.default_rng(0)
    t = np.arange(int(seconds * rate)) / rate
    for sub in ("clean", "noisy"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        f1, f2, fm = rng.uniform(150, 400), rng.uniform(600, 2500), rng.uniform(2, 6)
        clean = 0.1 * (np.sin(2 * np.pi * f1 * t) + 0.5 * np.sin(2 * np.pi * f2 * t)) * (0.6 + 0.4 * np.sin(2 * np.pi * fm * t))
        noisy = clean + rng.normal(0, 0.03, t.size)
        soundfile.write(root / "clean" / f"clip{i:05d}.wav", clean.astype(np.float32), rate, subtype="FLOAT")
        soundfile.write(root / "noisy" / f"clip{i:05d}.wav", noisy.astype(np.float32), rate, subtype="FLOAT")
    return root


def dataset_flags(clips: int, work: Path, seconds: float) -> list[str]:
    if clips <= DEMO_CLIPS:
        return ["--limit", str(clips)]
    folder = work / f"folder{clips}"
    if not folder.exists():
        make_folder(folder, clips, seconds)
    return ["--dataset", "folder", "--data-folder", str(folder)]


def plain_loop(dataset_argv: list[str], metric_names) -> float:
    """Load each clip and compute each metric once, as the runner's score_one
    does (with one BLAS thread, as the runner scores)."""
    manager = get_plugin_manager(load_entry_points=False)
    registry = build_registry(manager)
    args = build_parser(manager).parse_args(dataset_argv)
    metrics = [registry.metrics.get(name).spec for name in metric_names]
    start = time.perf_counter()
    sources = registry.datasets.get(args.dataset).spec.clips(vars(args))[: args.limit]
    for source in sources:
        clip = source.load()
        with threadpool_limits(limits=1):
            score_plain(clip, metrics)
    return time.perf_counter() - start


def score_plain(clip, metrics) -> None:
    inputs = MetricInputs(clip.noisy.copy(), clip.clean, clip.noisy, clip.sample_rate)
    for metric in metrics:
        if clip.task not in metric.tasks or (metric.needs_voice and not clip.has_voice):
            continue
        try:
            float(metric.func(inputs))
        except MetricUndefined:
            pass


def part_overhead(opts, work: Path) -> None:
    data = dataset_flags(opts.overhead_clips, work, opts.seconds)
    argv = ["--engine", "passthrough", "--jobs", "1", "--no-cache", *QUIET, *flags("--metric", OVERHEAD_METRICS),
            "--results-folder", str(work / "r-overhead"), *data]
    timed_main(argv)  # warm-up: imports, lazy metric set-up
    plain_loop(data, OVERHEAD_METRICS)
    harness, plain = [], []
    for _ in range(opts.repeats):  # interleaved, so load changes hit both alike
        harness.append(timed_main(argv))
        plain.append(plain_loop(data, OVERHEAD_METRICS))
    h, p = min(harness), min(plain)
    print(f"overhead, {opts.overhead_clips} clips, metrics {','.join(OVERHEAD_METRICS)}, best of {opts.repeats}:")
    print(f"  harness {h:.2f} s, plain loop {p:.2f} s, ratio {h / p:.3f} (target <= 1.10)"
          f"  [all harness: {' '.join(f'{x:.2f}' for x in harness)}; plain: {' '.join(f'{x:.2f}' for x in plain)}]")


def part_jobs(opts, work: Path) -> None:
    base = ["--engine", opts.engine, "--no-cache", *QUIET, "--results-folder", str(work / "r-jobs")]
    timed_main([*base, "--jobs", "1", "--limit", "2"])  # warm-up
    walls = {jobs: timed_main([*base, "--jobs", str(jobs), "--limit", str(opts.jobs_clips)]) for jobs in (1, 2)}
    print(f"jobs, {opts.engine}, {opts.jobs_clips} demo clips, default metrics:")
    print(f"  --jobs 1 {walls[1]:.2f} s, --jobs 2 {walls[2]:.2f} s, speed-up {walls[1] / walls[2]:.2f}x (target >= 1.8x)")


def part_growth(opts, work: Path) -> None:
    folder = work / f"growth{opts.growth_large}"
    if not folder.exists():
        start = time.perf_counter()
        make_folder(folder, opts.growth_large, opts.seconds)
        print(f"  (generated {opts.growth_large} clips of {opts.seconds:g} s in {time.perf_counter() - start:.1f} s)")
    argv = ["--engine", "passthrough", "--jobs", "1", "--no-cache", *QUIET, *flags("--metric", CHEAP_METRICS),
            "--dataset", "folder", "--data-folder", str(folder), "--results-folder", str(work / "r-growth")]
    timed_main([*argv, "--limit", "5"])  # warm-up
    small = timed_main([*argv, "--limit", str(opts.growth_small)])
    large = timed_main(argv)
    ps, pl = small / opts.growth_small, large / opts.growth_large
    print(f"growth, passthrough, metrics {','.join(CHEAP_METRICS)}, {opts.seconds:g} s clips:")
    print(f"  {opts.growth_small} clips {small:.2f} s ({ps * 1000:.1f} ms/clip), {opts.growth_large} clips {large:.2f} s"
          f" ({pl * 1000:.1f} ms/clip), per-clip ratio {pl / ps:.2f} (1.0 = linear)")


def run_sub(argv: list[str], cache: Path, kill_at: tuple[Path, int] | None = None) -> tuple[float, int]:
    env = {**os.environ, "NSBENCH_CACHE": str(cache)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"), *argv], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if kill_at:
        log, lines = kill_at
        while proc.poll() is None:
            if log.exists() and log.read_bytes().count(b"\n") >= lines:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.05)
    proc.wait()
    return time.perf_counter() - start, proc.returncode


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def part_resume(opts, work: Path, demo_cache: Path) -> None:
    clips = opts.resume_clips
    def fresh_cache(name: str) -> Path:
        cache = work / name
        cache.mkdir()
        for demo in demo_cache.glob("demo-*"):
            shutil.copytree(demo, cache / demo.name)
        return cache
    def argv(results: str) -> list[str]:
        return ["--engine", opts.engine, "--jobs", "1", *QUIET, "--limit", str(clips), "--results-folder", str(work / results)]
    full, code = run_sub(argv("r-full"), fresh_cache("cache-full"))
    full_lines = lines_in(work / "r-full" / "demo" / f"{opts.engine}.clips.jsonl")
    cache = fresh_cache("cache-resume")
    log = work / "r-resume" / "demo" / f"{opts.engine}.clips.jsonl"
    killed, kcode = run_sub(argv("r-resume"), cache, (log, clips // 2))
    done = lines_in(log)
    rerun, rcode = run_sub(argv("r-resume"), cache)
    cached, ccode = run_sub(argv("r-resume"), cache)
    print(f"resume, {opts.engine}, {clips} demo clips, --jobs 1, subprocesses (interpreter start-up included):")
    print(f"  full run {full:.2f} s (exit {code}, {full_lines} clip lines); killed run {killed:.2f} s (exit {kcode}, {done} clip lines)")
    print(f"  rerun after kill {rerun:.2f} s (exit {rcode}), ratio to full {rerun / full:.2f} (ideal ~0.5 + start-up)")
    print(f"  all cached {cached:.2f} s (exit {ccode}), ratio to full {cached / full:.2f}")


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("overhead", "jobs", "growth", "resume", "all"), default="all")
    parser.add_argument("--engine", default="speex", help="engine for jobs and resume (default speex)")
    parser.add_argument("--overhead-clips", type=int, default=DEMO_CLIPS, help="> 56 uses a generated folder")
    parser.add_argument("--repeats", type=int, default=3, help="overhead: timed repeats of each side (best is shown)")
    parser.add_argument("--jobs-clips", type=int, default=DEMO_CLIPS)
    parser.add_argument("--growth-small", type=int, default=100)
    parser.add_argument("--growth-large", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of generated clips")
    parser.add_argument("--resume-clips", type=int, default=DEMO_CLIPS)
    parser.add_argument("--keep", action="store_true", help="keep the work folder (results, caches, generated clips)")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nsbench-scale-"))
    demo_cache = work / "cache-demo"
    os.environ["NSBENCH_CACHE"] = str(demo_cache)  # holds the demo set only: the runs use --no-cache
    start = time.perf_counter()
    get_plugin_manager()  # the demo set, generated once here
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    registry.datasets.get("demo").spec.clips(vars(build_parser(get_plugin_manager(load_entry_points=False)).parse_args([])))
    print(f"demo set ready in {time.perf_counter() - start:.1f} s; work folder {work}; figures are under whatever load the machine has")
    parts = ("overhead", "jobs", "growth", "resume") if opts.part == "all" else (opts.part,)
    try:
        for part in parts:
            start = time.perf_counter()
            if part == "resume":
                part_resume(opts, work, demo_cache)
            else:
                {"overhead": part_overhead, "jobs": part_jobs, "growth": part_growth}[part](opts, work)
            print(f"  ({part}: {time.perf_counter() - start:.1f} s wall for the part)")
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main_bench()
