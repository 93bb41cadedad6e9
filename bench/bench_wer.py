#!/usr/bin/env python3
"""What the ``wer`` metric costs, and whether it can join the default set.

    python bench/bench_wer.py [--clips 4] [--limit 12] [--full]

1. Cost per clip and engine of ``wer`` on the demo's first ``--clips`` voiced
   clips, over four engines' outputs, with the transcripts shared (one store:
   the clean and noisy transcripts once per clip, as a run does) and without
   (a fresh store for every clip and engine: three transcripts each). CPU time.
2. The default demo run (every default engine, the default metrics, the
   default --jobs) with and without ``--metric wer`` on its first ``--limit``
   clips, in fresh caches, wall and CPU time; with ``--full`` also the whole
   default run without wer, and an estimate of it with wer.
3. The WER table (mean wer_input, wer, wer_delta per engine) of the limited run.
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
sys.path.insert(0, str(REPO))

from nsbench import recognition  # noqa: E402
from nsbench.plugins.metric_options import bind_options, metric_context  # noqa: E402
from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402
from nsbench.run.engine_run import EngineRun  # noqa: E402
from nsbench.run.runner import run_engine  # noqa: E402
from nsbench.plugins.records import MetricInputs  # noqa: E402

COST_ENGINES = ("passthrough", "noisereduce", "webrtc", "speex")
DEMO = "demo"  # the dataset the default run uses
DEFAULT_METRICS = ("si_sdr", "si_sdr_zm", "si_sdr_input", "si_sdri", "snr", "stoi", "estoi",
                   "voice_level_db", "music_attenuation_db", "rtf_cpu", "rtf_wall", "mdx_sdr")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cost_per_clip(count: int) -> None:
    registry = build_registry(get_plugin_manager())
    [metric], _ = bind_options([registry.metrics.get("wer").spec], lambda spec: {}, metric_context(registry, use_cache=False))
    sources = [s for s in registry.datasets.get(DEMO).spec.clips({}) if s.labels.get("snr_db") not in ("no voice",)][:count]
    outputs = {}
    for name in COST_ENGINES:
        spec = registry.engines.get(name).spec
        outputs[name] = [outcome.output for outcome in run_engine(EngineRun(spec, {"seed": None}, []), sources)]
    clips = [source.load() for source in sources]

    bound = metric.func.args[1]  # the options bind_options gave the metric
    key = (bound["recogniser"], bound["fingerprint"], bound["transcripts"], bound["fresh_after"])

    def score_all(fresh_each_time: bool) -> tuple[float, int]:
        """CPU seconds and transcripts computed, scoring every engine's outputs."""
        recognition.store_for.cache_clear()
        computed, start = 0, time.process_time()
        for name in COST_ENGINES:
            for clip, output in zip(clips, outputs[name]):
                if fresh_each_time:
                    recognition.store_for.cache_clear()
                store = recognition.store_for(*key)  # the one the metric uses
                before = store.computed
                metric.func(MetricInputs(output, clip.clean, clip.noisy, clip.sample_rate))
                computed += store.computed - before
        return time.process_time() - start, computed

    scored = len(clips) * len(COST_ENGINES)
    seconds = sum(len(clip.noisy) / clip.sample_rate for clip in clips) / len(clips)
    for label, fresh in (("shared transcripts", False), ("no sharing", True)):
        cpu, computed = score_all(fresh)
        print(f"wer, {label}: {cpu / scored:.2f} CPU s per clip and engine ({len(clips)} clips of {seconds:.1f} s x "
              f"{len(COST_ENGINES)} engines; {computed} transcripts)")


def demo_run(cache: Path, limit: int | None, wer: bool, results: Path) -> tuple[float, float]:
    argv = [sys.executable, str(REPO / "benchmark.py"), "--dataset", DEMO, "--quiet", "--no-html", "--no-plots",
            "--results-folder", str(results)]
    argv += ["--limit", str(limit)] if limit else []
    argv += [arg for name in DEFAULT_METRICS + (("wer",) if wer else ()) for arg in ("--metric", name)]
    env = {**os.environ, "NSBENCH_CACHE": str(cache)}
    cpu, wall = children_cpu(), time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - wall, children_cpu() - cpu


def fresh_cache(demo_cache: Path) -> Path:
    """A cache with the generated demo set in it, and nothing else."""
    cache = Path(tempfile.mkdtemp(prefix="nsbench-bench-wer-"))
    for folder in demo_cache.glob("demo-*"):
        shutil.copytree(folder, cache / folder.name)
    return cache


def wer_table(folder: Path) -> None:
    print("| engine | clips | WER in | WER out | WER delta |\n| --- | --- | --- | --- | --- |")
    for path in sorted(folder.glob("*.json")):
        result = json.loads(path.read_text())
        means = [result["metrics"].get(name, {}).get("mean", float("nan")) for name in ("wer_input", "wer", "wer_delta")]
        print(f"| {result['engine']} | {result['metrics'].get('wer', {}).get('n', 0)} | " + " | ".join(f"{m:.3f}" for m in means) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=4)
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    demo_cache = Path(tempfile.mkdtemp(prefix="nsbench-bench-demo-"))
    os.environ["NSBENCH_CACHE"] = str(demo_cache)
    cost_per_clip(args.clips)
    work = Path(tempfile.mkdtemp(prefix="nsbench-bench-wer-results-"))
    times = {}
    for wer in (False, True):
        times[wer] = demo_run(fresh_cache(demo_cache), args.limit, wer, work / f"wer{wer}")
        print(f"default demo run, first {args.limit} clips, {'with' if wer else 'without'} wer: "
              f"{times[wer][0]:.0f} s wall, {times[wer][1]:.0f} s CPU")
    print(f"with wer / without: {times[True][0] / times[False][0]:.1f}x wall")
    if args.full:
        wall, cpu = demo_run(fresh_cache(demo_cache), None, False, work / "full")
        clips = len((work / "full" / DEMO / "passthrough.clips.jsonl").read_text().splitlines())
        extra = (times[True][0] - times[False][0]) * clips / args.limit
        print(f"default demo run, all clips, without wer: {wall:.0f} s wall, {cpu:.0f} s CPU; "
              f"with wer, estimated from the limited runs: {wall + extra:.0f} s wall")
    wer_table(work / "werTrue" / DEMO)


if __name__ == "__main__":
    main()
