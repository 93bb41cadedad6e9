"""Where the tests find the checkout, their own data and programs, and the
shared recordings (../shared/audio beside the checkout; tests that need them
skip without them)."""
from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_DATA = REPO_ROOT / "tests" / "data"
TEST_PROGRAMS = REPO_ROOT / "tests" / "programs"
SHARED_AUDIO = REPO_ROOT.parent / "shared" / "audio"
