"""Stopping a run on SIGINT or SIGTERM without losing what is done.

While the CLI runs, both signals raise ``Interrupted`` in the main thread. It
is a BaseException, like KeyboardInterrupt, so an engine's or a dataset's
``except Exception`` cannot swallow it, while every ``finally`` on the way up
runs: the engine is closed (its program killed, its private folder removed),
the clip log is closed, worker processes are stopped, and the CLI writes what
it has. A second signal during that ends the process at once.

Without these handlers SIGTERM would end the process on the spot: no
``finally`` would run, a command engine's program would be left running and
its temporary folder left behind.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """The run was stopped by a signal; ``exit_code`` is 128 + its number, as shells report it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def as_interrupted(error: BaseException) -> Interrupted:
    """KeyboardInterrupt (Python's own SIGINT handler, where ours is not installed) is a SIGINT."""
    return error if isinstance(error, Interrupted) else Interrupted(signal.SIGINT)


def raise_interrupted(signum: int, frame: object) -> None:
    for number in SIGNALS:  # the next signal ends the process at once
        signal.signal(number, signal.SIG_DFL)
    raise Interrupted(signum)


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise Interrupted; the previous
    handlers come back afterwards. Signal handlers can only be set from the
    main thread: elsewhere nothing changes (Ctrl-C still raises KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, raise_interrupted) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (a clip's record goes to
    the list and to the .clips.jsonl together, or to neither)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
