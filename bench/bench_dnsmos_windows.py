#!/usr/bin/env python3
"""DNSMOS scored once per distinct window against once per window, on the
demo's 4 s clips (64000 samples at 16 kHz: looped to 16 s, 7 windows of which
4 differ), P.835 and P.808.

    python bench/bench_dnsmos_windows.py [--clips N] [--repeats R]

The baseline is today's arithmetic before the change, written out here (every
window of ``checked_windows`` through the network); the figures of both are
compared to the bit before any timing is printed. CPU seconds (process time),
one onnxruntime thread as the metric runs; the ratio is baseline / new.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import soundfile

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from nsbench.builtin.metrics import dnsmos  # noqa: E402

CLIP_SAMPLES = 64000  # the demo's clips: 4 s at 16 kHz


def every_window_p835(audio: np.ndarray) -> tuple[float, float, float]:
    run = dnsmos.session(dnsmos.P835).run
    raw = np.array([run(None, {"input_1": w[np.newaxis]})[0][0] for w in dnsmos.checked_windows(audio)], dtype=np.float64)
    return tuple(float(np.polyval(p, raw[:, i]).mean()) for i, p in enumerate((dnsmos.POLY_SIG, dnsmos.POLY_BAK, dnsmos.POLY_OVRL)))


def every_window_p808(audio: np.ndarray) -> float:
    run = dnsmos.session(dnsmos.P808).run
    raw = [run(None, {"input_1": dnsmos.p808_features(w[:-dnsmos.P808_TRIM])[np.newaxis]})[0][0][0]
           for w in dnsmos.checked_windows(audio)]
    return float(np.mean(np.asarray(raw, dtype=np.float64)))


def clips(count: int) -> list[np.ndarray]:
    found = []
    for path in sorted((REPO_ROOT / "datasets" / "demo_audio" / "speech").glob("*.flac"))[:count]:
        audio, rate = soundfile.read(path, dtype="float32")
        found.append(dnsmos.resample(audio, rate, dnsmos.MODEL_RATE)[:CLIP_SAMPLES])
    return found


def timed(function, audio: list[np.ndarray], repeats: int) -> tuple[float, list]:
    start = time.process_time()
    for _ in range(repeats):
        values = [function(a) for a in audio]
    return (time.process_time() - start) / repeats, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    audio = clips(args.clips)
    for name, old, new in (("P.835", every_window_p835, lambda a: tuple(dnsmos.dnsmos_p835(a))),
                           ("P.808", every_window_p808, dnsmos.dnsmos_p808)):
        new(audio[0]), old(audio[0])  # sessions loaded outside the timing
        before, old_values = timed(old, audio, args.repeats)
        after, new_values = timed(new, audio, args.repeats)
        assert old_values == new_values, f"{name}: figures differ"
        print(f"DNSMOS {name}, {len(audio)} clips of {CLIP_SAMPLES / dnsmos.MODEL_RATE:g} s: every window {before:.2f} s CPU, "
              f"distinct windows {after:.2f} s; speed-up {before / after:.2f}x; figures equal to the bit")


if __name__ == "__main__":
    main()
