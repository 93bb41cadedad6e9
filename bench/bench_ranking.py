#!/usr/bin/env python3
"""Issue 40: the rank intervals' bootstrap at its stated scale, 1,000
resamples over 100,000 clips and 12 systems (8 metrics in 3 categories), in at
most 60 s and 4 GB on 2 cores.

    python -u bench/bench_ranking.py [--clips 100000] [--systems 12] [--resamples 1000]

Prints the wall time and the process's peak resident memory (ru_maxrss, which
includes the interpreter and numpy, about 60 MB) of
nsbench.report.rank_bootstrap.bootstrap_ranks, and beside it a baseline
measured in the same run: the obvious way, each resample's clips gathered by
fancy indexing (scores[indices]) and averaged with np.nanmean, timed over
``--baseline-resamples`` resamples and scaled to the full count. Both draw
the same resamples (the same generator calls), so the script also checks that
their first resample's means agree.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")  # the stated machine: 2 cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nsbench.report.rank_bootstrap import bootstrap_ranks  # noqa: E402
from nsbench.ranking import rank_arrays  # noqa: E402

CATEGORY_OF = np.array([0, 0, 0, 1, 1, 1, 1, 2])  # 3 non-intrusive, 4 intrusive, 1 downstream
HIGHER = np.array([True] * 7 + [False])


def scores_of(clips: int, systems: int) -> np.ndarray:
    """Per-clip scores: each system a little better than the one before, clip
    difficulty shared (paired), 1 % of values missing."""
    rng = np.random.default_rng(1)
    difficulty = rng.normal(0, 1, (clips, 1, len(HIGHER)))
    skill = np.linspace(0, 0.05, systems)[None, :, None] * np.where(HIGHER, 1, -1)
    scores = difficulty + skill + rng.normal(0, 1, (clips, systems, len(HIGHER)))
    scores[rng.random(scores.shape) < 0.01] = np.nan
    return scores


def baseline(scores: np.ndarray, resamples: int, seed: int = 0) -> tuple[float, np.ndarray]:
    """Seconds for ``resamples`` resamples the obvious way, and the first one's means."""
    rng = np.random.default_rng(seed)
    clips = len(scores)
    start, first = time.perf_counter(), None
    for _ in range(resamples):
        means = np.nanmean(scores[rng.integers(0, clips, clips)], axis=0)
        rank_arrays(means, HIGHER, CATEGORY_OF, 3)
        first = means if first is None else first
    return time.perf_counter() - start, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=100_000)
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--baseline-resamples", type=int, default=20)
    args = parser.parse_args()
    scores = scores_of(args.clips, args.systems)
    print(f"scores: {args.clips:,} clips x {args.systems} systems x {len(HIGHER)} metrics "
          f"({scores.nbytes / 1e6:.0f} MB); {args.resamples:,} resamples; {os.cpu_count()} cores visible")
    start = time.perf_counter()
    found = bootstrap_ranks(scores, HIGHER, CATEGORY_OF, 3, resamples=args.resamples)
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"bootstrap_ranks: {seconds:.1f} s, peak resident {peak_mb:.0f} MB (limits: 60 s, 4096 MB)")
    print(f"  p_best sums to {found.p_best.sum():.6f}; last system's overall interval {found.overall[-1].tolist()}")
    base_seconds, first = baseline(scores, args.baseline_resamples)
    scaled = base_seconds * args.resamples / args.baseline_resamples
    print(f"baseline (fancy indexing + nanmean, {args.baseline_resamples} resamples timed): "
          f"{base_seconds:.1f} s, {scaled:.0f} s scaled to {args.resamples:,}; ratio {scaled / seconds:.1f}x")
    rng = np.random.default_rng(0)
    counts = np.bincount(rng.integers(0, args.clips, args.clips), minlength=args.clips).astype(np.float64)
    present = ~np.isnan(scores)
    ours = np.einsum("c,csm->sm", counts, np.nan_to_num(scores)) / np.einsum("c,csm->sm", counts, present)
    print(f"first resample's means agree with the baseline's: {np.allclose(ours, first, rtol=1e-9, atol=1e-12)}")
    print(f"verdict: {'within' if seconds <= 60 and peak_mb <= 4096 else 'OVER'} the stated 60 s and 4 GB")


if __name__ == "__main__":
    main()
