"""What result files record about how they were made, and what they must not."""
from __future__ import annotations

import re

from nsbench.report.provenance import collect, redacted


def test_secrets_on_the_command_line_are_masked():
    argv = ["--engine", "koala", "--picovoice-access-key", "abc123==", "--api-token=xyz", "--limit", "3"]
    assert redacted(argv) == ["--engine", "koala", "--picovoice-access-key", "***", "--api-token=***", "--limit", "3"]


def test_provenance_names_commit_versions_and_time():
    # Not hex: a commit hash could hold "abc" by chance.
    record = collect(["--picovoice-access-key", "secret-key-QWZ"])
    assert "secret-key-QWZ" not in str(record)
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown \(.*\)", record["git_commit"])
    assert record["packages"]["numpy"] != "not installed"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", record["time_utc"])
