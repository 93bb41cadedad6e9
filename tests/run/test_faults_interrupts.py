"""SIGINT and SIGTERM in the middle of a run, sent to a real ``benchmark.py``.

What is done is kept (the clip lines already written, the finished engines'
JSON, a summary of the interrupted engine marked "interrupted"), stderr says
where the results are and how to get the rest, the exit code is 128 + the
signal, and nothing is left behind: no process, no temporary file. With
--jobs 2 the worker processes (and the programs they run) are stopped too.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from nsbench.report.model import file_stem

from tests.helpers.audio import tone_and_noise, write_wav
from tests.helpers.paths import REPO_ROOT

CLIPS = 8
SLOW_PLUGIN = '''
import time

from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import EngineSpec


class Slow:
    sample_rate, delay = None, 0

    def process(self, audio):
        time.sleep(0.5)
        return audio.copy()

    def close(self):
        pass


@hookimpl
def register_engines(register):
    register(EngineSpec(name="slow", factory=lambda options: Slow(), description="sleeps 0.5 s a clip",
                        sample_rate=None, delay=0))
'''
SLOW_PROGRAM = "import shutil, sys, time\ntime.sleep(0.5)\nshutil.copy(sys.argv[1], sys.argv[2])\n"


def engine_flags(kind: str, folder: Path) -> tuple[list[str], str]:
    """(flags, engine name) for an in-process engine (a --plugin) or a program per clip (command:)."""
    if kind == "plugin":
        (folder / "slow_plugin.py").write_text(SLOW_PLUGIN)
        return ["--plugin", str(folder / "slow_plugin.py"), "--engine", "slow"], "slow"
    (folder / "slow_program.py").write_text(SLOW_PROGRAM)
    name = f"command:{shlex.quote(sys.executable)} {shlex.quote(str(folder / 'slow_program.py'))} {{input}} {{output}}"
    return ["--engine", name], name


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("interrupt-data")
    for index in range(CLIPS):
        clean, noise = tone_and_noise(index, seconds=0.5)
        write_wav(root / "clean" / f"clip{index}.wav", clean, 16000)
        write_wav(root / "noisy" / f"clip{index}.wav", clean + noise, 16000)
    return root


def wait_for_lines(path: Path, count: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.is_file() and len(path.read_text().splitlines()) >= count):
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "the run never got going"
        time.sleep(0.05)


def status(process: psutil.Process) -> str | None:
    try:
        return process.status()
    except psutil.NoSuchProcess:
        return None


def running_descendants(process: subprocess.Popen, expected: bool, timeout: float = 5.0) -> list[psutil.Process]:
    """The run's workers and programs; when some are ``expected``, waits for
    one (a program starts per clip: between two clips there is none)."""
    deadline = time.monotonic() + timeout
    while True:
        found = psutil.Process(process.pid).children(recursive=True)
        if found or not expected:
            return found
        assert time.monotonic() < deadline, "no worker or program ever ran"
        time.sleep(0.02)


@pytest.mark.parametrize(
    "signame, jobs, kind, to_group",
    [
        ("SIGINT", 1, "plugin", True),  # Ctrl-C: the terminal signals the whole process group
        ("SIGTERM", 1, "command", False),  # kill PID
        ("SIGINT", 2, "command", True),
        ("SIGTERM", 2, "plugin", False),
    ],
)
def test_an_interrupted_run_keeps_what_is_done_and_says_how_to_go_on(tmp_path, data, signame, jobs, kind, to_group):
    flags, name = engine_flags(kind, tmp_path)
    stem = file_stem(name)
    results, temporary = tmp_path / "results", tmp_path / "tmp"
    temporary.mkdir()
    argv = [sys.executable, "benchmark.py", "--dataset", "folder", "--data-folder", str(data), *flags, "--metric", "si_sdr",
            "--jobs", str(jobs), "--results-folder", str(results), "--quiet", "--no-plots", "--no-html"]
    process = subprocess.Popen(argv, cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(temporary)}, stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True, start_new_session=True)
    log = results / "folder" / f"{stem}.clips.jsonl"
    try:
        wait_for_lines(log, 2, process)
        descendants = running_descendants(process, expected=(jobs, kind) != (1, "plugin"))
        number = getattr(signal, signame)
        os.killpg(process.pid, number) if to_group else process.send_signal(number)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + number
    lines = [json.loads(line) for line in log.read_text().splitlines()]  # every line whole
    done = len(lines)
    assert 2 <= done < CLIPS
    # The clips done are the first ones, scored; none is failed by the interrupt itself.
    assert [row["clip_id"] for row in lines] == [f"clip{index}" for index in range(done)]
    assert all(row["error"] is None and "si_sdr" in row["scores"] for row in lines)
    folder = (results / "folder").resolve()  # the run's own folder, which results/folder links
    assert stderr.splitlines() == [
        f"nsbench: interrupted by {signame} during {name}, after {done} of {CLIPS} clips",
        f'nsbench: {stem}.clips.jsonl holds every clip done; {stem}.json summarises them, marked "interrupted"',
        f"nsbench: results so far in {folder}/ (report.md covers the engines that ran)",
        "nsbench: to resume, run the same command again: every clip done comes from the cache",
    ]
    partial = json.loads((folder / f"{stem}.json").read_text())
    assert partial["interrupted"] == {"signal": signame, "clips_done": done, "clips_planned": CLIPS}
    assert (partial["clips"], partial["failures"]) == (done, 0)
    baseline = json.loads((folder / "passthrough.json").read_text())
    assert (baseline["clips"], baseline["failures"], "interrupted" in baseline) == (CLIPS, 0, False)
    assert f"**Interrupted by {signame}: incomplete.** {name} ran {done} of {CLIPS} clips." in (folder / "report.md").read_text()
    # Nothing left behind: workers, the programs they ran, private folders.
    _, alive = psutil.wait_procs(descendants, timeout=5)
    assert [p for p in alive if status(p) not in (psutil.STATUS_ZOMBIE, None)] == []  # a zombie waits for init to reap it
    assert list(temporary.iterdir()) == []


SLOW_DATASET = '''
import time
from pathlib import Path

import numpy as np

import nsbench

STARTED = Path(__file__).with_name("loading")


def load(index):
    STARTED.write_text("loading")  # the test signals once a clip is being loaded, before any is logged
    time.sleep(30)
    tone = (0.1 * np.sin(np.arange(8000) / 5.0)).astype(np.float32)
    return nsbench.Clip(clip_id=f"c{index}", noisy=tone, clean=tone, sample_rate=16000)


@nsbench.hookimpl
def register_datasets(register):
    import functools

    register(nsbench.DatasetSpec(
        name="slow-load", cell_keys=(), description="loads each clip in 30 s",
        clips=lambda options: [nsbench.ClipSource(clip_id=f"c{i}", load=functools.partial(load, i)) for i in range(2)],
    ))
'''


def test_sigterm_before_any_clip_is_logged_exits_143_with_no_traceback(tmp_path):
    # Before the fix, ResultsWriter.finish wrote report.md into results/<dataset>/, which only the
    # first clip's line creates: FileNotFoundError and exit code 1 instead of 143.
    (tmp_path / "slow_dataset.py").write_text(SLOW_DATASET)
    results = tmp_path / "results"
    argv = [sys.executable, "benchmark.py", "--plugin", str(tmp_path / "slow_dataset.py"), "--dataset", "slow-load",
            "--metric", "si_sdr", "--jobs", "1", "--no-cache", "--results-folder", str(results), "--quiet", "--no-plots", "--no-html"]
    process = subprocess.Popen(argv, cwd=REPO_ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "loading").is_file():
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "no clip was ever loaded"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert "Traceback" not in stderr, stderr
    assert process.returncode == 128 + signal.SIGTERM
    assert not list((results / "slow-load").glob("*.clips.jsonl"))  # no clip was done
    assert "Interrupted by SIGTERM" in (results / "slow-load" / "report.md").read_text()
