"""What the condition tests share: the clips' rate, a plain SNR, a codec FFmpeg lacks."""
from __future__ import annotations

import numpy as np

from nsbench.builtin.conditions import codecs


RATE = 16000


def snr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    reference, estimate = reference.astype(np.float64), estimate.astype(np.float64)
    return float(10 * np.log10(np.sum(reference**2) / np.sum((reference - estimate) ** 2)))


# An encoder no FFmpeg build has: the lookup in the real FFmpeg fails.
ABSENT = codecs.Codec("libnosuchcodec", 8000, 8000, "wav", "s16", "absent")
