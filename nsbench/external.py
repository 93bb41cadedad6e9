"""Running other people's programs: never through a shell, always with a
timeout, in a private temporary folder that is removed afterwards."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from nsbench.plugins.errors import ClipError, UserError

STDERR_TAIL_CHARS = 400


def run_program(argv: Sequence[str], timeout: float, cwd: str | Path | None = None) -> None:
    """Run ``argv`` to completion. A non-zero exit, a signal or a timeout raises
    ClipError with the tail of stderr; a hung program is killed, not left behind."""
    try:
        completed = subprocess.run(
            list(argv), cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as error:
        # subprocess.run kills the child and waits for it before raising.
        raise ClipError(f"{Path(argv[0]).name} timed out after {timeout:g} s and was killed") from error
    except OSError as error:
        raise ClipError(f"cannot run {argv[0]}: {error}") from error
    if completed.returncode != 0:
        how = f"signal {-completed.returncode}" if completed.returncode < 0 else f"exit code {completed.returncode}"
        tail = completed.stderr.decode(errors="replace").strip()[-STDERR_TAIL_CHARS:]
        raise ClipError(f"{Path(argv[0]).name} failed ({how}){': ' + tail if tail else ''}")


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
