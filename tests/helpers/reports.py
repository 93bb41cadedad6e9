"""Running the CLI inside a test and reading what it wrote: its exit code and
output, and a section of report.md."""
from __future__ import annotations

import contextlib
import io


def run_cli(argv: list[str], plugins: tuple[object, ...] = ()) -> tuple[int, str, str]:
    """nsbench's exit code, stdout and stderr for ``argv`` (``plugins``: registered for this call, nsbench.cli.main)."""
    from nsbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv, plugins=plugins)
    return code, out.getvalue(), err.getvalue()


def section(report: str, title: str) -> str:
    """The text of report.md's section ``## title`` (empty if there is none)."""
    _, found, rest = report.partition(f"## {title}\n")
    return rest.split("\n## ")[0] if found else ""


def engine_result_files(folder) -> list:
    """The ``<engine>.json`` files of a results folder, sorted: not the run's own
    (ranking.json, agreement.json and the rest of nsbench.report.model.RUN_FILE_STEMS)."""
    from nsbench.report.model import RUN_FILE_STEMS

    return sorted(path for path in folder.glob("*.json") if path.stem not in RUN_FILE_STEMS)
