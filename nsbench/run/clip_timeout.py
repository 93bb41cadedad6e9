"""Every clip's bound (``--clip-timeout``): a clip that hangs, in Python or
in an engine's native code, fails with "timed out after N s", and the run
goes on with the next clip on a fresh worker process.

A timer in the process running the engine cannot stop native code (a Python
signal handler runs only between bytecodes), so the bound holds where the
clip runs in a worker process that the parent can kill
(nsbench.run.executors; under ``--jobs 1`` engines then run in one worker).
Each worker writes, in memory shared with the parent, the clip it is on and
that clip's deadline; the parent, waiting for results, kills a worker past
its deadline (its whole process group).

The bound covers what the clip takes in its worker: reading it, the engine
(built on the worker's first clip), scoring. It is ``--clip-timeout`` seconds,
or LENGTH_FACTOR times the clip's length if that is longer. A 60-second clip's
whole work with the slowest built-in engine (deepfilternet) and every default
metric took 9.9 s on a 2-core machine, 0.17 s per second of audio: the default
leaves some 60 times that, so it flags what is stuck, even on an hour-long file.
"""
from __future__ import annotations

import ctypes
import os
import time
from multiprocessing.context import BaseContext

from nsbench.external import kill_with_programs

# Ten minutes: a hang is said within the time a user would wait before
# wondering; a ten-second clip that legitimately takes longer needs a model
# 60 times slower than real time.
DEFAULT_SECONDS = 600.0
# A clip may take this many times its length if that is more: a long file
# (an hour-long recording) is not "stuck" because it is long.
LENGTH_FACTOR = 10.0
# While no clip is near its deadline, the parent looks this often, for clips
# started since it last looked.
LOOK_SECONDS = 1.0

# Per worker: its pid, the index of the clip it runs, the clip's deadline
# (time.monotonic(): CLOCK_MONOTONIC, one clock for every process of the
# machine; 0 while it runs none) and the clip's bound in seconds.
FIELDS = 4
PID, INDEX, DEADLINE, BOUND = range(FIELDS)


def bound_for(seconds: float, duration: float) -> float:
    return max(seconds, LENGTH_FACTOR * duration)


class Deadlines:
    """The workers' deadlines, shared by fork between a pool's parent and its workers."""

    def __init__(self, workers: int, seconds: float, context: BaseContext):
        self.seconds = seconds
        self._slots = context.RawArray(ctypes.c_double, FIELDS * workers)
        self._taken = context.Value(ctypes.c_int, 0)
        self._slot = -1  # in a worker: its own
        self._started = 0.0
        self.killed: tuple[int, float] | None = None  # in the parent: (the clip's index, its bound)

    # ------------------------------------------------------------ in a worker

    def join(self) -> None:
        """Takes this worker's slot (a pool starts as many workers as slots)."""
        with self._taken.get_lock():
            self._slot, self._taken.value = self._taken.value, self._taken.value + 1
        self._write(PID, os.getpid())

    def start(self, index: int) -> None:
        self._started = time.monotonic()
        self._write(INDEX, index)
        self._set_bound(self.seconds)

    def loaded(self, duration: float) -> None:
        self._set_bound(bound_for(self.seconds, duration))

    def finish(self) -> None:
        self._write(DEADLINE, 0.0)

    def _set_bound(self, bound: float) -> None:
        self._write(BOUND, bound)
        self._write(DEADLINE, self._started + bound)

    def _write(self, field: int, value: float) -> None:
        if 0 <= self._slot < len(self._slots) // FIELDS:
            self._slots[FIELDS * self._slot + field] = value

    # ------------------------------------------------------------ in the parent

    def wait_seconds(self) -> float:
        """How long the parent may wait before a deadline passes."""
        deadlines = [self._slots[start + DEADLINE] for start in range(0, len(self._slots), FIELDS)]
        soonest = min((deadline for deadline in deadlines if deadline), default=time.monotonic() + LOOK_SECONDS)
        return min(max(soonest - time.monotonic(), 0.01), LOOK_SECONDS)

    def kill_overdue(self) -> None:
        """Kills a worker past its deadline, and every program it runs (its
        process group); the pool then breaks, and ``killed`` says which clip."""
        now = time.monotonic()
        for start in range(0, len(self._slots), FIELDS):
            deadline = self._slots[start + DEADLINE]
            if deadline and deadline < now and self.killed is None:
                self.killed = int(self._slots[start + INDEX]), self._slots[start + BOUND]
                self._slots[start + DEADLINE] = 0.0
                kill_worker(int(self._slots[start + PID]))


def kill_worker(pid: int) -> None:
    if pid <= 0:  # never a process group of 0: this very process's
        return
    kill_with_programs(pid)  # the worker, its group, and the programs it runs in groups of their own


# This worker process's deadlines (set by nsbench.run.executors.start_worker);
# None in the parent, where clips run unbounded.
current: Deadlines | None = None


def loaded(duration: float) -> None:
    """The clip being run is ``duration`` seconds long: its bound, in a worker."""
    if current is not None:
        current.loaded(duration)
