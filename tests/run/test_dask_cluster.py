"""--executor dask --scheduler on a real cluster: `dask scheduler` and
`dask worker` started as processes on 127.0.0.1, as docs/cache-and-clusters.md shows. A
worker that cannot import nsbench stops the run in one line, before
anything is computed; workers that can give the serial run's numbers; a
worker without nsbench joining mid-run stops it in one line, the clips done
kept."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers.paths import REPO_ROOT

DASK = str(Path(sys.executable).with_name("dask"))
START_TIMEOUT = 60.0  # a loaded machine starts a scheduler in seconds, not minutes


@contextmanager
def process(argv: list[str], cwd: Path, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """A process in its own group, ended with everything it started."""
    started = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield started
    finally:
        os.killpg(started.pid, signal.SIGTERM)
        try:
            started.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(started.pid, signal.SIGKILL)
            started.wait()


def wait_for_workers(address: str, count: int) -> None:
    code = f"from distributed import Client; c = Client({address!r}, timeout='30s'); c.wait_for_workers({count}, timeout={START_TIMEOUT}); c.close()"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=START_TIMEOUT + 30)


def scheduler_address(scheduler_file: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if scheduler_file.is_file() and scheduler_file.stat().st_size:
            return json.loads(scheduler_file.read_text())["address"]
        time.sleep(0.2)
    raise AssertionError("the Dask scheduler did not start")


def scheduler_command(scheduler_file: Path) -> list[str]:
    return [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)]


def start_quieter_run(tmp_path: Path, clips: int, address: str, env: dict[str, str]) -> tuple[subprocess.Popen, Path]:
    """The quieter plugin engine over ``clips`` half-second clips on the
    scheduler at ``address``, started; returns the run and its clip log."""
    from tests.helpers.audio import make_folder_dataset
    from tests.helpers.plugins import QUIETER_PLUGIN

    data = make_folder_dataset(tmp_path / "data", clips, seconds=0.5, name="utt{index:02d}")
    plugin = tmp_path / "quieter_plugin.py"
    plugin.write_text(QUIETER_PLUGIN)
    results = tmp_path / "results"
    command = [sys.executable, "benchmark.py", "--plugin", str(plugin), "--engine", "quieter", "--dataset", "folder",
               "--data-folder", str(data), "--metric", "si_sdr", "--executor", "dask", "--scheduler", address,
               "--quiet", "--no-plots", "--no-html", "--no-cache", "--results-folder", str(results)]
    run = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return run, results / "folder" / "quieter.clips.jsonl"


def wait_until_logged(run: subprocess.Popen, log: Path, clips: int, before: str) -> None:
    deadline = time.monotonic() + 240
    while not (log.is_file() and len(log.read_text().splitlines()) >= clips):
        assert run.poll() is None and time.monotonic() < deadline, f"the run ended or stalled before {before}"
        time.sleep(0.05)


def benchmark(argv: list[str], results: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "benchmark.py", "--engine", "speex", "--limit", "2", "--quiet", "--no-plots", "--no-html",
               "--no-cache", "--results-folder", str(results), *argv]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_real_cluster_checks_its_workers_then_runs(tmp_path):
    # Without PYTHONPATH and outside the checkout, a worker cannot import
    # nsbench: the shared environment has its dependencies, not nsbench itself.
    bare = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = scheduler_command(scheduler_file)
    # The scheduler unpickles the tasks: it needs nsbench too (the run checks it first).
    with process(scheduler, tmp_path, {**bare, "PYTHONPATH": str(REPO_ROOT)}):
        address = scheduler_address(scheduler_file)
        worker = [DASK, "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"]
        with process(worker, tmp_path, bare):
            wait_for_workers(address, 1)
            refused = benchmark(["--executor", "dask", "--scheduler", address], tmp_path / "refused")
        assert refused.returncode == 2
        # One line (beside the note that the demo set was mixed, where it was).
        lines = [line for line in refused.stderr.splitlines() if not line.startswith("nsbench: mixing the demo set")]
        assert len(lines) == 1, refused.stderr
        [line] = lines
        assert line.startswith("nsbench: error: 1 of 1 Dask workers cannot import nsbench (tcp://127.0.0.1:")
        assert "install nsbench 0.1.0" in line and "nothing was computed" in line
        assert not (tmp_path / "refused" / "demo" / "speex.clips.jsonl").exists()
        # A worker with nsbench importable (a checkout on its path; pip install works too).
        with process(worker, tmp_path, {**bare, "PYTHONPATH": str(REPO_ROOT)}):
            wait_for_workers(address, 1)
            on_cluster = benchmark(["--executor", "dask", "--scheduler", address], tmp_path / "cluster")
    assert on_cluster.returncode == 0, on_cluster.stderr[-2000:]
    serial = benchmark(["--jobs", "1"], tmp_path / "serial")
    assert serial.returncode == 0, serial.stderr[-2000:]
    scores = {  # timings aside: those differ run to run
        where: [
            {name: value for name, value in json.loads(line)["scores"].items() if not name.startswith("rtf")}
            for line in (tmp_path / where / "demo" / "speex.clips.jsonl").read_text().splitlines()
        ]
        for where in ("cluster", "serial")
    }
    assert len(scores["cluster"]) == 2 and scores["cluster"] == scores["serial"]


@pytest.mark.slow
def test_a_worker_killed_mid_run_costs_only_the_batch_it_was_running(tmp_path):
    """SIGKILL to one of two `dask worker` processes (no nanny: it stays dead)
    once some clips are logged. The scheduler allows no retry and hands each
    worker only the batch it runs (24 clips on 2 threads: batches of 3), so
    exactly that batch's clips fail, with the reason; the other worker scores
    every other clip, and the run ends normally."""
    # ~0.4 s a clip, so that the worker is killed in the middle of one.
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ENGINE_SLEEP": "0.4",
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0", "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = scheduler_command(scheduler_file)
    with process(scheduler, tmp_path, env):
        address = scheduler_address(scheduler_file)
        worker = [DASK, "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"]
        with process(worker, tmp_path, env) as doomed, process(worker, tmp_path, env):
            wait_for_workers(address, 2)
            run, log = start_quieter_run(tmp_path, 24, address, env)
            wait_until_logged(run, log, 4, "the kill")
            os.killpg(doomed.pid, signal.SIGKILL)
            _, stderr = run.communicate(timeout=300)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert run.returncode == 4, stderr[-3000:]  # every result written; one clip failed
    assert [row["clip_id"] for row in records] == [f"utt{index:02d}" for index in range(24)]
    failed = [row for row in records if row["error"] is not None]
    failed_indexes = [int(row["clip_id"][3:]) for row in failed]
    assert len(failed) == 3 and failed_indexes[0] % 3 == 0, [(row["clip_id"], row["error"]) for row in failed]
    assert failed_indexes == list(range(failed_indexes[0], failed_indexes[0] + 3))  # one batch, consecutive
    assert all(row["error"] == failed[0]["error"] for row in failed)
    assert failed[0]["error"].startswith("the Dask workers running this clip died, as often as the scheduler allows")
    assert all("si_sdr" in row["scores"] for row in records if row["error"] is None)


@pytest.mark.slow
def test_a_worker_without_nsbench_joining_mid_run_stops_it_in_one_line_keeping_the_clips_done(tmp_path):
    """A `dask worker` that cannot import nsbench (no PYTHONPATH, outside the
    checkout) joins after the start-up check, once some clips are logged. It
    used to die decoding its first batch, or, with a nanny and a plugin file,
    stay closing for ever with that batch while the run waited on it. Now the
    batch's function, sent by value, answers that nsbench is missing there,
    and the run stops in one line naming the worker; every clip logged stays."""
    with_nsbench = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ENGINE_SLEEP": "0.4"}  # ~20 s for the 48 clips
    bare = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = scheduler_command(scheduler_file)
    with process(scheduler, tmp_path, with_nsbench):
        address = scheduler_address(scheduler_file)
        worker = [DASK, "worker", address, "--nthreads", "1", "--no-dashboard"]  # with its nanny, as a cluster starts them
        with process(worker, tmp_path, with_nsbench):
            wait_for_workers(address, 1)
            run, log = start_quieter_run(tmp_path, 48, address, with_nsbench)
            wait_until_logged(run, log, 4, "the late worker")
            with process(worker, tmp_path, bare):
                try:
                    _, stderr = run.communicate(timeout=300)  # a safety net: the run used to wait for ever
                finally:
                    run.kill()  # no-op once it ended; else no run left behind by a failing test
                    run.wait()
    assert run.returncode == 2, stderr[-3000:]
    ours = [line for line in stderr.splitlines() if line.startswith("nsbench:")]
    assert len(ours) == 1, stderr[-3000:]
    assert ours[0].startswith("nsbench: error: the Dask worker tcp://127.0.0.1:"), ours
    assert "which joined after the start-up check, cannot import nsbench (ModuleNotFoundError" in ours[0]
    assert ours[0].endswith("then run again; the clips done so far are kept")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert 4 <= len(records) < 48
    assert [row["clip_id"] for row in records] == [f"utt{index:02d}" for index in range(len(records))]
    assert all(row["error"] is None and "si_sdr" in row["scores"] for row in records)
