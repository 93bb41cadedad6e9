"""Every command line the README and docs/ print works as printed (issue 37).

The README's quick start and its "Main uses" lines that need no outside data
set are run exactly as printed, in order, from a folder laid out like a
checkout (so a relative path in a line means what it means to a user), with
one cache shared between them as a user's would be. Every other command line
in README.md and docs/ is parsed by nsbench's own argument parser, so a
renamed flag cannot leave a stale example behind.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nsbench.flags import parse_flags
from tests.helpers.paths import REPO_ROOT

PROGRAMS = ("python benchmark.py", "python3 benchmark.py", ".venv/bin/python benchmark.py", "nsbench ")
# The top-level entries a user's checkout has; results/ is left out so each
# test writes its own.
CHECKOUT = ("benchmark.py", "nsbench", "engines", "datasets", "metrics", "conditions", "examples")


def code_blocks(text: str) -> list[str]:
    """The shell blocks (```sh): plain blocks show output, not commands."""
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def command_lines(block: str) -> list[str]:
    """The block's lines, continuations joined, comments and prompts left out."""
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = [line.strip().removeprefix("$ ") for line in joined.splitlines()]
    return [line for line in lines if line.startswith(PROGRAMS)]


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = text.find("\n## ", start + len(heading))
    return text[start: following if following > 0 else None]


def readme() -> str:
    return (REPO_ROOT / "README.md").read_text()


def main_uses() -> list[str]:
    (block,) = code_blocks(section(readme(), "## Main uses"))
    return command_lines(block)


def runnable_here(line: str) -> bool:
    """Lines that need a data set the user brings (--data-folder) are only parsed."""
    return "--data-folder" not in line


@pytest.fixture(scope="module")
def user_cache(tmp_path_factory) -> Path:
    """One cache for every line, as a user's: the demo is mixed once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("checkout")
    for name in CHECKOUT:
        (folder / name).symlink_to(REPO_ROOT / name)
    return folder


def run_as_printed(line: str, folder: Path, cache: Path) -> subprocess.CompletedProcess:
    """The line through a shell, as a user pastes it. Activating the quick
    start's environment puts its bin/ first on PATH; the test's interpreter
    is that environment in CI, so its folder goes first here."""
    code = line.split("  #")[0]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "NSBENCH_CACHE": str(cache)}
    env.pop("PYTHONPATH", None)  # a user has none: the checkout's own folder must be enough
    return subprocess.run(["bash", "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_quick_start_installs_what_the_demo_needs_and_its_run_works(user_folder, user_cache):
    """The quick start's last step, on one clip per cell of the demo, with every engine."""
    (block,) = [b for b in code_blocks(section(readme(), "## Quick start")) if "benchmark.py" in b and "pytest" not in b]
    steps = [step.strip() for step in block.strip().split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    installed = " ".join(steps[1:-1])
    for requirements in ("requirements.txt", "requirements-nodeps.txt"):
        assert f"-r {requirements}" in installed and (REPO_ROOT / requirements).is_file()
    assert steps[-1] == ".venv/bin/python benchmark.py"
    done = run_as_printed("python benchmark.py --limit 26 --quiet", user_folder, user_cache)
    assert done.returncode == 0, done.stderr
    assert (user_folder / "results" / "demo" / "report.md").is_file()


@pytest.mark.slow
def test_every_main_use_line_runs_as_printed(user_folder, user_cache):
    lines = [line for line in main_uses() if runnable_here(line)]
    assert len(lines) >= 8, lines  # the section was not lost
    for line in lines:
        started = time.monotonic()
        done = run_as_printed(line, user_folder, user_cache)
        print(f"{time.monotonic() - started:6.1f} s  {line}")
        assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, line
    assert (user_folder / "nsbench-my-engine" / "pyproject.toml").is_file()


def documented_lines() -> list[tuple[str, str]]:
    found = []
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for block in code_blocks(path.read_text()):
            found += [(path.name, line) for line in command_lines(block)]
    return found


def flags_of(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    program_words = 1 if words[0] == "nsbench" else 2
    return [word.replace("...", "x") for word in words[program_words:]]


@pytest.mark.parametrize("where, line", documented_lines())
def test_every_documented_command_line_parses(where, line, monkeypatch):
    argv = flags_of(line)
    if argv[:1] in (["listen"], ["new-plugin"], ["rank"]):  # commands with parsers of their own
        return check_command_parses(argv)
    monkeypatch.chdir(REPO_ROOT)  # --plugin examples/... is relative to the checkout
    try:
        parse_flags(argv)
    except SystemExit as stop:
        pytest.fail(f"{where}: {line!r} does not parse (exit {stop.code})")


def check_command_parses(argv: list[str]) -> None:
    from nsbench.listen import parser as listen_parser
    from nsbench.plugins.scaffold import parser as new_plugin_parser
    from nsbench.rank_command import parser as rank_parser

    parsers = {"listen": listen_parser, "new-plugin": new_plugin_parser, "rank": rank_parser}
    if argv[0] in parsers:
        parsers[argv[0]]().parse_args(argv[1:])
