#!/usr/bin/env python3
"""What the listening grid's spectrograms cost, and what drawing them without
librosa saves: librosa's import (numba compiles some of its functions at
import and caches them on disk) and first calls of ``stft``,
``amplitude_to_db`` and ``display.specshow``, which the grid paid until it
computed them in numpy (nsbench.report.spectrograms); then one grid row of 11
images of a 4-second clip as the grid draws it now.

    python bench/bench_spectrograms.py

Each figure comes from a fresh Python process, CPU seconds (user + system, so a
loaded machine inflates them less than wall time): the librosa figures with an
empty numba cache (the first run after an install), then with the cache it left.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, resource, sys, time
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
import numpy as np, scipy.signal, matplotlib  # what a run has imported before a report is drawn
figures = {}
start = cpu()
import librosa, librosa.display
librosa.stft  # librosa loads its submodules lazily: this imports librosa.core and librosa.util
figures["import librosa (incl. numba)"] = cpu() - start
signal = np.random.default_rng(0).standard_normal(64000).astype(np.float32)
start = cpu(); spectrum = np.abs(librosa.stft(signal, n_fft=256, hop_length=256)); figures["first stft"] = cpu() - start
start = cpu(); decibels = librosa.amplitude_to_db(spectrum, ref=float(spectrum.max())); figures["first amplitude_to_db"] = cpu() - start
from matplotlib.figure import Figure
from matplotlib.backends.backend_agg import FigureCanvasAgg
figure = Figure(figsize=(2.4, 1.2)); FigureCanvasAgg(figure); axes = figure.add_axes((0, 0, 1, 1))
start = cpu(); librosa.display.specshow(decibels, sr=16000, n_fft=256, hop_length=256, ax=axes); figures["first specshow"] = cpu() - start
sys.path.insert(0, sys.argv[1])
from pathlib import Path
start = cpu(); from nsbench.report.spectrograms import draw_row; figures["import nsbench's spectrograms"] = cpu() - start
folder = Path(sys.argv[2])
start = cpu(); draw_row([signal * (0.5 ** k) for k in range(11)], 16000, [folder / f"{k}.png" for k in range(11)])
figures["a grid row of 11 images (numpy)"] = cpu() - start
print(json.dumps(figures))
"""


def probe(numba_cache: str, images: str) -> dict[str, float]:
    environment = {**os.environ, "NUMBA_CACHE_DIR": numba_cache}
    run = subprocess.run([sys.executable, "-c", PROBE, str(ROOT), images], env=environment, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as numba_cache, tempfile.TemporaryDirectory() as images:
        first = probe(numba_cache, images)  # an empty cache: what the first run after an install pays
        cached = probe(numba_cache, images)
    print(f"{'CPU seconds':30}  {'empty numba cache':>17}  {'cached':>8}")
    for name in first:
        print(f"{name:30}  {first[name]:17.2f}  {cached[name]:8.2f}")


if __name__ == "__main__":
    main()
