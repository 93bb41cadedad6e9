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
