"""The README's promises that a fresh user relies on."""
from __future__ import annotations

import re

from tests.helpers.paths import REPO_ROOT


def quick_start_commands() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Quick start")[1].split("\n## ")[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    run_demo, run_tests = quick_start_commands()
    assert run_demo.endswith("benchmark.py") and "pip install" in run_demo
    assert run_tests.endswith("pytest -q") and "requirements-test.txt" in run_tests
    ci_lines = [line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert ci_lines == [run_tests]
    # The browser test's Chromium comes with the test command, not as a step aside.
    assert "apt-get install -y -q chromium chromium-driver" in run_tests


def test_every_requirement_is_pinned():
    for name in ("requirements.txt", "requirements-test.txt", "requirements-nodeps.txt"):
        for line in (REPO_ROOT / name).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", line.strip()), f"{name}: {line}"
