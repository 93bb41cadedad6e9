"""Time alignment: how late an output is against a reference, by cross-correlation.

Used to estimate an engine's delay (rnnoise with a user's binary) and to check
that, after compensation, an engine's output is sample-aligned with the clean
speech. A one-frame latency makes a perfect output look broken, so this check
runs wherever a delay is declared or measured.
"""
from __future__ import annotations

import numpy as np
from scipy.signal import correlate

# Search window: ±100 ms covers every engine we know (DFN3: 30 ms) while
# keeping periodic signals from matching a far-away period.
DEFAULT_MAX_LAG_SECONDS = 0.1
# Below this normalised peak the two signals share too little to align.
MIN_CORRELATION = 0.1


def estimate_lag(output: np.ndarray, reference: np.ndarray, max_lag: int) -> int | None:
    """Samples by which ``output`` lags ``reference`` (negative: it leads).

    The peak of |cross-correlation| within ±``max_lag``. Returns None when either
    signal is silent or the normalised peak is under MIN_CORRELATION, so noise
    is never reported as a lag.
    """
    length = min(len(output), len(reference))
    out = np.asarray(output[:length], dtype=np.float64)
    ref = np.asarray(reference[:length], dtype=np.float64)
    norm = np.sqrt(np.dot(out, out) * np.dot(ref, ref))
    if length == 0 or norm == 0:
        return None
    full = correlate(out, ref, mode="full", method="fft")  # index length-1 is lag 0
    centre = length - 1
    window = np.abs(full[max(0, centre - max_lag) : centre + max_lag + 1])
    peak = int(np.argmax(window))
    if window[peak] / norm < MIN_CORRELATION:
        return None
    return peak - min(max_lag, centre)
