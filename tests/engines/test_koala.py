"""Koala's paths without a working AccessKey."""
from __future__ import annotations

import importlib.machinery
import json
import sys
import threading
import time
import types

import numpy as np
import pytest

from tests.helpers.engine_checks import registry, run_builtin
from nsbench.builtin.engines import koala
from nsbench.cli import main
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.errors import UserError


PVKOALA_INSTALLED = build_registry(get_plugin_manager(load_entry_points=False)).engines.get("koala").available


needs_pvkoala = pytest.mark.skipif(not PVKOALA_INSTALLED, reason=f"pvkoala not installed ({koala.INSTALL})")


def demo_argv(results, *extra):
    return ["--limit", "2", "--metric", "si_sdr", "--results-folder", str(results), "--quiet", *extra]


def test_koala_without_pvkoala_is_listed_unavailable_with_its_install_line(monkeypatch, capsys):
    # None in sys.modules is how Python marks a module as absent: find_spec
    # returns None and import fails. It hides pvkoala where it is installed.
    monkeypatch.setitem(sys.modules, "pvkoala", None)
    record = registry().engines.get("koala")
    assert not record.available and record.spec.install == "pip install pvkoala==3.0.1"
    assert main(["--list", "engines"]) == 0
    line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("koala "))
    assert "unavailable: pip install pvkoala==3.0.1" in line
    assert main(["--engine", "koala", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        "nsbench: error: engine 'koala' is unavailable: missing pvkoala. Install: pip install pvkoala==3.0.1"
    )


def test_koala_is_not_in_a_default_run():
    assert not registry().engines.get("koala").spec.default


def run_with_koala(tmp_path, capsys, *extra):
    """A CLI run of koala and speex; returns (stderr lines about koala, results folder)."""
    # Every result written, then exit 4: koala was asked for by name and did not run.
    assert main(demo_argv(tmp_path, "--engine", "koala", "--engine", "speex", *extra)) == 4
    err = capsys.readouterr().err
    assert "Traceback" not in err
    folder = tmp_path / "demo"
    assert json.loads((folder / "speex.json").read_text())["clips"] == 2  # the other engine still ran
    assert not (folder / "koala.json").exists()
    return [line for line in err.splitlines() if line.startswith("nsbench: koala")], folder


@needs_pvkoala
def test_koala_without_a_key_is_one_line_and_the_run_goes_on(tmp_path, capsys, monkeypatch, demo_sources):
    monkeypatch.delenv(koala.KEY_VARIABLE, raising=False)
    lines, folder = run_with_koala(tmp_path, capsys)
    assert lines == ["nsbench: koala skipped: koala needs --picovoice-access-key KEY (or $PICOVOICE_ACCESS_KEY); "
                     "get a key at https://console.picovoice.ai/ (it is checked online)"]
    assert "--picovoice-access-key" in (folder / "report.md").read_text()


@needs_pvkoala
def test_koala_with_a_bogus_key_fails_fast_in_one_line_without_the_key(tmp_path, capsys, demo_sources):
    # pvkoala checks the key's format locally and refuses it before any network access.
    key = "bogus-nsbench-test-key"
    start = time.perf_counter()
    lines, folder = run_with_koala(tmp_path, capsys, "--picovoice-access-key", key)
    assert time.perf_counter() - start < 30
    assert len(lines) == 1
    assert lines[0].startswith("nsbench: koala skipped: koala could not start: KoalaInvalidArgumentError")
    assert key not in lines[0] and key not in (folder / "report.md").read_text()


def fake_pvkoala(create) -> types.ModuleType:
    module = types.ModuleType("pvkoala")
    module.__spec__ = importlib.machinery.ModuleSpec("pvkoala", None)
    module.create = create
    module.KoalaError = type("KoalaError", (Exception,), {})
    return module


def test_koala_create_that_hangs_is_abandoned_with_one_line(monkeypatch):
    # A stand-in for pvkoala: offline, a real key is refused locally before any
    # network call, so a licence server that never answers cannot be provoked here.
    release = threading.Event()
    monkeypatch.setitem(sys.modules, "pvkoala", fake_pvkoala(lambda access_key: release.wait(10)))
    monkeypatch.setattr(koala, "CREATE_TIMEOUT_SECONDS", 0.2)
    try:
        with pytest.raises(UserError, match=r"pvkoala\.create did not return within 0.2 s"):
            koala.build({"picovoice_access_key": "key"})
    finally:
        release.set()


class DelayLine:
    """Stands in for a created Koala: output = input delayed by delay_sample."""

    sample_rate, frame_length, delay_sample = 16000, 256, 300

    def __init__(self):
        self.state, self.resets, self.deleted = [], 0, False

    def reset(self):
        self.state, self.resets = [0] * self.delay_sample, self.resets + 1

    def process(self, pcm):
        assert len(pcm) == self.frame_length and all(type(x) is int for x in pcm)
        self.state += pcm
        out, self.state = self.state[: self.frame_length], self.state[self.frame_length :]
        return out

    def delete(self):
        self.deleted = True


def test_koala_frames_and_delay_reach_the_clean_alignment(monkeypatch, sources):
    # Koala cannot run offline; a delay line with its interface checks our side:
    # frames of frame_length, reset per clip, delay_sample removed, delete on close.
    handle = DelayLine()
    monkeypatch.setitem(sys.modules, "pvkoala", fake_pvkoala(lambda access_key: handle))
    outcomes = run_builtin("koala", sources[:2], {"picovoice_access_key": "key"})
    for outcome, source in zip(outcomes, sources[:2]):
        assert not outcome.record.failed, outcome.record.error
        np.testing.assert_allclose(outcome.output, source.load().noisy, atol=1 / 32768)
    assert handle.resets == 2 and handle.deleted
