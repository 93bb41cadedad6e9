"""The parent's peak memory over N and 4N clips (issue 26 item 1): it may grow
by what each clip's record and source cost, not by its audio.

A real run in a subprocess (bench/generated_clips_plugin.py makes each
one-second clip when it is loaded; speex and the passthrough, si_sdr, two
worker processes, a cache of its own), its peak RSS read by the benchmark
process itself (VmHWM, exact: not polled, not a timing), over the engines'
clip loops and over the whole run (tests/helpers/peak_rss_run.py). Before the pool kept
a bounded window and the cache was read lazily (nsbench.run.executors,
nsbench.run.runner), and before the records were kept as columns
(nsbench.report.record_table), each clip cost the parent ~390 KB over two
engines (bench/MEMORY_AUDIT.md); what is left is a few hundred bytes per
clip-engine.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "bench" / "generated_clips_plugin.py"
SMALL, LARGE = 150, 600
# Bytes per clip beyond SMALL (two engines) by which the parent's peak may
# grow. Measured on main after the pool's window, the lazy cache, the records
# as columns and the blocked bootstrap (a 2-core machine, other jobs running):
# 10.7 KB a clip while the engines ran their clips, 25.5 KB over the whole run.
# At these sizes both are mostly allocator granularity and the bootstrap's
# blocks still filling towards their 16 MB cap (nsbench.report.statistics); at
# 1,000 -> 10,000 clips (bench/bench_throughput.py) the whole run grew by
# 2.4 KB a clip. Holding the outputs, as before, cost 128 KB a clip (one second
# of float32 per engine) and more in RSS: 79 / 95 KB measured on c10540b.
BOUND_CLIPS = 24_000
BOUND_WHOLE = 48_000


def peaks(clips: int, work: Path) -> dict[str, int]:
    argv = ["--plugin", str(PLUGIN), "--dataset", "generated-clips", "--generated-clips", str(clips),
            "--engine", "speex", "--metric", "si_sdr", "--jobs", "2", "--quiet", "--no-plots", "--no-html",
            "--results-folder", str(work / "results")]
    env = {**os.environ, "NSBENCH_CACHE": str(work / "cache")}
    done = subprocess.run([sys.executable, "-m", "tests.helpers.peak_rss_run", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.splitlines()[-1])
    assert figures["engines"] == 2  # both engines' clip loops were measured
    return figures


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="reads and resets the peak RSS in /proc (Linux)")
def test_the_parents_peak_grows_by_a_few_kb_per_clip_not_by_its_audio(tmp_path):
    small = peaks(SMALL, tmp_path / "small")
    large = peaks(LARGE, tmp_path / "large")
    rerun = peaks(LARGE, tmp_path / "large")  # every output from the cache, each read when its turn comes
    growth = {part: (max(large[part], rerun[part]) - small[part]) / (LARGE - SMALL) for part in ("clips", "whole")}
    print(f"parent peak, clips / whole run: {SMALL} clips {small['clips'] / 1e6:.0f} / {small['whole'] / 1e6:.0f} MB, "
          f"{LARGE} clips {large['clips'] / 1e6:.0f} / {large['whole'] / 1e6:.0f} MB, {LARGE} cached "
          f"{rerun['clips'] / 1e6:.0f} / {rerun['whole'] / 1e6:.0f} MB: per extra clip "
          f"{growth['clips'] / 1000:.1f} / {growth['whole'] / 1000:.1f} KB")
    # One second of output is 64 KB a clip-engine: holding the outputs would cost 128 KB a clip.
    assert growth["clips"] < BOUND_CLIPS
    assert growth["whole"] < BOUND_WHOLE
