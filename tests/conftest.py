"""Shared fixtures. The demo sets are generated once per test session into a
private cache folder, so tests never read or write the user's cache. Plain
helpers (paths, audio makers, plugins for the CLI) are in tests/helpers/."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nsbench-cache")
    previous = os.environ.get("NSBENCH_CACHE")
    os.environ["NSBENCH_CACHE"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("NSBENCH_CACHE", None)
    else:
        os.environ["NSBENCH_CACHE"] = previous


@pytest.fixture(autouse=True)
def private_run_cache(private_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each test starts with an empty cache of engine outputs and scores (the
    demo set and remixes stay shared): a test never gets another's results.
    Subprocesses see the same, through the symbolic link."""
    from nsbench.store.cache import RUNS_FOLDER

    folder = tmp_path_factory.mktemp("run-cache")
    link = private_cache / RUNS_FOLDER
    if link.is_symlink():
        link.unlink()
    elif link.is_dir():  # made by a module-scoped fixture's run, before this fixture ran
        shutil.rmtree(link)
    private_cache.mkdir(parents=True, exist_ok=True)
    link.symlink_to(folder, target_is_directory=True)
    return folder


@pytest.fixture(scope="session")
def demo_sources():
    from nsbench.builtin.datasets import demo

    return demo.clips({"demo_seed": demo.DEFAULT_SEED})


@pytest.fixture(scope="session")
def demo_tts_sources():
    """The synthetic set: for engine tests that need a reference no engine may rightly change."""
    from nsbench.builtin.datasets import demo_tts

    return demo_tts.clips({"demo_seed": demo_tts.DEFAULT_SEED})


@pytest.fixture(scope="session")
def view():
    """The installed plugins' View (nsbench.report.layout): what a run of the
    built-ins hands its reports; read once, handed to each test that asks."""
    from nsbench.report.layout import installed_view

    return installed_view()
