"""Fixtures of the condition tests."""
from __future__ import annotations

import numpy as np
import pytest

from nsbench.builtin.conditions import codecs

from tests.helpers.conditions import RATE


@pytest.fixture(scope="module")
def speech_like() -> np.ndarray:
    # Another seed than the probe the delays are measured on: the test
    # signal is not the one the alignment was fitted to. A steady tone would
    # not do: a speech codec's waveform matches a periodic signal at several lags.
    return codecs.probe_signal(RATE, seed=5, seconds=3.0)
