"""Issue 36, the run loop and its executors (docs/failures.md, the adversarial family):
interrupts at named steps (F-07), a bound on every clip (F-16), workers of a
killed parent (F-19), KeyboardInterrupt that is not a signal and a signal
during the fork of workers (F-21), an engine's close() that raises and its
os.chdir() (F-23).

Races are provoked at named steps, not by timing: a wrapper around the step's
function sends the real signal to this process as the step begins, so the
run's own handler meets it there. The engines misbehave for real (a hang in
native code, a segfault) on the one clip whose length is BAD_LENGTH.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from nsbench.cli import main
from nsbench.report.writer import ResultsWriter
from nsbench.session import engine_turn, loop

from tests.helpers.audio import tone_and_noise, write_wav
from tests.helpers.paths import REPO_ROOT

# Each clip its own length, so an engine can tell the bad one.
# Short enough that a one-second --clip-timeout is the bound (not ten times the clip).
CLIP_SECONDS = (0.05, 0.06, 0.07)
BAD_LENGTH = 960  # clip1's samples at 16 kHz

MISBEHAVING_PLUGIN = '''
import ctypes, os, time
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import EngineSpec


class Misbehaving:
    """Copies its input; on the clip of $BAD_LENGTH samples does what $MISBEHAVE says."""
    sample_rate, delay = 16000, 0

    def process(self, audio):
        fault = os.environ.get("MISBEHAVE", "")
        if "STARTED" in os.environ:
            with open(os.environ["STARTED"], "a") as handle:
                handle.write(f"{os.getpid()}\\n")
        if len(audio) == int(os.environ.get("BAD_LENGTH", "-1")):
            if fault == "hang":  # native code that never returns (a hang: only the parent can end it)
                while True:
                    ctypes.CDLL(None).pause()
            if fault == "segfault":  # a real crash in native code
                ctypes.string_at(0)
            if fault == "keyboard":
                raise KeyboardInterrupt("raised by the engine itself")
        if fault == "chdir":
            os.chdir(os.environ["CHDIR_TO"])
        if fault == "slow":
            time.sleep(float(os.environ["SLEEP"]))
        return audio.copy()

    def close(self):
        if os.environ.get("MISBEHAVE") == "close":
            raise RuntimeError("the model would not unload")


@hookimpl
def register_engines(register):
    register(EngineSpec(name="misbehaving", factory=lambda options: Misbehaving(), description="misbehaves on one clip",
                        sample_rate=16000, delay=0))
'''


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("run-loop-data")
    for index, seconds in enumerate(CLIP_SECONDS):
        clean, noise = tone_and_noise(index, seconds=seconds)
        write_wav(root / "clean" / f"clip{index}.wav", clean, 16000)
        write_wav(root / "noisy" / f"clip{index}.wav", clean + noise, 16000)
    return root


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("run-loop-plugin") / "misbehaving_plugin.py"
    path.write_text(MISBEHAVING_PLUGIN)
    return path


def flags(plugin: Path, data: Path | str, results: Path | str, *extra: str) -> list[str]:
    return ["--plugin", str(plugin), "--engine", "misbehaving", "--dataset", "folder", "--data-folder", str(data),
            "--metric", "si_sdr", "--no-cache", "--quiet", "--no-plots", "--no-html", "--results-folder", str(results), *extra]


def rows(results: Path, engine: str) -> list[dict]:
    return [json.loads(line) for line in (results / "folder" / f"{engine}.clips.jsonl").read_text().splitlines()]


def summary(results: Path, engine: str) -> dict:
    return json.loads((results / "folder" / f"{engine}.json").read_text())


# ----------------------------------------------------------------- F-07

def interrupt_at(monkeypatch, owner: object, name: str, call: int = 1, after: bool = False) -> None:
    """SIGINT to this process as ``owner.name`` begins (``after``: as it
    returns), on its ``call``-th call: the run's handler meets it there."""
    original, calls = getattr(owner, name), []

    def step(*args, **kwargs):
        calls.append(1)
        if len(calls) == call and not after:
            os.kill(os.getpid(), signal.SIGINT)
        result = original(*args, **kwargs)
        if len(calls) == call and after:
            os.kill(os.getpid(), signal.SIGINT)
        return result

    monkeypatch.setattr(owner, name, step)


STEPS = {  # step: (owner, function, call, after) -- passthrough's turn comes first, misbehaving's second
    "after-the-last-clip": (engine_turn, "run_and_log", 1, True),
    "inside-summarise": (engine_turn, "summarise", 1, False),
    "engine-done": (ResultsWriter, "engine_done", 1, False),
    "between-turns": (loop, "run_one", 2, False),
    "writing-the-report": (ResultsWriter, "finish", 1, False),
}


@pytest.mark.parametrize("step", list(STEPS))
def test_f07_an_interrupt_at_each_step_keeps_every_finished_engine(step, plugin, data, tmp_path, monkeypatch, capsys):
    """F-07: on c12dba3 an interrupt in the summary, as it was kept, or
    between two turns lost every finished engine's JSON and the report."""
    owner, name, call, after = STEPS[step]
    interrupt_at(monkeypatch, owner, name, call, after)
    results = tmp_path / "results"
    assert main(flags(plugin, data, results, "--jobs", "1")) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nsbench: interrupted by SIGINT" in err, err
    baseline = summary(results, "passthrough")  # finished before the interrupt: kept whole
    assert (baseline["clips"], baseline["failures"]) == (len(CLIP_SECONDS), 0)
    report = (results / "folder" / "report.md").read_text()
    assert "passthrough" in report
    if step == "writing-the-report":  # every engine had run: everything written, said so
        assert summary(results, "misbehaving")["clips"] == len(CLIP_SECONDS)
        assert "after every engine had run" in err and "Interrupted" not in report
    elif step == "after-the-last-clip":  # the engine's clips were all done: summarised, marked
        assert baseline["interrupted"]["clips_done"] == len(CLIP_SECONDS)
        assert "**Interrupted by SIGINT: incomplete.** passthrough ran 3 of 3 clips." in report
    else:
        assert "nsbench: interrupted by SIGINT during misbehaving, after 0 of 3 clips" in err
        assert "interrupted" not in baseline
        assert not (results / "folder" / "misbehaving.json").exists()


def test_f07_a_segfault_under_jobs_1_fails_its_clip_and_keeps_every_engine(plugin, data, tmp_path):
    """F-07: on c12dba3 the run died with the engine (exit 139), with no JSON
    and no line naming the engine. In a subprocess: it would take pytest too."""
    results = tmp_path / "results"
    env = {**os.environ, "MISBEHAVE": "segfault", "BAD_LENGTH": str(BAD_LENGTH)}
    done = subprocess.run([sys.executable, "benchmark.py", *flags(plugin, data, results, "--jobs", "1")], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stderr  # a clip failed; every result written
    assert "Traceback" not in done.stderr
    died = ("the worker process running this clip died (signal 11, SIGSEGV): a crash in the engine's native code, "
            "or the system killed it; fresh workers took the next clips")
    assert f"nsbench: misbehaving failed on clip1: {died}" in done.stderr.splitlines()
    assert [row["error"] for row in rows(results, "misbehaving")] == [None, died, None]
    assert (summary(results, "misbehaving")["clips"], summary(results, "misbehaving")["failures"]) == (3, 1)
    assert summary(results, "passthrough")["failures"] == 0


# ----------------------------------------------------------------- F-16

HUNG_MODEL = '''
import time

def process(audio, rate):
    if len(audio) == {bad}:
        time.sleep(3600)  # hung (the parent kills it: nothing in this process can)
    return audio
'''


@pytest.mark.parametrize("jobs, engine", [("1", "python"), ("1", "plugin"), ("2", "plugin")])
def test_f16_a_hung_engine_fails_its_clip_after_the_clip_timeout(jobs, engine, plugin, data, tmp_path, monkeypatch):
    """F-16: on c12dba3 a hung python: or in-process engine hung the run for
    ever; now the clip fails after --clip-timeout and the next clips run."""
    monkeypatch.setenv("MISBEHAVE", "hang")
    monkeypatch.setenv("BAD_LENGTH", str(BAD_LENGTH))
    argv = flags(plugin, data, tmp_path / "results", "--jobs", jobs, "--clip-timeout", "1")
    name = "misbehaving"
    if engine == "python":
        (tmp_path / "f16_hung_model.py").write_text(HUNG_MODEL.format(bad=BAD_LENGTH))
        monkeypatch.syspath_prepend(str(tmp_path))
        name = "python:f16_hung_model:process"
        argv[argv.index("misbehaving")] = name
    started = time.monotonic()
    assert main(argv) == 4
    assert time.monotonic() - started < 30  # the bound held: 1 s for the hang, the rest is the run
    errors = [row["error"] for row in rows(tmp_path / "results", name.replace(":", "_"))]
    assert errors == [None, "timed out after 1 s (--clip-timeout): its worker process was killed; "
                            "fresh workers took the next clips", None]
    assert psutil.Process().children(recursive=True) == []  # the killed worker is gone, its pool too


def test_f16_the_bound_of_a_long_clip_is_ten_times_its_length():
    from nsbench.run.clip_timeout import bound_for

    assert bound_for(600, 4.0) == 600 and bound_for(600, 3600.0) == 36000 and bound_for(1, 0.1) == 1


@pytest.mark.parametrize("text", ["-1", "nan", "inf", "soon"])
def test_f16_a_clip_timeout_that_is_no_duration_is_refused(text, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--clip-timeout", text])
    assert stopped.value.code == 2
    assert f"--clip-timeout: expected seconds (0 or more), got '{text}'" in capsys.readouterr().err


# ----------------------------------------------------------------- F-19

def test_f19_workers_end_when_their_parent_is_killed(plugin, data, tmp_path):
    """F-19: on c12dba3 the workers of a SIGKILLed parent waited for ever (on
    a pipe only their siblings held). Now they end with it."""
    started = tmp_path / "started"
    env = {**os.environ, "MISBEHAVE": "slow", "SLEEP": "60", "STARTED": str(started)}
    process = subprocess.Popen([sys.executable, "benchmark.py", *flags(plugin, data, tmp_path / "results", "--jobs", "2")],
                               cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while not (started.is_file() and len(started.read_text().split()) >= 2):  # both workers in a clip
            assert process.poll() is None and time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        workers = [psutil.Process(int(pid)) for pid in started.read_text().split()]
        process.kill()
        process.wait()
        gone, alive = psutil.wait_procs(workers, timeout=2)
        assert alive == [], f"workers left running: {alive}"
    finally:
        for worker in workers:
            if worker.is_running():
                worker.kill()


# ----------------------------------------------------------------- F-21

@pytest.mark.parametrize("extra", [["--jobs", "1"], ["--jobs", "1", "--clip-timeout", "0"], ["--jobs", "2"]])
def test_f21_an_engine_raising_keyboard_interrupt_fails_its_clip_only(extra, plugin, data, tmp_path, monkeypatch, capsys):
    """F-21: on c12dba3 it was taken for the user's Ctrl-C: the run stopped, exit 130."""
    monkeypatch.setenv("MISBEHAVE", "keyboard")
    monkeypatch.setenv("BAD_LENGTH", str(BAD_LENGTH))
    assert main(flags(plugin, data, tmp_path / "results", *extra)) == 4
    assert [row["error"] for row in rows(tmp_path / "results", "misbehaving")] == [
        None, "engine raised KeyboardInterrupt: raised by the engine itself", None]
    assert "interrupted" not in capsys.readouterr().err


INTERRUPT_AT_FORK_PLUGIN = '''
import os, signal

FIRED = []


def interrupt_once():
    """SIGINT to this process just before its first fork (nsbench's first worker)."""
    if not FIRED:
        FIRED.append(True)
        os.kill(os.getpid(), signal.SIGINT)


os.register_at_fork(before=interrupt_once)
'''


def test_f21_sigint_as_the_workers_fork_ends_the_run_with_130(plugin, data, tmp_path):
    """F-21: on c12dba3 the interrupt, raised inside an at-fork hook, was
    swallowed by Python ("Exception ignored") and the run went on to exit 0."""
    hook = tmp_path / "interrupt_at_fork.py"
    hook.write_text(INTERRUPT_AT_FORK_PLUGIN)
    argv = [sys.executable, "benchmark.py", *flags(plugin, data, tmp_path / "results", "--jobs", "2"), "--plugin", str(hook)]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    assert "nsbench: interrupted by SIGINT during passthrough, after 0 of 3 clips" in done.stderr


# ----------------------------------------------------------------- F-23

@pytest.mark.parametrize("extra", [["--jobs", "1"], ["--jobs", "1", "--clip-timeout", "0"], ["--jobs", "2"]])
def test_f23_a_close_that_raises_is_noted_and_the_run_goes_on(extra, plugin, data, tmp_path, monkeypatch, capsys):
    """F-23: on c12dba3 the parent's close() before the workers fork raised a traceback (exit 1)."""
    monkeypatch.setenv("MISBEHAVE", "close")
    assert main(flags(plugin, data, tmp_path / "results", *extra)) == 0
    assert "Traceback" not in capsys.readouterr().err
    result = summary(tmp_path / "results", "misbehaving")
    assert (result["clips"], result["failures"]) == (3, 0)
    assert "its close() raised RuntimeError: the model would not unload" in result["engine_info"]["notes"]


@pytest.mark.parametrize("extra", [["--jobs", "1"], ["--jobs", "1", "--clip-timeout", "0"]])
def test_f23_an_engine_that_changes_the_working_directory_moves_no_path(extra, plugin, data, tmp_path, monkeypatch):
    """F-23: on c12dba3 an engine's os.chdir() under --jobs 1 moved the
    harness's relative paths (results, data) with it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "data").symlink_to(data)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MISBEHAVE", "chdir")
    monkeypatch.setenv("CHDIR_TO", str(elsewhere))
    assert main(flags(plugin, "data", "results", *extra)) == 0
    assert Path.cwd() == tmp_path
    assert [row["error"] for row in rows(tmp_path / "results", "misbehaving")] == [None, None, None]
    assert list(elsewhere.iterdir()) == []
    notes = summary(tmp_path / "results", "misbehaving")["engine_info"]["notes"]
    assert "it changed the working directory (os.chdir); nsbench changed it back after each call" in notes
