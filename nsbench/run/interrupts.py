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

Some steps must finish once begun: an engine's summary (an interrupt there
lost the engine), the report, the fork of worker processes (Python runs its
at-fork hooks there, and swallows what they raise: an interrupt raised in one
was lost). Within ``held`` a first signal is kept and raised as the step ends.
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
    global _held
    for number in SIGNALS:  # the next signal ends the process at once
        signal.signal(number, signal.SIG_DFL)
    if _holding:
        _held = Interrupted(signum)
        return
    raise Interrupted(signum)


# How many ``held`` blocks the main thread is in, and the signal kept meanwhile.
_holding = 0
_held: Interrupted | None = None


@contextmanager
def held() -> Iterator[None]:
    """A first SIGINT or SIGTERM within the block is raised when the block
    ends, not inside it; a second still ends the process at once (unlike
    ``deferred``, meant for longer steps: a summary, the report, a fork)."""
    global _holding, _held
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if not _holding and _held is not None:
            error, _held = _held, None
            raise error


def not_from_a_signal() -> tuple[type[BaseException], ...]:
    """(KeyboardInterrupt,) where no signal raises it, so that an engine
    raising it has failed rather than been stopped by the user: everywhere but
    in the main thread under Python's own SIGINT handler (nsbench's raises
    Interrupted; a worker process ignores SIGINT, the parent decides)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        return ()
    return (KeyboardInterrupt,)


def ignore_signal(signum: int, frame: object) -> None:
    """A worker's SIGINT handler: the parent decides. A Python handler rather
    than SIG_IGN, which the programs an engine runs would inherit."""


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise Interrupted; the previous
    handlers come back afterwards. Signal handlers can only be set from the
    main thread: elsewhere nothing changes (Ctrl-C still raises KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _held
    previous = {number: signal.signal(number, raise_interrupted) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _held = None


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
