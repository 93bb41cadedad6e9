"""Runs benchmark.py's main in this process and prints its peak RSS as JSON:
``whole`` (VmHWM at the end: the run's peak, report included) and ``clips``
(the peak while engines ran their clips, each engine's summary left out).

    python -m tests.helpers.peak_rss_run [benchmark flags]

The clip loop's peak is exact, not polled: just before each engine's
summary (nsbench.session.engine_turn.summarise_engine) VmHWM is read, and just
after it the kernel's peak is reset to the current RSS (/proc/self/clear_refs,
"5"), so the next engine's clips start from there (the heap the summary
freed trimmed first: glibc, Linux). Used by
tests/run/test_memory_growth.py and bench/bench_throughput.py.
"""
from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

from nsbench.cli import main
from nsbench.session import engine_turn

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def peak_bytes() -> int:
    line = next(line for line in STATUS.read_text().splitlines() if line.startswith("VmHWM"))
    return int(line.split()[1]) * 1024


def measuring_clip_loops(clip_peaks: list[int], other_peaks: list[int]):
    summarise = engine_turn.summarise_engine

    def summarise_and_reset(*args, **kwargs):
        clip_peaks.append(peak_bytes())
        try:
            return summarise(*args, **kwargs)
        finally:
            other_peaks.append(peak_bytes())  # the summary's, before the reset forgets it
            # The summary's freed arrays stay on the heap (nsbench.run.malloc_tuning
            # keeps up to 128 MB): returned first, so they do not count as the next clips'.
            ctypes.CDLL(None).malloc_trim(0)
            CLEAR_REFS.write_text("5")  # VmHWM := VmRSS now

    return summarise_and_reset


def measure(argv: list[str]) -> tuple[int, dict[str, int]]:
    """main's exit code, and the peaks in bytes ("clips", "whole") with the
    number of engines whose clips were measured."""
    clip_peaks: list[int] = []
    other_peaks: list[int] = []
    engine_turn.summarise_engine = measuring_clip_loops(clip_peaks, other_peaks)
    code = main(argv)
    whole = max([*clip_peaks, *other_peaks, peak_bytes()])
    return code, {"clips": max(clip_peaks, default=0), "engines": len(clip_peaks), "whole": whole}


if __name__ == "__main__":
    exit_code, figures = measure(sys.argv[1:])
    print(json.dumps(figures))
    sys.exit(exit_code)
