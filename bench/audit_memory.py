#!/usr/bin/env python3
"""What the parent process holds per clip: tracemalloc at two sizes, diffed.

    python bench/audit_memory.py [--sizes 500,2000] [-- extra benchmark flags]
    python bench/audit_memory.py --child N OUT.json [-- flags]   # one size, by hand
    python bench/audit_memory.py --report EXTRA_CLIPS SMALL.json LARGE.json

For each size N, a fresh subprocess runs ``nsbench.cli.main`` on the
generated-clips dataset (bench/generated_clips_plugin.py; speex plus the
passthrough baseline, default report: plots and report.html, with a cache of
its own) under tracemalloc, 10 frames deep. Forked ``--jobs`` workers stop
tracing at once (os.register_at_fork): only the parent is measured. It takes

* a snapshot as the run loop hands the writer the last clip of the last engine
  (ResultsWriter.add: the run's peak holding of per-clip state), and one as
  ResultsWriter.finish starts (every engine's records, before the report);
* the traced peak within each report phase (finish's listening grid,
  comparisons, plots, HTML), from tracemalloc.reset_peak at its start.

Each traced block is attributed to its innermost frame in nsbench/ or in a
built-in adapter (engines/, datasets/, metrics/, conditions/); blocks with none
are attributed to their innermost frame. Then per site: (bytes at the larger N
- bytes at the smaller) / (difference in clips). A site that holds a per-clip
thing shows as a steady number of bytes per clip; what does not grow
cancels. tracemalloc counts Python's allocations (numpy's too); not
fragmentation, which RSS shows (bench/bench_throughput.py).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "bench" / "generated_clips_plugin.py"
OURS = tuple(str(REPO / part) for part in ("nsbench", "engines", "datasets", "metrics", "conditions", "bench"))
FRAMES = 10  # deep enough to reach nsbench code from numpy; 25 made the parent 3x slower
PHASES = ("listening", "comparisons", "plots", "html", "panel_agreement")


def site_of(traceback: tracemalloc.Traceback) -> str:
    # A Traceback runs from the oldest frame to the most recent: search from the end.
    for frame in reversed(traceback):
        if frame.filename.startswith(OURS):
            return f"{frame.filename[len(str(REPO)) + 1:]}:{frame.lineno}"
    return f"{traceback[-1].filename}:{traceback[-1].lineno}"


def by_site(snapshot: tracemalloc.Snapshot) -> dict[str, int]:
    """Bytes by site; grouped by traceback in C first (per trace, in Python,
    took minutes on a million blocks)."""
    sizes: dict[str, int] = defaultdict(int)
    for statistic in snapshot.statistics("traceback"):
        sizes[site_of(statistic.traceback)] += statistic.size
    return dict(sizes)


def child(clips: int, out: Path, extra: list[str]) -> None:
    """One run under tracemalloc; writes the site sizes and phase peaks to ``out``."""
    sys.path.insert(0, str(REPO))
    os.register_at_fork(after_in_child=tracemalloc.stop)
    tracemalloc.start(FRAMES)
    from nsbench.cli import main
    from nsbench.report.writer import ResultsWriter

    found: dict[str, object] = {"phases": {}}
    added = {"count": 0}
    last_add = 2 * clips  # the passthrough's clips, then speex's
    original_add, original_finish = ResultsWriter.add, ResultsWriter.finish

    def add(self, *args, **kwargs):
        added["count"] += 1
        if added["count"] == last_add:
            found["at_last_clip"] = by_site(tracemalloc.take_snapshot())
            found["traced_at_last_clip"] = tracemalloc.get_traced_memory()[0]
        return original_add(self, *args, **kwargs)

    def finish(self, *args, **kwargs):
        found["at_finish"] = by_site(tracemalloc.take_snapshot())
        found["traced_at_finish"] = tracemalloc.get_traced_memory()[0]
        return original_finish(self, *args, **kwargs)

    def phase(name):
        original = getattr(ResultsWriter, name)

        def wrapped(self, *args, **kwargs):
            start = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            try:
                return original(self, *args, **kwargs)
            finally:
                found["phases"][name] = tracemalloc.get_traced_memory()[1] - start

        setattr(ResultsWriter, name, wrapped)

    ResultsWriter.add, ResultsWriter.finish = add, finish
    for name in PHASES:
        phase(name)
    work = Path(tempfile.mkdtemp(prefix="nsbench-audit-"))
    os.environ["NSBENCH_CACHE"] = str(work / "cache")
    code = main(["--plugin", str(PLUGIN), "--dataset", "generated-clips", "--generated-clips", str(clips),
                 "--engine", "speex", "--quiet", "--results-folder", str(work / "results"), *extra])
    found["peak_traced"] = tracemalloc.get_traced_memory()[1]
    found["exit_code"] = code
    out.write_text(json.dumps(found))


def measure(clips: int, extra: list[str]) -> dict:
    out = Path(tempfile.mkstemp(prefix=f"audit-{clips}-", suffix=".json")[1])
    subprocess.run([sys.executable, __file__, "--child", str(clips), str(out), "--", *extra], check=True, cwd=REPO)
    return json.loads(out.read_text())


def report(small: dict, large: dict, extra_clips: int, shown: int = 15) -> None:
    for moment in ("at_last_clip", "at_finish"):
        total = (large[f"traced_{moment}"] - small[f"traced_{moment}"]) / extra_clips
        print(f"\n{moment}: traced {small[f'traced_{moment}'] / 1e6:.1f} MB -> {large[f'traced_{moment}'] / 1e6:.1f} MB, "
              f"{total:,.0f} bytes per clip in all (2 engines)")
        grown = {site: (large[moment].get(site, 0) - small[moment].get(site, 0)) / extra_clips
                 for site in set(small[moment]) | set(large[moment])}
        for site, per_clip in sorted(grown.items(), key=lambda item: -item[1])[:shown]:
            print(f"  {per_clip:>10,.0f} B/clip  {site}")
    print("\nreport phases, traced peak above the phase's start (MB, then bytes per clip):")
    for name in PHASES:
        a, b = small["phases"].get(name), large["phases"].get(name)
        if a is not None and b is not None:
            print(f"  {name:16s} {a / 1e6:8.1f} -> {b / 1e6:8.1f} MB  {(b - a) / extra_clips:>10,.0f} B/clip")
    print(f"\npeak traced in the whole run: {small['peak_traced'] / 1e6:.1f} MB -> {large['peak_traced'] / 1e6:.1f} MB, "
          f"{(large['peak_traced'] - small['peak_traced']) / extra_clips:,.0f} bytes per clip")


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]), Path(sys.argv[3]), sys.argv[5:])
        return 0
    if sys.argv[1:2] == ["--report"]:  # two children's files, as written by --child N FILE
        small, large = (json.loads(Path(name).read_text()) for name in sys.argv[3:5])
        report(small, large, int(sys.argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000")
    parser.add_argument("extra", nargs="*", help="more benchmark flags, after --")
    args = parser.parse_args()
    small_n, large_n = (int(size) for size in args.sizes.split(","))
    small, large = measure(small_n, args.extra), measure(large_n, args.extra)
    print(f"sizes {small_n} and {large_n} clips; flags: {' '.join(args.extra) or '(defaults)'}")
    report(small, large, large_n - small_n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
