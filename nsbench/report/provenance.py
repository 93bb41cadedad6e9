"""What a result file records about how it was made, so it can be trusted later."""
from __future__ import annotations

import datetime
import importlib.metadata
import platform
import subprocess
import sys
from typing import Any, Iterable

from nsbench.builtin import INSTALLED, REPO_ROOT

# Packages whose versions can change a number in a result file.
CORE_PACKAGES = ("numpy", "scipy", "soundfile", "soxr", "pystoi", "pluggy", "psutil")


def package_versions(names: Iterable[str]) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_commit() -> str:
    """HEAD of the nsbench checkout, with "+dirty" when files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()

    if INSTALLED:  # site-packages may sit inside some other project's checkout
        return "unknown (installed, not a git checkout)"
    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown (git not available)"
    if not commit:
        return "unknown (not a git checkout)"
    return commit + ("+dirty" if dirty else "")


# Flags whose values must never reach a result file (shared, committed, published).
SECRET_FLAG_WORDS = ("key", "token", "password", "secret")


def redacted(argv: list[str]) -> list[str]:
    """The command line with secret values (``--picovoice-access-key K``) masked."""
    def secret(flag: str) -> bool:
        return flag.startswith("--") and any(word in flag.lower() for word in SECRET_FLAG_WORDS)

    shown: list[str] = []
    for index, arg in enumerate(argv):
        flag, equals, _ = arg.partition("=")
        if equals and secret(flag):
            shown.append(f"{flag}=***")
        elif index > 0 and secret(argv[index - 1]) and "=" not in argv[index - 1]:
            shown.append("***")
        else:
            shown.append(arg)
    return shown


def collect(argv: list[str], extra_packages: Iterable[str] = ()) -> dict[str, Any]:
    from nsbench.version import __version__

    return {
        "nsbench_version": __version__,
        "command_line": [sys.argv[0], *redacted(argv)],
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions([*CORE_PACKAGES, *extra_packages]),
        "time_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
