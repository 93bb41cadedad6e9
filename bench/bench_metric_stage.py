#!/usr/bin/env python3
"""The metric stage per clip and engine, before and after issue 13, in one run.

    python bench/bench_metric_stage.py [--before REV] [--clips N]

Old path: the metric modules (metrics/*.py) of git revision REV (default: the
commit before issue 13's golden table), loaded from git into this process; each
engine computes everything, as the runner did. New path: this checkout's
metrics through the runner's ``score`` with one ``ReferenceFeatures`` memo per
clip shared by the engines, as a run does. Both on the same demo clips and the
same engine outputs (passthrough, speex, webrtc, oracle-irm: real outputs,
computed once), with one BLAS thread as the runner scores, alternating old and
new clip by clip so a loaded machine weighs on both alike. Prints the median CPU
per clip and engine, each metric's, and the ratio. Needs a git checkout.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nsbench.store import reference  # noqa: E402
from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402
from nsbench.run.clips import one_blas_thread, process  # noqa: E402
from nsbench.run.engine_run import EngineHolder  # noqa: E402
from nsbench.run.scoring import reference_features  # noqa: E402
from nsbench.plugins.records import ENHANCEMENT, MetricInputs  # noqa: E402
from nsbench.plugins.errors import MetricUndefined  # noqa: E402

ENGINES = ("passthrough", "speex", "webrtc", "oracle-irm")
METRIC_FILES = ("sisdr.py", "intelligibility.py", "levels.py", "realtime.py", "demixing.py")
DATASET = "demo"  # the default set, real voices since issue 11


def before_issue_13() -> str:
    found = subprocess.run(["git", "log", "-1", "--format=%H", "--grep=^Golden score table"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not found:
        sys.exit("bench_metric_stage: no 'Golden score table' commit in this history; pass --before REV")
    return f"{found}~1"


# The modules old metric files import, and where those names live now (issue 23
# moved the core into packages; the names the metrics use are the public API's).
OLD_IMPORTS = {b"from nsbench.blocks import": b"from nsbench.adapters import",
               b"from nsbench.hookspecs import": b"from nsbench import",
               b"from nsbench.types import": b"from nsbench import"}


def on_todays_layout(source: bytes) -> bytes:
    for old, new in OLD_IMPORTS.items():
        source = source.replace(old, new)
    return source


def old_metric_functions(revision: str) -> dict:
    """name -> metric function, from the metric modules of ``revision``."""
    folder = Path(tempfile.mkdtemp(prefix="nsbench-old-metrics-"))
    functions = {}
    for name in METRIC_FILES:
        source = subprocess.run(["git", "show", f"{revision}:metrics/{name}"], cwd=REPO, capture_output=True, check=True).stdout
        path = folder / f"old_{name}"
        path.write_bytes(on_todays_layout(source))
        spec = importlib.util.spec_from_file_location(f"old_{name[:-3]}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.register_metrics(lambda metric: functions.__setitem__(metric.name, metric.func))
    return functions


def outputs_of(registry, clips):
    """Each engine's real output on each clip, with its timings."""
    outputs = {}
    for name in ENGINES:
        holder = EngineHolder(registry.engines.get(name).spec, {})
        try:
            outputs[name] = [process(holder, clip) for clip in clips]
        finally:
            holder.discard()
    return outputs


def timed_stage(clip, engine_outputs, functions, shared: bool, costs: dict) -> float:
    """CPU seconds to score every engine's output of one clip."""
    memo = reference_features(clip, None) if shared else None
    total = 0.0
    for output, cpu, wall, _ in engine_outputs:
        inputs = MetricInputs(output, clip.clean, clip.noisy, clip.sample_rate, cpu, wall, reference=memo)
        for name, function in functions.items():
            start = time.process_time()
            try:
                function(inputs)
            except MetricUndefined:
                pass
            spent = time.process_time() - start
            costs.setdefault(name, []).append(spent)
            total += spent
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="git revision of the old metrics (default: before issue 13)")
    parser.add_argument("--clips", type=int, default=14, help="demo clips, every fourth (default 14)")
    args = parser.parse_args()
    revision = args.before or before_issue_13()
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    metrics = [r.spec for r in registry.metrics if r.available and r.spec.default and ENHANCEMENT in r.spec.tasks]
    new = {metric.name: metric.func for metric in metrics}
    old = {name: function for name, function in old_metric_functions(revision).items() if name in new}
    sources = registry.datasets.get(DATASET).spec.clips({"demo_seed": 2020})[:: 4][: args.clips]
    clips = [source.load() for source in sources]
    outputs = outputs_of(registry, clips)
    per_clip = {"old": [], "new": []}
    costs = {"old": {}, "new": {}}
    with one_blas_thread():
        for index, clip in enumerate(clips):
            engine_outputs = [outputs[name][index] for name in ENGINES]
            reference._memory.clear()  # the new path computes each clip's features once, here
            order = (("old", old, False), ("new", new, True))
            for label, functions, shared in order if index % 2 else order[::-1]:
                per_clip[label].append(timed_stage(clip, engine_outputs, functions, shared, costs[label]) / len(ENGINES))
    old_ms, new_ms = (1000 * statistics.median(per_clip[label]) for label in ("old", "new"))
    print(f"metric stage, default metrics ({', '.join(new)}), {len(clips)} demo clips x {len(ENGINES)} engines "
          f"({', '.join(ENGINES)}); old = metrics of {revision}")
    print(f"median CPU per clip and engine: old {old_ms:.1f} ms, new {new_ms:.1f} ms: {old_ms / new_ms:.2f}x faster")
    print(f"{'metric':24s} {'old ms':>8s} {'new ms':>8s}")
    for name in new:
        print(f"{name:24s} {1000 * statistics.median(costs['old'][name]):8.2f} {1000 * statistics.median(costs['new'][name]):8.2f}")


if __name__ == "__main__":
    main()
