"""Shared fixtures. The demo sets are generated once per test session into a
private cache folder, so tests never read or write the user's cache."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import soundfile

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_AUDIO = REPO_ROOT.parent / "shared" / "audio"


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


def write_wav(path: Path, audio: np.ndarray, rate: int, subtype: str = "FLOAT") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio, rate, subtype=subtype)
    return path


def make_folder_dataset(
    root: Path, count: int = 3, seconds: float | Callable[[int], float] = 2.0, name: str = "utt{index}"
) -> Path:
    """The ``folder`` dataset's layout (root/clean, root/noisy) with ``count``
    pairs from tone_and_noise; ``seconds`` may vary with the clip's index."""
    for index in range(count):
        length = seconds(index) if callable(seconds) else seconds
        clean, noise = tone_and_noise(index, seconds=length)
        write_wav(root / "clean" / f"{name.format(index=index)}.wav", clean, 16000)
        write_wav(root / "noisy" / f"{name.format(index=index)}.wav", clean + noise, 16000)
    return root


def tone_and_noise(seed: int, seconds: float = 2.0, rate: int = 16000) -> tuple[np.ndarray, np.ndarray]:
    """A speech-like test pair: an amplitude-modulated harmonic tone and white noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    clean = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 8)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    clean = (0.1 * clean).astype(np.float32)
    noise = (0.03 * rng.standard_normal(len(t))).astype(np.float32)
    return clean, noise


def add_plugin_to_the_cli(monkeypatch, plugin: object) -> None:
    """Every plugin manager the CLI builds during this test also holds ``plugin``."""
    import nsbench.flags
    from nsbench.plugins import manager as plugins

    original = plugins.get_plugin_manager

    def with_plugin(local, **kwargs):
        manager = original(local, **kwargs)
        manager.register(plugin)
        return manager

    monkeypatch.setattr(nsbench.flags, "get_plugin_manager", with_plugin)
