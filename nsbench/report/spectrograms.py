"""Spectrogram PNGs for the listening grid, with librosa.

Imported only when a report draws them (not with --no-html). librosa loads its
submodules lazily, and the first ``stft`` call imports ``librosa.util.utils``,
whose vectorised functions declare explicit signatures and so compile at
import. numba caches them on disk beside librosa: with an empty cache (the
first run after an install) the import and first ``stft`` took 8.6 + 17.4 s of
CPU, once cached 1.9 + 0.6 s (bench/bench_spectrograms.py, 2-core machine,
loaded). ``amplitude_to_db`` and ``display.specshow`` compile nothing on first
use (0.01 s); functions that would (``util.localmax``, ``magphase``'s
``phasor``, the ``istft`` overlap-add) are not called. A row of 11 images costs
0.25 s of CPU.

A row of the grid (one clip: input, reference, every engine's output) shares one
colour scale: decibels relative to the loudest bin of the whole row, so a darker
picture means a quieter output, not a different normalisation.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

# The picture is 120 pixels tall: 129 bins (256 at 16 kHz, 16 ms) fill it, and
# more would only cost drawing time (matplotlib draws every bin of the mesh).
# A hop of one window gives 62 frames a second: 250 columns for 4 seconds.
N_FFT = 256
DYNAMIC_RANGE_DB = 80.0  # below the row's loudest bin, drawn as the darkest colour
SIZE_INCHES, DPI = (2.4, 1.2), 100  # 240 x 120 pixels: a few KB to tens of KB each
COLOURMAP = "magma"
COLOURS = 64  # in the PNG's palette


def magnitudes(audio: np.ndarray, rate: int) -> np.ndarray:
    """|STFT| of a mono signal (several sources are summed: what one hears)."""
    import librosa

    mono = np.asarray(audio, dtype=np.float32)
    if mono.ndim > 1:
        mono = mono.sum(axis=0)
    n_fft = N_FFT * max(1, round(rate / 16000))  # the same 16 ms window at any rate
    return np.abs(librosa.stft(mono, n_fft=n_fft, hop_length=n_fft))


def draw_row(signals: Sequence[np.ndarray], rate: int, paths: Sequence[Path]) -> None:
    """One PNG per signal, on the colour scale of the whole row."""
    import librosa
    import librosa.display
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no GUI backend

    spectra = [magnitudes(signal, rate) for signal in signals]
    loudest = max((float(s.max()) for s in spectra if s.size), default=0.0) or 1.0
    figure = Figure(figsize=SIZE_INCHES, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0, 0, 1, 1))
    mesh, shape = None, None
    for spectrum, path in zip(spectra, paths):
        decibels = librosa.amplitude_to_db(spectrum, ref=loudest, top_db=None)
        if decibels.shape != shape:  # specshow lays out the axes; later images of that size only swap the values
            axes.clear()
            axes.set_axis_off()
            n_fft = 2 * (spectrum.shape[0] - 1)
            mesh = librosa.display.specshow(decibels, sr=rate, n_fft=n_fft, hop_length=n_fft, ax=axes,
                                            vmin=-DYNAMIC_RANGE_DB, vmax=0.0, cmap=COLOURMAP)
            shape = decibels.shape
        else:
            mesh.set_array(decibels.ravel())
        save_png(figure, path)


def save_png(figure, path: Path) -> None:
    """An indexed PNG of ``COLOURS`` colours (steps of about 1.3 dB over the
    80 dB range): a quarter of the size of matplotlib's RGBA file."""
    from PIL import Image  # matplotlib's own dependency

    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba())[..., :3]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).quantize(COLOURS).save(path, optimize=True)
