"""Freed memory kept in the process for the next clip (glibc only).

Scoring a clip makes many large temporary arrays (a 10-second clip's float64
copies are 1-4 MB). glibc hands out blocks that large with mmap and gives them
back to the system when freed; by default it adapts, but trims the heap's free
top and maps again, so every clip pays fresh pages: on DNS-layout 10-second
pairs ~11,000 page faults a clip, ~40 ms of kernel time in a clip whose scoring
takes ~30 ms of its own. Raising the two thresholds keeps blocks under
``MMAP_THRESHOLD_BYTES`` on the heap and lets up to ``TRIM_THRESHOLD_BYTES``
of freed heap stay for the next clip (bench/bench_equal_job.py shows the
effect). Called once in the parent: forked workers inherit the setting.
Programs an engine runs are exec'd and keep their own.
"""
from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
# Larger blocks (a ~4-minute clip's float64 copy at 16 kHz) are still mapped
# and returned at once, so a long clip's peak does not stay with the process.
MMAP_THRESHOLD_BYTES = 32 * 2**20
TRIM_THRESHOLD_BYTES = 128 * 2**20


def keep_freed_memory() -> bool:
    """Sets the thresholds; False where the C library is not glibc (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library; musl has no mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
