"""The listening grid's spectrograms (nsbench.report.spectrograms)."""
from __future__ import annotations

import pytest


def test_a_row_of_spectrograms_shares_one_colour_scale(tmp_path):
    """A quieter copy of a signal is darker beside it, and on its own row
    looks like the loud one: the scale is the row's, not each image's."""
    import numpy as np
    from PIL import Image

    from nsbench.report.spectrograms import draw_row
    from tests.helpers.audio import tone_and_noise

    clean, noise = tone_and_noise(0)
    loud = clean + noise
    draw_row([loud, 0.1 * loud], 16000, [tmp_path / "loud.png", tmp_path / "quiet.png"])
    draw_row([0.1 * loud], 16000, [tmp_path / "alone.png"])

    def brightness(name: str) -> float:
        image = Image.open(tmp_path / name)
        assert image.size == (240, 120)
        return float(np.asarray(image.convert("L"), dtype=np.float64).mean())

    assert brightness("quiet.png") < brightness("loud.png") - 20
    assert brightness("alone.png") == pytest.approx(brightness("loud.png"), abs=2)


RATES = [16000, 48000]


def speech_like(rate: int):
    """A second of a gliding tone in noise, with a silent stretch (bins at the floor)."""
    import numpy as np

    rng = np.random.default_rng(rate)
    t = np.arange(rate) / rate
    signal = 0.5 * np.sin(2 * np.pi * (300 + 900 * t) * t) + 0.01 * rng.standard_normal(rate)
    signal[rate // 2: rate // 2 + rate // 8] = 0.0
    return signal.astype(np.float32)


@pytest.mark.parametrize("rate", RATES)
def test_magnitudes_are_librosas_stft(rate):
    """The numpy STFT against librosa's default one (centred, zero padding,
    periodic Hann), within float32 rounding: the window's last bits differ."""
    import librosa
    import numpy as np

    from nsbench.report.spectrograms import N_FFT, magnitudes

    signal = speech_like(rate)
    n_fft = N_FFT * rate // 16000
    ours, theirs = magnitudes(signal, rate), np.abs(librosa.stft(signal, n_fft=n_fft, hop_length=n_fft))
    assert ours.dtype == theirs.dtype == np.float32 and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6 * float(theirs.max()))


def test_decibels_are_librosas_amplitude_to_db():
    """Float32 in, float32 out, the same dB within rounding, and the same floor
    (-100 dB below the reference) for silent bins."""
    import librosa
    import numpy as np

    from nsbench.report.spectrograms import decibels, magnitudes

    spectrum = magnitudes(speech_like(16000), 16000)
    spectrum[:, :3] = 0.0
    loudest = float(spectrum.max())
    ours, theirs = decibels(spectrum, loudest), librosa.amplitude_to_db(spectrum, ref=loudest, top_db=None)
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4)
    assert ours[:, :3].max() == pytest.approx(-100.0 - 20 * np.log10(loudest), abs=1e-3)


def test_the_picture_is_specshows(tmp_path):
    """The same values drawn by mesh_of and by librosa.display.specshow (with
    the options the grid used) give the very same pixels."""
    import librosa.display
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from nsbench.report import spectrograms

    spectrum = spectrograms.magnitudes(speech_like(16000), 16000)
    values = spectrograms.decibels(spectrum, float(spectrum.max()))

    def pixels(draw) -> np.ndarray:
        figure = Figure(figsize=spectrograms.SIZE_INCHES, dpi=spectrograms.DPI)
        FigureCanvasAgg(figure)
        axes = figure.add_axes((0, 0, 1, 1))
        axes.set_axis_off()
        draw(axes)
        figure.canvas.draw()
        return np.asarray(figure.canvas.buffer_rgba()).copy()

    ours = pixels(lambda axes: spectrograms.mesh_of(axes, values))
    theirs = pixels(lambda axes: librosa.display.specshow(
        values, sr=16000, n_fft=256, hop_length=256, ax=axes, vmin=-spectrograms.DYNAMIC_RANGE_DB, vmax=0.0,
        cmap=spectrograms.COLOURMAP))
    assert ours.shape == (120, 240, 4)
    assert np.array_equal(ours, theirs)
    assert len(np.unique(ours.reshape(-1, 4), axis=0)) > 20  # a picture, not a blank
