"""RNNoise (as an rnnoise_demo program per clip, or the default program served
once for every clip) on the demo-tts set's stationary cells, plus the ways a
user's rnnoise_demo can go wrong."""
from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import psutil
import pytest

from nsbench.audio.files import resample
from nsbench.builtin.engines import rnnoise
from nsbench.plugins.errors import UserError
from nsbench.plugins.records import ClipSource

from tests.helpers.paths import REPO_ROOT
from tests.helpers.engine_checks import assert_improves_and_aligned, delays, mean_gain, run_builtin
from tests.helpers.programs import python_program, shell_program


EXTRA_FRAME_PROGRAM = REPO_ROOT / "tests" / "programs" / "rnnoise_demo_extra_frame.py"


FLAG = "--rnnoise-demo-path"


def on_second_call(folder: Path, action: str) -> str:
    """Shell lines doing ``action`` on the program's second run only: the first
    run is the engine's calibration probe, the second the first clip."""
    count = shlex.quote(str(folder / "calls"))
    return f'n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo "$n" > {count}\nif [ "$n" -eq 2 ]; then {action}; fi'


@pytest.fixture(scope="module")
def rnnoise_run(stationary):
    return run_builtin("rnnoise", stationary)


@pytest.fixture(scope="module")
def one_per_cell(stationary) -> list[ClipSource]:
    """The first clip of each stationary cell: every cell, half the time."""
    firsts: dict[tuple[str, str], ClipSource] = {}
    for source in stationary:
        firsts.setdefault((source.labels["noise"], source.labels["snr_db"]), source)
    return list(firsts.values())


@pytest.fixture(scope="module")
def extra_frame_run(one_per_cell, tmp_path_factory):
    program = python_program(tmp_path_factory.mktemp("extra"), "rnnoise_demo", shlex.quote(str(EXTRA_FRAME_PROGRAM)))
    return run_builtin("rnnoise", one_per_cell, {"rnnoise_demo_path": str(program)})


def test_rnnoise_improves_and_is_aligned(rnnoise_run, stationary):
    assert_improves_and_aligned(rnnoise_run, stationary)
    assert delays(rnnoise_run) == {"960 samples at 48000 Hz"}


def test_a_program_one_frame_later_is_measured_and_still_aligned(extra_frame_run, rnnoise_run, one_per_cell):
    assert delays(extra_frame_run) == {f"{960 + rnnoise.FRAME} samples at 48000 Hz"}
    assert_improves_and_aligned(extra_frame_run, one_per_cell)
    # The same denoiser, only later: compensated, it scores as on the same clips before.
    same_clips = [o for o in rnnoise_run if o.record.clip_id in {s.clip_id for s in one_per_cell}]
    assert mean_gain(extra_frame_run) == pytest.approx(mean_gain(same_clips), abs=0.2)


def test_rnnoise_cpu_time_includes_the_program(rnnoise_run):
    # The parent only converts and writes files (well under 0.005 s per second of
    # audio); starting Python and running RNNoise in the child costs over 0.05.
    for outcome in rnnoise_run:
        record = outcome.record
        assert record.cpu_seconds / record.duration > 0.02, record


def test_the_measured_delay_is_a_note():
    engine = rnnoise.build({})
    try:
        assert engine.delay == 960
        assert engine.notes and "960 samples at 48000 Hz" in engine.notes[0]
    finally:
        engine.close()


def test_padding_keeps_every_sample_of_any_length(tmp_path):
    """A program that copies its input under the demo's rules (first frame and a
    trailing partial frame not written) has delay 0, and the engine gives back
    exactly what it sent, whatever the length."""
    script = tmp_path / "copy_demo.py"
    script.write_text(
        "import sys\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "frames = len(data) // 960\n"
        "open(sys.argv[2], 'wb').write(data[960 : frames * 960])\n"
    )
    engine = rnnoise.build({"rnnoise_demo_path": str(python_program(tmp_path, "copy", shlex.quote(str(script))))})
    try:
        assert engine.delay == 0
        rng = np.random.default_rng(1)
        for length in (1, 479, 480, 481, 4801):
            audio = rng.uniform(-0.99, 0.99, length).astype(np.float32)
            output = engine.process(audio)
            assert output.dtype == np.float32 and len(output) == length
            np.testing.assert_allclose(output, audio, atol=1 / 32768)
        loud = np.array([1.5, -1.5], np.float32)  # clipped, never wrapped to the other sign
        np.testing.assert_allclose(engine.process(loud), [32767 / 32768, -1.0])
    finally:
        engine.close()


def never_loaded():
    raise AssertionError("a clip was loaded before the flag was checked")


@pytest.mark.parametrize("executable, message", [(None, "no such program"), (False, "not executable")])
def test_a_bad_demo_path_stops_before_any_clip(tmp_path, executable, message):
    path = tmp_path / "rnnoise_demo"
    if executable is not None:
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755 if executable else 0o644)
    with pytest.raises(UserError, match=rf"^{FLAG} {path}: {message}$"):
        run_builtin("rnnoise", [ClipSource("never", never_loaded)], {"rnnoise_demo_path": str(path)})


@pytest.mark.parametrize(
    "body, message",
    [
        ('echo "cannot open model" >&2; exit 3', r"failed on the calibration probe: rnnoise_demo failed \(exit code 3\): cannot open model$"),
        ('exec truncate -s "$(stat -c %s "$1")" "$2"', r"cannot measure the delay of .*: its output does not follow the probe speech"),
    ],
)
def test_a_program_that_fails_the_probe_is_refused(tmp_path, body, message):
    program = shell_program(tmp_path, "rnnoise_demo", body)
    with pytest.raises(UserError, match=message):
        run_builtin("rnnoise", [ClipSource("never", never_loaded)], {"rnnoise_demo_path": str(program)})


def test_a_crash_fails_that_clip_only(tmp_path, stationary):
    crash = 'echo "rnnoise_demo: simulated crash in rnnoise_process_frame" >&2; kill -SEGV $$'
    program = python_program(tmp_path, "crashing", "-m nsbench.builtin.engines.rnnoise_demo", on_second_call(tmp_path, crash))
    first, second = run_builtin("rnnoise", stationary[:2], {"rnnoise_demo_path": str(program)})
    assert first.record.error is not None
    assert "signal 11" in first.record.error and "simulated crash in rnnoise_process_frame" in first.record.error
    assert not second.record.failed and second.record.scores["si_sdri"] > 0.5


def test_a_hang_is_killed_after_the_timeout(tmp_path, stationary):
    program = python_program(tmp_path, "hanging", "-m nsbench.builtin.engines.rnnoise_demo", on_second_call(tmp_path, "exec sleep 300"))
    # 8 s: a normal call (Python, numpy, the library) must finish within it on a loaded machine.
    options = {"rnnoise_demo_path": str(program), "rnnoise_timeout": 8.0}
    started = time.monotonic()
    first, second = run_builtin("rnnoise", stationary[:2], options)
    assert first.record.error == "hanging timed out after 8 s and was killed"
    assert not second.record.failed and second.record.scores["si_sdri"] > 0.5
    assert time.monotonic() - started < 60
    assert not psutil.Process().children(recursive=True), "the hung program was left running"


@pytest.mark.parametrize("timeout", [0.0, -1.0])
def test_a_timeout_that_is_not_positive_is_refused(timeout):
    with pytest.raises(UserError, match=rf"^--rnnoise-timeout {timeout:g}: must be more than 0 seconds$"):
        rnnoise.build({"rnnoise_timeout": timeout})


TOOL = [sys.executable, "-m", "nsbench.builtin.engines.rnnoise_demo"]


DIES_PROGRAM = REPO_ROOT / "tests" / "programs" / "rnnoise_serve_dies.py"


def registered_metrics(module) -> list:
    specs: list = []
    module.register_metrics(specs.append)
    return specs


def at_48k(sources: Sequence[ClipSource]) -> list[np.ndarray]:
    return [resample(source.load().noisy, 16000, rnnoise.SAMPLE_RATE) for source in sources]


def test_the_default_program_is_served_once_for_every_clip():
    engine = rnnoise.build({})
    try:
        assert engine.server is not None
        engine.process(np.zeros(4800, np.float32))  # started here, or by the calibration probe
        pids = engine.helper_pids()
        engine.process(np.zeros(9600, np.float32))
        assert len(pids) == 1 and engine.helper_pids() == pids
    finally:
        engine.close()
    assert not psutil.pid_exists(pids[0]), "close() left the served program running"


def test_the_served_program_gives_the_per_clip_programs_samples(stationary):
    clips = at_48k(stationary[:3])
    clips.append(clips[0][: len(clips[0]) - 1234])  # not a whole number of frames
    per_clip = rnnoise.RNNoiseDemo(TOOL, "per clip", 60.0, cwd=REPO_ROOT)
    served = rnnoise.RNNoiseDemo(TOOL, "served", 60.0, cwd=REPO_ROOT, served=True)
    try:
        for clip in clips:
            assert np.array_equal(served.process(clip), per_clip.process(clip))
    finally:
        per_clip.close()
        served.close()


def test_the_served_program_takes_blocks_of_any_size(stationary):
    """The protocol streams: a block of any length gets back the output of the
    whole frames received so far, the same samples as the clip sent at once."""
    from nsbench.builtin.engines.rnnoise_demo import FRAME

    pcm = (np.clip(at_48k(stationary[:1])[0], -1, 1) * 32767).astype("<i2")
    served = rnnoise.RNNoiseDemo(TOOL, "served", 60.0, cwd=REPO_ROOT, served=True)
    try:
        whole = served.server.denoise(pcm, 60.0)
        program, deadline = served.server, time.monotonic() + 60.0
        program.request(b"N", b"", deadline)
        parts, start = [], 0
        for size in (1, 478, 2, 481, 5000, 7):
            reply = program.request(b"A", pcm[start : start + size].tobytes(), deadline)
            start += size
            assert len(reply) // 2 == max(0, (start // FRAME - 1) * FRAME) - sum(len(p) for p in parts) // 2
            parts.append(reply)
        parts.append(program.request(b"A", pcm[start:].tobytes(), deadline))
        parts.append(program.request(b"F", b"", deadline))
        assert np.array_equal(np.frombuffer(b"".join(parts), "<i2"), whole)
    finally:
        served.close()


def test_a_served_program_that_dies_mid_clip_fails_that_clip_and_the_next_gets_a_fresh_one(tmp_path, stationary):
    from nsbench.run.engine_run import EngineRun
    from nsbench.run.runner import run_engine
    from nsbench.plugins.engine import MEASURED
    from nsbench.plugins.specs import EngineSpec

    argv = [sys.executable, str(DIES_PROGRAM), str(tmp_path / "died-once")]
    spec = EngineSpec(
        name="rnnoise-dies", description="", sample_rate=rnnoise.SAMPLE_RATE, delay=MEASURED,
        factory=lambda options: rnnoise.RNNoiseDemo(argv, "dying", 60.0, cwd=REPO_ROOT, served=True),
    )
    from nsbench.builtin.metrics import sisdr

    metrics = [spec for spec in registered_metrics(sisdr) if spec.name == "si_sdri"]
    first, second = run_engine(EngineRun(spec, {}, metrics), stationary[:2])
    assert first.record.error == "dying died mid-clip (signal 9, SIGKILL); the next clip starts a fresh program"
    assert not second.record.failed and second.record.scores["si_sdri"] > 0.5
    expected = rnnoise.RNNoiseDemo(TOOL, "per clip", 60.0, cwd=REPO_ROOT)
    try:
        clip = stationary[1].load()
        raw = expected.process(np.concatenate([resample(clip.noisy, 16000, 48000), np.zeros(expected.delay, np.float32)]))
        kept = resample(raw[expected.delay:], 48000, 16000)[: len(clip.noisy)]
        assert np.array_equal(second.output, kept)
    finally:
        expected.close()
    assert not psutil.Process().children(recursive=True), "a served program was left running"


def test_a_served_program_that_hangs_is_killed_after_the_timeout(tmp_path, stationary):
    from nsbench.builtin.metrics import sisdr
    from nsbench.run.engine_run import EngineRun
    from nsbench.run.runner import run_engine
    from nsbench.plugins.engine import MEASURED
    from nsbench.plugins.specs import EngineSpec

    argv = [sys.executable, str(DIES_PROGRAM), str(tmp_path / "hung-once"), "hang"]
    spec = EngineSpec(
        name="rnnoise-hangs", description="", sample_rate=rnnoise.SAMPLE_RATE, delay=MEASURED,
        factory=lambda options: rnnoise.RNNoiseDemo(argv, "hanging", 8.0, cwd=REPO_ROOT, served=True),
    )
    metrics = [spec for spec in registered_metrics(sisdr) if spec.name == "si_sdri"]
    started = time.monotonic()
    first, second = run_engine(EngineRun(spec, {}, metrics), stationary[:2])
    assert first.record.error == "hanging timed out after 8 s and was killed; the next clip starts a fresh program"
    assert not second.record.failed and second.record.scores["si_sdri"] > 0.5
    assert time.monotonic() - started < 60
    assert not psutil.Process().children(recursive=True), "the hung program was left running"


def test_the_listed_description_is_true_of_both_ways_of_running(tmp_path):
    """``--list engines`` said "run as rnnoise_demo per clip" while the default
    program is served once per engine (issue 22): one process serves every
    clip by default, and a user's program runs once per clip (a fresh process
    each time, counted by the program itself)."""
    registered = {}
    rnnoise.register_engines(lambda spec: registered.setdefault(spec.name, spec))
    served_part, own_part = registered["rnnoise"].description.split("--rnnoise-demo-path")
    assert "served once per engine" in served_part and "once per clip" in own_part
    audio = np.random.default_rng(2).uniform(-0.3, 0.3, 4800).astype(np.float32)
    engine = rnnoise.build({})
    try:
        engine.process(audio)
        first = engine.helper_pids()
        engine.process(audio)
        assert len(first) == 1 and engine.helper_pids() == first
    finally:
        engine.close()
    calls = tmp_path / "calls"
    script = tmp_path / "copy_demo.py"
    script.write_text(
        "import sys\n"
        f"open({str(calls)!r}, 'a').write('x')\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "open(sys.argv[2], 'wb').write(data[960 : len(data) // 960 * 960])\n"
    )
    engine = rnnoise.build({"rnnoise_demo_path": str(python_program(tmp_path, "copy", shlex.quote(str(script))))})
    try:
        before = len(calls.read_text())  # the delay probe's runs
        engine.process(audio)
        engine.process(audio)
        assert engine.helper_pids() == [] and len(calls.read_text()) == before + 2
    finally:
        engine.close()


def counting_copy_program(folder: Path) -> tuple[Path, Path]:
    """A delay-0 rnnoise_demo (copies its input under the demo's rules) that
    counts its runs in a file; (program, count file)."""
    script = folder / "copy_demo.py"
    script.write_text(
        "import sys\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "open(sys.argv[2], 'wb').write(data[960 : len(data) // 960 * 960])\n"
    )
    count = folder / "runs"
    before = f"echo run >> {shlex.quote(str(count))}"
    return python_program(folder, "copy", shlex.quote(str(script)), before=before), count


def test_the_measured_delay_is_kept_in_the_cache_by_the_programs_digest(tmp_path, monkeypatch):
    """A second process (the in-memory measurements cleared) reads the stored
    delay rather than probing; a changed program is probed anew; an unreadable
    stored file is measured again and rewritten."""
    program, runs = counting_copy_program(tmp_path)
    options = {"rnnoise_demo_path": str(program)}

    def build_fresh() -> rnnoise.RNNoiseDemo:
        monkeypatch.setattr(rnnoise, "_measured", {})  # as in a new process
        engine = rnnoise.build(options)
        engine.close()
        return engine

    first = build_fresh()
    assert first.delay == 0 and runs.read_text().count("run") == 1
    again = build_fresh()
    assert again.delay == 0 and again.notes == first.notes
    assert runs.read_text().count("run") == 1  # the probe did not run again
    program.write_text(program.read_text() + "\n# rebuilt\n")
    build_fresh()
    assert runs.read_text().count("run") == 2
    stored = rnnoise.delay_path(rnnoise.program_digest(options, str(program)))
    stored.write_text("{not json")
    assert build_fresh().delay == 0 and runs.read_text().count("run") == 3
    assert rnnoise.stored_delay(rnnoise.program_digest(options, str(program)))[0] == 0
