#!/usr/bin/env python3
"""Each engine's real-time factor (CPU and wall) and SI-SDRi per cell on the demo set.

    python bench/bench_engines.py [--engine X ...] [--jobs 1]

Runs serially by default (--jobs 1), so wall-clock figures are not inflated
by workers sharing cores. Prints one row per engine: RTF, then the mean
SI-SDRi of each noise kind at each SNR, and music attenuation on music-only
clips; the passthrough baseline is measured in the same run.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsbench.cli import main  # noqa: E402

METRICS = ("si_sdri", "music_attenuation_db", "rtf_cpu", "rtf_wall")


def run(engines: list[str], jobs: int) -> Path:
    results = Path(tempfile.mkdtemp(prefix="nsbench-bench-engines-"))
    argv = ["--quiet", "--jobs", str(jobs), "--results-folder", str(results)]
    argv += [arg for name in engines for arg in ("--engine", name)] + [arg for name in METRICS for arg in ("--metric", name)]
    if main(argv) != 0:
        raise SystemExit("the benchmark run failed")
    return results / "demo"


def table(folder: Path) -> None:
    results = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
    results.sort(key=lambda r: r["engine"] != "passthrough")
    cells = [row["cell"] for row in results[0]["cells"] if row["metrics"]["si_sdri"]["n"]]
    labels = [f"{c['noise'][:5]}{c['snr_db']}" for c in cells]
    print(f"{'engine':14s} {'RTF cpu':>8s} {'RTF wall':>8s} " + " ".join(f"{label:>8s}" for label in labels) + f" {'music-only att.':>15s}")
    for result in results:
        by_cell = {tuple(row["cell"].values()): row["metrics"] for row in result["cells"]}
        gains = [by_cell[tuple(c.values())]["si_sdri"]["mean"] for c in cells]
        music = by_cell.get(("music", "no voice"), {}).get("music_attenuation_db", {}).get("mean", float("nan"))
        print(f"{result['engine']:14s} {result['rtf']:8.3f} {result['rtf_wall']:8.3f} "
              + " ".join(f"{gain:8.2f}" for gain in gains) + f" {music:15.2f}")
    print(f"\nSI-SDRi in dB per cell (noise kind and SNR), mean over clips; results in {folder}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", default=[])
    parser.add_argument("--jobs", type=int, default=1)
    arguments = parser.parse_args()
    table(run(arguments.engine, arguments.jobs))
