#!/usr/bin/env python3
"""Picovoice's job, two ways: RNNoise through a compiled xiph ``rnnoise_demo``
and STOI, on 15 ten-second pairs in the DNS 2020 layout.

    python bench/bench_equal_job.py --rnnoise-demo PATH [--rounds 3]
    NSBENCH_RNNOISE_DEMO=PATH python bench/bench_equal_job.py

* plain loop: what Picovoice's benchmark.py does per clip, in one process:
  read both files, resample the noisy one to 48 kHz, write raw 16-bit PCM, run
  ``rnnoise_demo IN OUT`` as a subprocess, read it, resample back to 16 kHz,
  ``pystoi.stoi(clean, output, 16000)``;
* nsbench: ``python benchmark.py --dataset dns2020 --engine rnnoise
  --rnnoise-demo-path PATH --metric stoi --no-cache --no-plots --no-html``,
  with its default workers.

Both run as fresh processes (this script with ``--plain-loop``, and nsbench's
benchmark.py), start-up included, as a user runs Picovoice's
``python3 benchmark.py``. The plain loop also reports its imports (pystoi,
scipy.signal) apart, and the ratio without them is printed beside the target
one, so a reader sees how much of the gap is start-up.

Python caches compiled modules (``__pycache__``): the installed packages the
plain loop imports were compiled when pip installed them, and a checkout's
nsbench modules are compiled on its first run and then cached, unless
``PYTHONDONTWRITEBYTECODE`` is set, as it is on some CI machines; then
nsbench compiles its ~70 modules on every run (~0.2 s here). Both sides run
in this script's environment as it is; ``--bytecode-cache`` lets them cache
compiled modules whatever it says, as on a default Python install. One
untimed nsbench run first compiles what can be cached.

The two alternate, ``--rounds`` times each; the median wall-time ratio is
printed. No registry ships xiph's program: build it yourself (see the
docs/benchmarks.md); without one the script says so and exits 0.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_datasets import DNS_RATE, make_dns  # noqa: E402

PAIRS = 15
ENV = "NSBENCH_RNNOISE_DEMO"
ENVIRONMENT = dict(os.environ)  # both sides' (see --bytecode-cache)


def dns_set(root: Path) -> Path:
    """The first PAIRS pairs of bench_datasets' DNS-layout set (ten-second pairs)."""
    full = make_dns(root / "full")
    subset = root / "no_reverb"
    for folder in ("clean", "noisy"):
        (subset / folder).mkdir(parents=True)
    for noisy in sorted((full / "noisy").glob("*.wav"))[:PAIRS]:
        ident = re.search(r"fileid_(\d+)\.wav$", noisy.name).group(1)
        os.link(noisy, subset / "noisy" / noisy.name)
        os.link(full / "clean" / f"clean_fileid_{ident}.wav", subset / "clean" / f"clean_fileid_{ident}.wav")
    return subset


def cpu_seconds() -> float:
    """This process's CPU and its waited-for children's (programs, nsbench)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def plain_loop(data: Path, program: str, scratch: Path) -> list[float]:
    """Picovoice's steps, clip by clip (this process must be fresh: its imports
    are part of the job, and their time is printed as ``imports: SECONDS``)."""
    start = time.perf_counter()
    import pystoi
    from scipy.signal import resample_poly

    print(f"imports: {time.perf_counter() - start:.3f}")
    scores = []
    for noisy_path in sorted((data / "noisy").glob("*.wav")):
        ident = re.search(r"fileid_(\d+)\.wav$", noisy_path.name).group(1)
        clean, _ = soundfile.read(data / "clean" / f"clean_fileid_{ident}.wav")
        noisy, rate = soundfile.read(noisy_path)
        at_48k = resample_poly(noisy, 48000, rate)
        pcm = np.clip(at_48k * 32768, -32768, 32767).astype("<i2")
        source, target = scratch / "in.pcm", scratch / "out.pcm"
        pcm.tofile(source)
        subprocess.run([program, str(source), str(target)], check=True)
        output = resample_poly(np.fromfile(target, dtype="<i2") / 32768.0, rate, 48000)
        length = min(len(clean), len(output))
        scores.append(pystoi.stoi(clean[:length], output[:length], rate))
    return scores


def run_plain_loop(data: Path, program: str, scratch: Path) -> float:
    """The plain loop in a fresh process; returns the seconds its imports took."""
    done = subprocess.run([sys.executable, __file__, "--plain-loop", str(data), program, str(scratch)],
                          check=True, capture_output=True, text=True, env=ENVIRONMENT)
    return float(re.search(r"^imports: ([0-9.]+)$", done.stdout, re.M).group(1))


def nsbench(data: Path, program: str, results: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "benchmark.py"), "--dataset", "dns2020", "--data-folder", str(data),
         "--engine", "rnnoise", "--rnnoise-demo-path", program, "--metric", "stoi", "--no-cache", "--no-plots",
         "--no-html", "--quiet", "--results-folder", str(results)],
        check=True, stdout=subprocess.DEVNULL, env=ENVIRONMENT,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rnnoise-demo", default=os.environ.get(ENV), help=f"xiph's rnnoise_demo (or ${ENV})")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bytecode-cache", action="store_true",
                        help="let both sides cache compiled modules even if PYTHONDONTWRITEBYTECODE is set")
    parser.add_argument("--plain-loop", nargs=3, metavar=("DATA", "PROGRAM", "SCRATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bytecode_cache:
        ENVIRONMENT.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.plain_loop:
        data, program, scratch = args.plain_loop
        plain_loop(Path(data), program, Path(scratch))
        return 0
    if not args.rnnoise_demo:
        print(f"bench_equal_job: skipped: no rnnoise_demo program (pass --rnnoise-demo PATH or set {ENV})")
        return 0
    program = str(Path(args.rnnoise_demo).resolve())
    with tempfile.TemporaryDirectory(prefix="nsbench-equal-job-") as work:
        work = Path(work)
        data = dns_set(work / "dns")
        ENVIRONMENT["NSBENCH_CACHE"] = str(work / "cache")
        nsbench(data, program, work / "results")  # untimed: compiles what Python may cache
        walls: dict[str, list[float]] = {"plain loop": [], "nsbench": []}
        cpus: dict[str, list[float]] = {"plain loop": [], "nsbench": []}
        imports: list[float] = []
        for _ in range(args.rounds):
            for label, run in (("plain loop", lambda: imports.append(run_plain_loop(data, program, work))),
                               ("nsbench", lambda: nsbench(data, program, work / "results"))):
                start, cpu = time.perf_counter(), cpu_seconds()
                run()
                walls[label].append(time.perf_counter() - start)
                cpus[label].append(cpu_seconds() - cpu)
        print(f"{PAIRS} pairs of {10.0:g} s at {DNS_RATE} Hz, rnnoise_demo {program}, {os.cpu_count()} cores; "
              f"compiled modules {'not ' if ENVIRONMENT.get('PYTHONDONTWRITEBYTECODE') else ''}cached")
        for label in walls:
            print(f"{label:11s} wall s: {', '.join(f'{v:.2f}' for v in walls[label])} (median {statistics.median(walls[label]):.2f}); "
                  f"CPU s: {', '.join(f'{v:.2f}' for v in cpus[label])}")
        print(f"plain loop's imports (pystoi, scipy.signal) s: {', '.join(f'{v:.2f}' for v in imports)}")
        for what, values in (("wall time", walls), ("CPU time", cpus)):
            ratios = [plain / ours for plain, ours in zip(values["plain loop"], values["nsbench"])]
            print(f"{what}: the plain loop over nsbench, median of the per-round ratios: {statistics.median(ratios):.2f}x")
        warm = [(plain - spent) / ours for plain, spent, ours in zip(walls["plain loop"], imports, walls["nsbench"])]
        print(f"wall time, the plain loop's imports left out (as if already loaded): {statistics.median(warm):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
