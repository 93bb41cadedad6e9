"""Running other people's programs: never through a shell, always with a
timeout, in a private temporary folder that is removed afterwards.

Each program starts in a session of its own (its own process group, no
terminal), so ending it ends all it started: on a timeout, an interrupt or
its exit, whatever is left of its group gets SIGTERM, then SIGKILL after
GRACE_SECONDS. A Ctrl-C at the terminal therefore reaches nsbench alone, and
its interrupt (nsbench.run.interrupts) ends the programs on its way out; a
worker process is killed with its programs' groups (``kill_with_programs``).
"""
from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Iterator, Sequence

import psutil

from nsbench.plugins.errors import ClipError, UserError

STDERR_TAIL_CHARS = 400
# Of each output stream only the end is kept, for the error message: a program
# that prints without end costs no memory.
TAIL_BYTES = 64 * 1024
# After SIGTERM, how long a program's group has to exit before SIGKILL.
GRACE_SECONDS = 0.5
# How often a program is looked at, where no pidfd says when it exits.
EXIT_POLL_SECONDS = 0.02
# The signals that interrupt a run (nsbench.run.interrupts).
INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
# Reads of TAIL_BYTES that empty a full pipe (1 MiB: Linux's pipe-max-size).
PIPE_READS = 16


def run_program(argv: Sequence[str], timeout: float, cwd: str | Path | None = None) -> None:
    """Run ``argv`` to completion. A non-zero exit, a signal or a timeout raises
    ClipError with the tail of stderr; a hung program is killed, not left
    behind, and so is whatever it started."""
    try:
        process = start_program(argv, cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as error:
        raise ClipError(f"cannot run {argv[0]}: {error}") from error
    try:
        tails = output_until_exit(process, time.monotonic() + timeout)
    finally:
        end_group(process)
        close_pipes(process)
    if tails is None:
        raise ClipError(f"{Path(argv[0]).name} timed out after {timeout:g} s and was killed")
    if process.returncode != 0:
        how = f"signal {-process.returncode}" if process.returncode < 0 else f"exit code {process.returncode}"
        tail = bytes(tails[1]).decode(errors="replace").strip()[-STDERR_TAIL_CHARS:]
        raise ClipError(f"{Path(argv[0]).name} failed ({how}){': ' + tail if tail else ''}")


def start_program(argv: Sequence[str], cwd: str | Path | None, **streams: int | IO) -> subprocess.Popen:
    """``argv`` started in a session of its own (see the module's docstring).
    A SIGINT or SIGTERM while it starts waits until it has started, then
    ends it and goes on to the handler that was there: raised inside
    Popen, it would leave the program running with no one to end it."""
    noted: list[int] = []
    process = None
    try:
        with signals_noted(noted):
            process = subprocess.Popen(list(argv), cwd=cwd, start_new_session=True, **streams)
    finally:
        if noted and process is not None:
            end_group(process)
            close_pipes(process)
        if noted:
            signal.raise_signal(noted[0])
    return process


@contextlib.contextmanager
def signals_noted(noted: list[int]) -> Iterator[None]:
    """Within the block SIGINT and SIGTERM are only added to ``noted``; the
    handlers come back after. Handlers are the main thread's: elsewhere
    (where no handler runs anyway) nothing changes."""
    # A handler not set from Python (None) could not be put back.
    if threading.current_thread() is not threading.main_thread() or None in map(signal.getsignal, INTERRUPTS):
        yield
        return
    previous = {number: signal.signal(number, lambda number, frame: noted.append(number)) for number in INTERRUPTS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def close_pipes(process: subprocess.Popen) -> None:
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def output_until_exit(process: subprocess.Popen, deadline: float) -> tuple[bytearray, bytearray] | None:
    """The tails of the program's stdout and stderr once it has exited; None
    if the deadline came first. It is the program that is waited for, not its
    pipes: a child it left running may hold them open."""
    tails = {stream.fileno(): bytearray() for stream in (process.stdout, process.stderr)}
    reading, exited = list(tails), exit_watch(process)
    try:
        while process.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            watched = reading if exited is None else [*reading, exited]
            for fd in select.select(watched, [], [], left if exited is not None else min(left, EXIT_POLL_SECONDS))[0]:
                if fd != exited and not read_into(fd, tails[fd]):
                    reading.remove(fd)
    finally:
        if exited is not None:
            os.close(exited)
    for fd in reading:  # what it wrote just before it exited, and no more than a pipe holds
        for _ in range(PIPE_READS):
            if not (select.select([fd], [], [], 0)[0] and read_into(fd, tails[fd])):
                break
    return tails[process.stdout.fileno()], tails[process.stderr.fileno()]


def exit_watch(process: subprocess.Popen) -> int | None:
    """A descriptor that turns readable when the program exits (Linux's
    pidfd); None where there is none, and the program is polled."""
    try:
        return os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return None


def read_into(fd: int, tail: bytearray) -> bool:
    """Adds what ``fd`` holds to ``tail``, keeping its last TAIL_BYTES; False at end of file."""
    chunk = os.read(fd, TAIL_BYTES)
    tail += chunk
    if len(tail) > 2 * TAIL_BYTES:  # trimmed now and then, not on every read
        del tail[:-TAIL_BYTES]
    return bool(chunk)


def end_group(process: subprocess.Popen) -> None:
    """SIGTERM to what is left of the program's process group, SIGKILL to what
    outlives GRACE_SECONDS (or an interrupt during them); the program reaped."""
    try:
        if signal_group(process.pid, signal.SIGTERM):
            deadline = time.monotonic() + GRACE_SECONDS
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(GRACE_SECONDS)
            while group_alive(process.pid) and time.monotonic() < deadline:
                time.sleep(EXIT_POLL_SECONDS)
    finally:
        signal_group(process.pid, signal.SIGKILL)
        process.kill()  # a program that left its group; nothing once it is reaped
        process.wait()


def signal_group(group: int, number: int) -> bool:
    """Sends the signal to every process of the group; False when none is left."""
    try:
        os.killpg(group, number)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member runs as another user: the others got it
        pass
    return True


def group_alive(group: int) -> bool:
    """Whether a process of the group is still running. A zombie is not: an
    orphan's zombie lingers until init reaps it, and some inits never do."""
    if not signal_group(group, 0):
        return False
    for process in psutil.process_iter(["status"]):
        with contextlib.suppress(OSError, psutil.Error):
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == group:
                return True
    return False


def kill_with_programs(pid: int) -> None:
    """SIGKILL to process ``pid`` (a worker) and its process group, and to
    the groups of the programs it runs (its children that lead one, as
    start_program starts them). Stopped first, so that it starts no program
    while they are found."""
    signal_process_and_group(pid, signal.SIGSTOP)
    programs = program_groups(pid)
    signal_process_and_group(pid, signal.SIGKILL)
    for group in programs:
        signal_group(group, signal.SIGKILL)


def signal_process_and_group(pid: int, number: int) -> None:
    for send in (os.killpg, os.kill):  # os.kill too: a worker not yet in a group of its own
        with contextlib.suppress(ProcessLookupError, PermissionError):
            send(pid, number)


def program_groups(pid: int) -> list[int]:
    """The children of process ``pid`` that lead a process group of their own."""
    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return []
    groups = []
    for child in children:
        with contextlib.suppress(OSError):
            if os.getpgid(child.pid) == child.pid:
                groups.append(child.pid)
    return groups


def check_executable(path: str, flag: str) -> str:
    """The program's full path, or a UserError before any clip runs."""
    found = shutil.which(path) if os.sep not in path else path
    if not found or not Path(found).is_file():
        raise UserError(f"{flag} {path}: no such program")
    if not os.access(found, os.X_OK):
        raise UserError(f"{flag} {path}: not executable")
    return str(Path(found).resolve())


class PrivateFolder:
    """A temporary folder only this process can read, removed by ``close``."""

    def __init__(self, prefix: str):
        self.path = Path(tempfile.mkdtemp(prefix=prefix))  # mkdtemp creates it with mode 0700

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
