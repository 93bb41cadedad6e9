"""Fixtures of the engine tests: the demo-tts set's stationary cells, which every
engine must improve (tests/helpers/engine_checks.py), under two names."""
from __future__ import annotations

import pytest

from nsbench.plugins.records import ClipSource

from tests.helpers.engine_checks import stationary_sources


@pytest.fixture(scope="module")
def stationary(demo_tts_sources) -> list[ClipSource]:
    return stationary_sources(demo_tts_sources)


@pytest.fixture(scope="module")
def sources(demo_tts_sources):
    return stationary_sources(demo_tts_sources)
