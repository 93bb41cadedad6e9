"""Spectrogram PNGs for the listening grid, with numpy and matplotlib.

What librosa's ``stft``, ``amplitude_to_db`` and ``display.specshow`` drew, with
no librosa: its import (numba compiles ``librosa.util`` at import) cost 1.9 s
of CPU a run once numba's cache was warm and 26 s the first run after an
install (bench/bench_spectrograms.py), against 2.5 s for a demo run's ten rows
of images. The magnitudes are
nsbench.audio.spectra's (librosa's default STFT); the decibels are
``amplitude_to_db(S, ref, top_db=None)``'s arithmetic; and the picture is the
``pcolormesh`` that ``specshow`` makes with no axis types (bare bin and frame
numbers). tests/report/test_spectrograms.py compares the three with librosa.
Imported only when a report draws them (not with --no-html).

A row of the grid (one clip: input, reference, every engine's output) shares one
colour scale: decibels relative to the loudest bin of the whole row, so a darker
picture means a quieter output, not a different normalisation.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from nsbench.audio.spectra import centred_magnitudes

# The picture is 120 pixels tall: 129 bins (256 at 16 kHz, 16 ms) fill it, and
# more would only cost drawing time (matplotlib draws every bin of the mesh).
# A hop of one window gives 62 frames a second: 250 columns for 4 seconds.
N_FFT = 256
DYNAMIC_RANGE_DB = 80.0  # below the row's loudest bin, drawn as the darkest colour
SIZE_INCHES, DPI = (2.4, 1.2), 100  # 240 x 120 pixels: a few KB to tens of KB each
COLOURMAP = "magma"
COLOURS = 64  # in the PNG's palette
AMIN = 1e-5  # amplitude_to_db's floor: -100 dB


def magnitudes(audio: np.ndarray, rate: int) -> np.ndarray:
    """(bins, frames) |STFT| of a mono signal (several sources are summed: what one hears)."""
    mono = np.asarray(audio, dtype=np.float32)
    if mono.ndim > 1:
        mono = mono.sum(axis=0)
    n_fft = N_FFT * max(1, round(rate / 16000))  # the same 16 ms window at any rate
    return centred_magnitudes(mono, n_fft, n_fft).T.astype(np.float32)  # float32, as librosa returns it


def decibels(spectrum: np.ndarray, loudest: float) -> np.ndarray:
    """``librosa.amplitude_to_db(spectrum, ref=loudest, top_db=None)``, step for
    step: the power in dB relative to ``loudest`` squared, floored at AMIN squared."""
    values = 10.0 * np.log10(np.maximum(AMIN**2, np.square(spectrum)))
    values -= 10.0 * np.log10(max(AMIN**2, loudest**2))  # in place: float32 stays float32
    return values


def draw_row(signals: Sequence[np.ndarray], rate: int, paths: Sequence[Path]) -> None:
    """One PNG per signal, on the colour scale of the whole row."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no GUI backend

    spectra = [magnitudes(signal, rate) for signal in signals]
    loudest = max((float(s.max()) for s in spectra if s.size), default=0.0) or 1.0
    figure = Figure(figsize=SIZE_INCHES, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0, 0, 1, 1))
    mesh, shape = None, None
    for spectrum, path in zip(spectra, paths):
        values = decibels(spectrum, loudest)
        if values.shape != shape:  # a new mesh lays out the axes; later images of that size only swap the values
            axes.clear()
            axes.set_axis_off()
            mesh = mesh_of(axes, values)
            shape = values.shape
        else:
            mesh.set_array(values.ravel())
        save_png(figure, path)


def mesh_of(axes, values: np.ndarray):
    """``librosa.display.specshow(values, vmin, vmax, cmap)``'s mesh with no
    axis types: cells centred on bin and frame numbers."""
    rows, columns = values.shape
    return axes.pcolormesh(np.arange(columns), np.arange(rows), values, cmap=COLOURMAP, vmin=-DYNAMIC_RANGE_DB,
                           vmax=0.0, rasterized=True, edgecolors="None", shading="auto")


def save_png(figure, path: Path) -> None:
    """An indexed PNG of ``COLOURS`` colours (steps of about 1.3 dB over the
    80 dB range): a quarter of the size of matplotlib's RGBA file."""
    from PIL import Image  # matplotlib's own dependency

    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba())[..., :3]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).quantize(COLOURS).save(path, optimize=True)
