"""Progress of one engine's clips, on stderr (stdout is the summary's).

On a terminal: a tqdm bar (clips done of planned, clips/s, ETA). Elsewhere (a
log file, CI, a pipe) a bar's carriage returns would make one unreadable line,
so plain lines are printed instead, at most one per ``PLAIN_INTERVAL`` seconds,
and one when the engine is done. tqdm is imported only for a bar (~35 ms of
start-up otherwise spent by every quiet or logged run).
"""
from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, TextIO

PLAIN_INTERVAL = 10.0  # seconds between plain lines: often enough to see it move, rare enough to read a log


class PlainProgress:
    """tqdm's ``update``/``close`` interface, printing whole lines."""

    def __init__(self, total: int, name: str, stream: TextIO, interval: float = PLAIN_INTERVAL,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.name, self.stream, self.interval, self.clock = total, name, stream, interval, clock
        self.done = 0
        self.started = self.last_line = clock()
        self.closed = False

    def update(self, count: int = 1) -> None:
        self.done += count
        if self.clock() - self.last_line >= self.interval and self.done < self.total:
            self.line()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.line()

    def line(self) -> None:
        self.last_line = now = self.clock()
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else math.nan
        if self.done >= self.total:
            tail = f"done in {elapsed:.1f} s"
        else:
            eta = (self.total - self.done) / rate if rate > 0 else math.nan
            tail = f"ETA {eta:.0f} s" if math.isfinite(eta) else "ETA unknown"
        speed = f"{rate:.2f} clips/s" if math.isfinite(rate) else "– clips/s"
        print(f"nsbench: {self.name}: {self.done}/{self.total} clips, {speed}, {tail}", file=self.stream, flush=True)


class NoProgress:
    """``--quiet``: the interface, and nothing shown."""

    def update(self, count: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def engine_progress(total: int, name: str, quiet: bool, stream: TextIO | None = None) -> Any:
    """A bar on a terminal, plain lines elsewhere, nothing with ``--quiet``."""
    stream = stream or sys.stderr
    if quiet:
        return NoProgress()
    if stream.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=name, unit="clip", file=stream, dynamic_ncols=True)
    return PlainProgress(total, name, stream)


def say(message: str) -> None:
    """A line on stderr that does not break a bar being drawn (tqdm.write when
    a bar may be on screen)."""
    if "tqdm" in sys.modules:
        sys.modules["tqdm"].tqdm.write(message, file=sys.stderr)
    else:
        print(message, file=sys.stderr)
