"""Modules a test file needs only inside its tests, imported on first use.

pytest imports every test file to collect it, so a test file's top-level
``import scipy.stats`` or ``import pystoi`` (1-3 s each on a loaded 2-core
machine) made every run pay for them, even ``--collect-only`` or ``-k`` on
one test. A ``LazyModule`` stands where the module's name stood and imports
it the first time a test reads an attribute from it.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """``name``, imported when first used; with ``skip_if_missing`` a test
    that uses it is skipped when the module is not installed, as
    ``pytest.importorskip`` at the file's top skipped the whole file."""

    def __init__(self, name: str, skip_if_missing: bool = False) -> None:
        self._name = name
        self._skip_if_missing = skip_if_missing
        self._module: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._module is None:
            if self._skip_if_missing:
                import pytest

                self._module = pytest.importorskip(self._name)
            else:
                self._module = importlib.import_module(self._name)
        return self._module

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # our own fields, before __init__ set them (copy, pickle)
            raise AttributeError(attribute)
        return getattr(self._load(), attribute)
