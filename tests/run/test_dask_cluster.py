"""--executor dask --scheduler on a real cluster: `dask scheduler` and
`dask worker` started as processes on 127.0.0.1, as docs/cache-and-clusters.md shows. A
worker that cannot import nsbench stops the run in one line, before
anything is computed; workers that can give the serial run's numbers."""
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
    scheduler = [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)]
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
