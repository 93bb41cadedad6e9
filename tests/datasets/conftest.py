"""Fixtures of the dataset tests: each set written once per test module in its
published layout (tests/helpers/dataset_layouts.py), and a private cache."""
from __future__ import annotations

from pathlib import Path

import pytest

from nsbench.builtin.datasets import biodenoising

from tests.helpers.dataset_layouts import SNR_ITEMS, make_fuss, make_musdb, write_bio_set


@pytest.fixture(scope="module")
def musdb_root(tmp_path_factory) -> Path:
    return make_musdb(tmp_path_factory.mktemp("musdb18hq"))


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("NSBENCH_CACHE", str(folder))
    return folder


@pytest.fixture(scope="module")
def bio_parent(tmp_path_factory) -> Path:
    # "clean" in the data folder's own path: earthspecies' evaluate.py would turn
    # it into "noisy" and miss every file.
    parent = tmp_path_factory.mktemp("bio") / "clean datasets"
    root = parent / biodenoising.ROOT_NAME
    write_bio_set(root / "16000", SNR_ITEMS, 16000)
    for snr in biodenoising.SNR_EXPERIMENTS:
        amplitude = 0.1 * 10 ** (-float(snr) / 20)
        write_bio_set(root / "16000_snr_experiments" / snr, {"gibbon_01.wav": (0.1, amplitude)}, 16000, 0.5)
    return parent


@pytest.fixture(scope="module")
def fuss_root(tmp_path_factory) -> Path:
    return make_fuss(tmp_path_factory.mktemp("fuss") / "ssdata_reverb")
