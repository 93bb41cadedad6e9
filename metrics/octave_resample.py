"""pystoi's resampler, ``pystoi.utils.resample_oct(x, p, q)``, without scipy.signal.

pystoi resamples every clip to 10 kHz with an Octave-style Kaiser-windowed
sinc filter applied by ``scipy.signal.resample_poly``. Importing scipy.signal
costs 1.0-1.4 s of CPU on this machine (scipy 1.17 parses thousands of
docstrings and pulls in scipy.stats), more than scoring a whole short run.
So the common rates (8, 16, 24, 32 and 48 kHz: filters of at most
``MAX_FAST_TAPS`` taps) are resampled here in numpy, with the same bits:

* the filter is pystoi's ``_resample_window_oct``, the same expressions in the
  same order (so the same float64 taps), divided by its sum;
* ``resample_poly`` scales it by ``up``, pads it so the output samples sit at
  its centre, and hands it to ``upfirdn``, whose C loop computes each output
  sample as ``out = 0.0; out = out + x[i] * h[j]`` over its polyphase taps in
  increasing input index, with zeros beyond the signal's ends. Below, the
  outputs that share a phase form strided runs, and each tap is one whole-array
  ``acc += x_run * tap``: the same products, added in the same order, each
  rounded once (no fused multiply-add, as in scipy's generic x86-64 build).

tests/metrics/test_octave_resample.py compares the output with pystoi's own
``resample_oct`` bit for bit. Other rates (44.1 kHz and its kin need filters
of ~32,000 taps, where one numpy call per tap would be slower than scipy) go
through pystoi's own call, ``resample_poly``, and pay the import.
"""
from __future__ import annotations

import functools
import math

import numpy as np

# Taps beyond which scipy's C loop is faster than a numpy call per tap (and
# where the 44.1 kHz family's ~32,000-tap filters land).
MAX_FAST_TAPS = 4096
# Outputs computed at a time (13 s at 10 kHz): a long clip's copies stay this
# size, not the clip's, and a short clip is one block.
BLOCK_OUTPUTS = 2**17


def resample_oct(x: np.ndarray, p: int, q: int) -> np.ndarray:
    """``pystoi.utils.resample_oct(x, p, q)`` for a 1-D float64 ``x``: ``x`` at
    ``p / q`` times its rate, the same bits."""
    up, down = _reduced(p, q)
    if up == down == 1:
        return np.array(x, copy=True)
    taps = _filter(p, q)
    if len(taps) > MAX_FAST_TAPS:
        from scipy.signal import resample_poly  # ~1 s to import: only for these rates

        return resample_poly(x, p, q, window=taps)  # pystoi's own call
    return _polyphase(np.asarray(x, dtype=np.float64), taps, up, down)


def _reduced(p: int, q: int) -> tuple[int, int]:
    gcd = math.gcd(p, q)
    return p // gcd, q // gcd


@functools.lru_cache(maxsize=16)
def _filter(p: int, q: int) -> np.ndarray:
    """pystoi's window normalised to unit sum, as ``resample_oct`` passes it to
    ``resample_poly``; read-only, as it is shared."""
    window = _resample_window_oct(p, q)
    taps = window / np.sum(window)
    taps.flags.writeable = False
    return taps


def _resample_window_oct(p, q):
    """pystoi.utils._resample_window_oct, expression for expression (its
    ``p /= gcd`` makes the ratio float64, and so the taps' last bits)."""
    gcd = np.gcd(p, q)
    if gcd > 1:
        p /= gcd
        q /= gcd
    log10_rejection = -3.0
    stopband_cutoff_f = 1.0 / (2 * max(p, q))
    roll_off_width = stopband_cutoff_f / 10
    rejection_db = -20 * log10_rejection
    length = np.ceil((rejection_db - 8) / (28.714 * roll_off_width))
    t = np.arange(-length, length + 1)
    ideal_filter = 2 * p * stopband_cutoff_f * np.sinc(2 * stopband_cutoff_f * t)
    if (rejection_db >= 21) and (rejection_db <= 50):
        beta = 0.5842 * (rejection_db - 21) ** 0.4 + 0.07886 * (rejection_db - 21)
    elif rejection_db > 50:
        beta = 0.1102 * (rejection_db - 8.7)
    else:
        beta = 0.0
    return np.kaiser(2 * length + 1, beta) * ideal_filter


def _polyphase(x: np.ndarray, taps: np.ndarray, up: int, down: int) -> np.ndarray:
    """``scipy.signal.resample_poly(x, up, down, window=taps)`` (see the module
    docstring): ``up`` and ``down`` already reduced."""
    half_len = (len(taps) - 1) // 2
    h = taps * up
    pre_pad = down - half_len % down
    pre_remove = (half_len + pre_pad) // down
    n_out = -(-len(x) * up // down)
    post_pad = 0
    while _upfirdn_length(len(h) + pre_pad + post_pad, len(x), up, down) < n_out + pre_remove:
        post_pad += 1
    h = np.concatenate([np.zeros(pre_pad), h, np.zeros(post_pad)])
    # upfirdn's phases: phase t holds h[t], h[t + up], ..., zero-padded to a
    # whole number of taps per phase and reversed, so tap k of output y meets
    # input x[x_idx - taps_per_phase + 1 + k], with x_idx = (y * down) // up.
    h = np.concatenate([h, np.zeros(-len(h) % up)])
    phases = h.reshape(-1, up).T[:, ::-1]
    out = np.empty(n_out)
    for first in range(0, n_out, BLOCK_OUTPUTS):
        count = min(BLOCK_OUTPUTS, n_out - first)
        out[first: first + count] = _outputs(x, phases, up, down, pre_remove + first, count)
    return out


def _outputs(x: np.ndarray, phases: np.ndarray, up: int, down: int, first: int, count: int) -> np.ndarray:
    """upfirdn's outputs ``first .. first + count - 1``."""
    per_phase = phases.shape[1]
    # The inputs they reach, as indices into x zero-padded by per_phase - 1 in front.
    low = (first * down) // up
    high = ((first + count - 1) * down) // up + per_phase
    reach = np.zeros(high - low)
    start, stop = max(low - per_phase + 1, 0), min(high - per_phase + 1, len(x))
    if stop > start:
        reach[start + per_phase - 1 - low: stop + per_phase - 1 - low] = x[start:stop]
    # Outputs y = y0 + up * m share the phase (y0 * down) % up, and their
    # inputs advance by ``down`` per m: one run of inputs per tap, read from
    # ``reach`` split into its ``down`` interleaved parts (contiguous runs).
    parts = [np.ascontiguousarray(reach[j::down]) for j in range(down)]
    out = np.empty(count)
    for offset in range(min(up, count)):
        y0 = first + offset
        base = (y0 * down) // up - low
        runs = len(range(offset, count, up))
        acc, product = np.zeros(runs), np.empty(runs)
        for k, tap in enumerate(phases[(y0 * down) % up]):
            part, index = parts[(base + k) % down], (base + k) // down
            # acc += x_run * tap, the product into a buffer reused: no allocation per tap.
            np.multiply(part[index: index + runs], tap, out=product)
            acc += product
        out[offset::up] = acc
    return out


def _upfirdn_length(taps: int, length: int, up: int, down: int) -> int:
    """scipy.signal._upfirdn._output_len."""
    in_len = length + (taps + (-taps % up)) // up - 1
    total = in_len * up
    return total // down + bool(total % down)
