"""Running a program: engines that call an executable, once per clip or as a server.

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.external import run_program, start_program, end_group, check_executable, PrivateFolder, STDERR_TAIL_CHARS

__all__ = ["run_program", "start_program", "end_group", "check_executable", "PrivateFolder", "STDERR_TAIL_CHARS"]
