#!/usr/bin/env python3
"""Peak memory (RSS) of a benchmark run on one long file (an hour by default).

    python bench/bench_memory.py [--minutes 60] [--engine X ...] [--metric M ...] [--keep]

Generates, in a temporary folder laid out as the ``folder`` dataset expects
(``noisy/long.wav`` and ``clean/long.wav``, 16-bit 16 kHz mono), one long
recording: espeak-ng utterances from the demo set's voices, looped with pauses
(harmonic bursts if espeak-ng is missing), plus pink noise at 5 dB SNR. Both
files are written a minute at a time, so generating them needs little memory.

Then, for each engine, with an empty ``NSBENCH_CACHE`` of its own, runs ``benchmark.py --engine X --dataset folder`` as a
subprocess (the passthrough baseline is always added by the harness, so every
run includes it; the ``passthrough`` row is that baseline alone) and measures:

* peak RSS of the process tree: the RSS of the process and all its
  descendants, summed, polled every 50 ms (a peak shorter than that can be
  missed);
* the largest peak RSS of any one process (``ru_maxrss`` of the children of
  a small launcher process: the benchmark process or a program it waited
  for; exact).

Each is printed in MB (10^6 bytes) and as a multiple of the file's audio as
float32 (one hour at 16 kHz is 230 MB). The first row, measured in the same
run, is a bare Python process that imports numpy and soundfile and reads the
noisy file as float32: the least any harness can hold.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import soundfile

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RATE = 16000
SNR_DB = 5.0
CHUNK_SECONDS = 60
POLL_SECONDS = 0.05
MB = 1e6
# Engines quick enough on an hour of audio on one core (RTF well under 0.1 on
# the demo set); deepfilternet and rnnoise work too, at a few minutes an hour.
DEFAULT_ENGINES = ("passthrough", "speex", "webrtc", "noisereduce", "nsnet2")
BASELINE_SCRIPT = (
    "import sys, numpy, soundfile; "
    "audio, rate = soundfile.read(sys.argv[1], dtype='float32'); "
    "print(audio.shape, audio.dtype)"
)
# Runs the command and writes the largest peak RSS (bytes) of any process it
# waited for. A small process without numpy: a child's ru_maxrss starts at its
# parent's RSS when forked, so launching from this process (which held the
# generated audio) would inflate it.
LAUNCHER = (
    "import resource, subprocess, sys; "
    "code = subprocess.call(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)); "
    "sys.exit(code)"
)


def utterances(rng: np.random.Generator) -> list[np.ndarray]:
    """A few seconds each of the demo set's espeak voices; harmonic bursts without espeak-ng."""
    texts = (
        "The quick brown fox jumps over the lazy dog near the river bank.",
        "Please call Stella and ask her to bring these things with her from the store.",
        "A long hour of speech is what this benchmark reads, processes and scores.",
        "Six spoons of fresh snow peas, five thick slabs of blue cheese, and maybe a snack.",
    )
    try:
        from nsbench.synth.speech import speak

        return [speak(text, voice, sample_rate=RATE) for text in texts for voice in ("m1", "f1")]
    except Exception as error:  # no espeak-ng here: plain numpy speech-like bursts
        print(f"bench_memory: espeak-ng unavailable ({error}); using harmonic bursts", file=sys.stderr)
        bursts = []
        for _ in range(8):
            n = int(rng.uniform(1.5, 3.5) * RATE)
            t = np.arange(n) / RATE
            f0 = rng.uniform(100, 220) * (1 + 0.1 * np.sin(2 * np.pi * 3 * t))
            phase = 2 * np.pi * np.cumsum(f0) / RATE
            tone = sum(np.sin(k * phase) / k for k in range(1, 12))
            syllables = np.clip(np.sin(2 * np.pi * 4 * t), 0, None) ** 2
            bursts.append((0.1 * tone * syllables).astype(np.float32))
        return bursts


def pink(rng: np.random.Generator, samples: int) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(samples))
    freqs = np.fft.rfftfreq(samples, d=1.0 / RATE)
    spectrum[0] = 0.0
    spectrum[1:] /= np.sqrt(freqs[1:])
    noise = np.fft.irfft(spectrum, samples)
    return (noise / np.sqrt(np.mean(noise**2))).astype(np.float32)


def generate(root: Path, minutes: float, seed: int = 0) -> Path:
    """root/noisy/long.wav and root/clean/long.wav; returns the noisy file."""
    rng = np.random.default_rng(seed)
    voices = utterances(rng)
    total = int(round(minutes * 60 * RATE))
    paths = {role: root / role / "long.wav" for role in ("noisy", "clean")}
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    with soundfile.SoundFile(paths["noisy"], "w", RATE, 1, "PCM_16") as noisy_file, \
            soundfile.SoundFile(paths["clean"], "w", RATE, 1, "PCM_16") as clean_file:
        carry = np.zeros(0, dtype=np.float32)  # speech that spills into the next chunk
        written = 0
        while written < total:
            length = min(CHUNK_SECONDS * RATE, total - written)
            speech = [carry]
            filled = len(carry)
            while filled < length:
                pause = np.zeros(int(rng.uniform(0.25, 0.8) * RATE), dtype=np.float32)
                voice = voices[int(rng.integers(len(voices)))] * np.float32(rng.uniform(0.5, 1.0))
                speech += [pause, voice]
                filled += len(pause) + len(voice)
            joined = np.concatenate(speech)
            clean, carry = joined[:length], joined[length:]
            rms = np.sqrt(np.mean(np.square(clean, dtype=np.float64))) or 1e-3
            noise = pink(rng, length) * np.float32(rms * 10 ** (-SNR_DB / 20))
            clean_file.write(clean)
            noisy_file.write(np.clip(clean + noise, -1.0, 1.0))
            written += length
    return paths["noisy"]


def tree_rss(members: list[psutil.Process]) -> int:
    total = 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:  # it ended between the listing and the read
            pass
    return total


def measure(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, int]:
    """(peak tree RSS in bytes, largest single-process peak in bytes, wall s, exit code)."""
    errors = tempfile.TemporaryFile()  # a pipe could fill and stall the child
    with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as report:
        start = time.perf_counter()
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, report.name, *command], cwd=REPO,
                                    stdout=subprocess.DEVNULL, stderr=errors, env=env)
        peak = 0
        while launcher.poll() is None:
            try:
                # The launcher's descendants: the run, its workers and programs.
                members = psutil.Process(launcher.pid).children(recursive=True)
            except psutil.Error:
                members = []
            peak = max(peak, tree_rss(members))
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - start
        single = float(report.read().strip() or "nan")
    errors.seek(0)
    stderr = errors.read().decode(errors="replace")
    errors.close()
    if launcher.returncode != 0:
        print(f"bench_memory: {' '.join(command[:4])} ... exit {launcher.returncode}\n{stderr[-2000:]}", file=sys.stderr)
    return float(peak), single, wall, launcher.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="length of the generated file (default 60)")
    parser.add_argument("--engine", action="append", default=[], help=f"engine to run (repeatable; default {', '.join(DEFAULT_ENGINES)})")
    parser.add_argument("--metric", action="append", default=[], help="metric (repeatable; default: the harness's default metrics)")
    parser.add_argument("--extra", default="", help="more benchmark.py arguments, one string (e.g. '--no-html --no-plots')")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = parser.parse_args()
    engines = args.engine or list(DEFAULT_ENGINES)

    work = Path(tempfile.mkdtemp(prefix="nsbench-bench-memory-"))
    try:
        started = time.perf_counter()
        noisy = generate(work / "data", args.minutes)
        samples = soundfile.info(str(noisy)).frames
        audio_bytes = samples * 4  # one file as float32
        print(f"generated {samples / RATE / 60:.1f} min at {RATE} Hz in {time.perf_counter() - started:.0f} s; "
              f"float32 size of one file {audio_bytes / MB:.0f} MB; multiples below are of that size\n")
        print(f"{'run':28s} {'tree peak MB':>12s} {'x audio':>8s} {'max proc MB':>12s} {'x audio':>8s} {'wall s':>7s}")

        def row(name: str, command: list[str], env: dict[str, str] | None = None) -> None:
            tree, single, wall, code = measure(command, env)
            status = "" if code == 0 else f"  (exit {code})"
            print(f"{name:28s} {tree / MB:12.0f} {tree / audio_bytes:8.2f} {single / MB:12.0f} "
                  f"{single / audio_bytes:8.2f} {wall:7.0f}{status}", flush=True)

        row("baseline: numpy+sf.read", [sys.executable, "-c", BASELINE_SCRIPT, str(noisy)])
        for engine in engines:
            command = [
                sys.executable, str(REPO / "benchmark.py"), "--quiet", "--jobs", "1",
                "--dataset", "folder", "--data-folder", str(work / "data"),
                "--results-folder", str(work / "results" / engine), "--engine", engine,
            ]
            command += [arg for metric in args.metric for arg in ("--metric", metric)]
            command += args.extra.split()
            # A cache of its own: a run must not find the previous run's outputs.
            env = {**os.environ, "NSBENCH_CACHE": str(work / "cache" / engine)}
            row(engine if engine == "passthrough" else f"{engine} (+passthrough)", command, env)
        print(f"\nmetrics: {', '.join(args.metric) or 'the default set'}; tree peak polled every {POLL_SECONDS * 1000:.0f} ms")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
