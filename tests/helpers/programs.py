"""Programs a test writes to pass as an engine's program (--rnnoise-demo-path)."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from tests.helpers.paths import REPO_ROOT


def shell_program(folder: Path, name: str, body: str) -> Path:
    """A shell script to pass as --rnnoise-demo-path."""
    path = folder / name
    path.write_text(f"#!/bin/sh\nexport PYTHONPATH={shlex.quote(str(REPO_ROOT))}\n{body}\n")
    path.chmod(0o755)
    return path


def python_program(folder: Path, name: str, target: str, before: str = "") -> Path:
    """Runs ``python target IN OUT`` (target: a script path or ``-m module``), after ``before``."""
    return shell_program(folder, name, f'{before}\nexec {shlex.quote(sys.executable)} {target} "$@"')
