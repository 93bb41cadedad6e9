"""--jobs: worker processes give the serial run's numbers, and clean up after themselves."""
from __future__ import annotations

import functools
import json
import os

import numpy as np
import pytest

from nsbench.audio.files import load_pair
from nsbench.plugins.records import ClipSource

from nsbench.builtin.engines.passthrough import Passthrough
from nsbench.cli import main
from nsbench.run.executors import ProcessPool
from nsbench.run.engine_run import EngineRun
from nsbench.run.runner import run_engine

from tests.helpers.audio import make_folder_dataset, tone_and_noise, write_wav
from tests.run.test_runner import engine_spec, in_memory_source, metrics

TIMING = {"rtf_cpu", "rtf_wall"}


def scores_without_timing(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["clip_id"], {k: v for k, v in r["scores"].items() if k not in TIMING}, r["undefined"], r["error"]) for r in rows]


def assert_same_scores(serial, parallel):
    assert [row[0] for row in serial] == [row[0] for row in parallel]
    for (clip, a, undefined_a, error_a), (_, b, undefined_b, error_b) in zip(serial, parallel):
        assert (undefined_a, error_a, set(a)) == (undefined_b, error_b, set(b)), clip
        for name, value in a.items():
            assert value == b[name], (clip, name)


def test_jobs_2_gives_exactly_the_serial_results(tmp_path):
    for jobs in ("1", "2"):
        argv = ["--engine", "speex", "--engine", "oracle-irm", "--limit", "10", "--jobs", jobs,
                "--results-folder", str(tmp_path / jobs), "--quiet", "--no-cache"]
        assert main(argv) == 0
    for engine in ("passthrough", "speex", "oracle-irm"):
        serial = scores_without_timing(tmp_path / "1" / "demo" / f"{engine}.clips.jsonl")
        parallel = scores_without_timing(tmp_path / "2" / "demo" / f"{engine}.clips.jsonl")
        assert len(serial) == 10
        assert_same_scores(serial, parallel)
        summaries = [json.loads((tmp_path / j / "demo" / f"{engine}.json").read_text()) for j in ("1", "2")]
        assert [s["provenance"]["jobs"] for s in summaries] == [1, 2]
        for name in summaries[0]["metrics"]:
            if name not in TIMING:
                assert summaries[0]["metrics"][name] == summaries[1]["metrics"][name], (engine, name)
    assert "2 worker processes shared the machine's cores" in (tmp_path / "2" / "demo" / "report.md").read_text()


class Marking(Passthrough):
    """Leaves a file per build and per close, named by process id."""

    def __init__(self, folder):
        super().__init__()
        self.folder = folder
        (folder / f"built-{os.getpid()}").touch()
        self.notes = [f"built in a worker: {os.getpid() != PARENT}"]

    def close(self):
        (self.folder / f"closed-{os.getpid()}").touch()


PARENT = os.getpid()


def file_sources(folder, count: int):
    """Clips read from files: their loaders pickle, so they can go to workers."""
    made = []
    for index in range(count):
        clean, noise = tone_and_noise(index)
        noisy_path = write_wav(folder / "noisy" / f"clip{index}.wav", clean + noise, 16000)
        clean_path = write_wav(folder / "clean" / f"clip{index}.wav", clean, 16000)
        made.append(ClipSource(f"clip{index}", functools.partial(load_pair, f"clip{index}", str(noisy_path), str(clean_path), {})))
    return made


def test_each_worker_builds_its_engine_once_and_closes_it(tmp_path):
    notes: list[str] = []
    marks = tmp_path / "marks"
    marks.mkdir()
    spec = engine_spec(lambda options: Marking(marks))
    outcomes = list(run_engine(EngineRun(spec, {}, metrics("si_sdr")), file_sources(tmp_path / "data", 6), notes, executor=ProcessPool(2)))
    assert [o.record.clip_id for o in outcomes] == [f"clip{i}" for i in range(6)]
    built = {p.name.split("-")[1] for p in marks.glob("built-*")}
    closed = {p.name.split("-")[1] for p in marks.glob("closed-*")}
    assert built == closed and str(PARENT) in built and 2 <= len(built) <= 3
    assert notes == ["built in a worker: False", "built in a worker: True"]


def test_clips_that_cannot_be_sent_to_workers_run_serially_and_say_so():
    clean = np.zeros(1600, np.float32)
    unpicklable = [in_memory_source(f"c{i}", clean + 0.1, clean + 0.1) for i in range(3)]  # a lambda loader
    notes: list[str] = []
    outcomes = list(run_engine(EngineRun(engine_spec(lambda o: Passthrough()), {}, metrics("si_sdr")), unpicklable, notes, executor=ProcessPool(2)))
    assert len(outcomes) == 3 and all(not o.record.failed for o in outcomes)
    assert notes and notes[0].startswith("ran serially: the dataset's clips cannot be sent to worker processes")


BUILD_AHEAD_PLUGIN = '''
import os, time
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import EngineSpec

def log(*words):
    with open(os.environ["BUILD_LOG"], "a") as handle:
        handle.write(" ".join(str(word) for word in words) + "\\n")

class Slow:
    """Its clips take a while, so the next engine's build can fall within them."""
    def process(self, audio):
        time.sleep(0.3)
        log("slow-clip-done", time.time())
        return audio
    def close(self):
        pass

class Next:
    def __init__(self):
        log("next-built", os.getpid(), time.time())
    def process(self, audio):
        return 0.5 * audio
    def close(self):
        pass

def broken(options):
    log("broken-build", os.getpid())
    raise RuntimeError("no model here")

@hookimpl
def register_engines(register):
    register(EngineSpec(name="slow", factory=lambda options: Slow(), description="sleeps", sample_rate=16000, delay=0))
    register(EngineSpec(name="next", factory=lambda options: Next(), description="halves", sample_rate=16000, delay=0))
    register(EngineSpec(name="broken", factory=broken, description="cannot start", sample_rate=16000, delay=0))
'''


def test_the_next_engine_is_built_while_this_ones_clips_run(tmp_path, monkeypatch, capsys):
    """With worker processes the parent builds the next engine (a model to
    load, a delay to measure) during the current engine's clips, once, and
    hands it to that engine's run; a build that fails is reported once, at
    the engine's own turn, as without building ahead."""
    plugin = tmp_path / "build_ahead_plugin.py"
    plugin.write_text(BUILD_AHEAD_PLUGIN)
    log = tmp_path / "build.log"
    monkeypatch.setenv("BUILD_LOG", str(log))
    data = make_folder_dataset(tmp_path / "data", 4)
    argv = ["--plugin", str(plugin), "--engine", "slow", "--engine", "next", "--engine", "broken", "--dataset", "folder",
            "--data-folder", str(data), "--metric", "si_sdr", "--jobs", "2", "--no-cache", "--quiet", "--no-plots",
            "--no-html", "--results-folder", str(tmp_path / "results")]
    assert main(argv) == 4  # every result written; "broken", asked for by name, could not start
    lines = [line.split() for line in log.read_text().splitlines()]
    parent = str(os.getpid())
    next_in_parent = [float(line[2]) for line in lines if line[0] == "next-built" and line[1] == parent]
    assert len(next_in_parent) == 1  # built ahead, then used: not built again
    slow_done = sorted(float(line[1]) for line in lines if line[0] == "slow-clip-done")
    assert len(slow_done) == 4 and next_in_parent[0] < slow_done[-1]  # while slow's clips ran
    # "broken" is built ahead during next's clips and fails; its own turn
    # builds it again and reports it.
    assert [line[0] for line in lines].count("broken-build") == 2
    err = capsys.readouterr().err
    assert err.count("nsbench: broken skipped: engine 'broken' could not start: RuntimeError: no model here") == 1
    summary = json.loads((tmp_path / "results" / "folder" / "next.json").read_text())
    assert summary["metrics"]["si_sdr"]  # the engine built ahead ran its clips


BLAS_PLUGIN = '''
import os
from threadpoolctl import threadpool_info
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import EngineSpec

class Counting:
    """Logs the BLAS threads its process may use, per clip."""
    def process(self, audio):
        threads = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
        with open(os.environ["BLAS_LOG"], "a") as handle:
            handle.write(f"{os.getpid()} {max(threads)}\\n")
        return audio
    def close(self):
        pass

@hookimpl
def register_engines(register):
    register(EngineSpec(name="blas-counting", factory=lambda options: Counting(), description="logs", sample_rate=16000, delay=0))
'''


def test_worker_processes_keep_to_one_blas_thread(tmp_path, monkeypatch):
    """Each worker is a core's work: a BLAS thread pool per worker would take
    the cores the other workers run on (OpenBLAS starts one thread per core)."""
    from threadpoolctl import threadpool_info

    blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    if not blas or max(blas) < 2:
        pytest.skip("BLAS runs one thread here anyway")
    plugin = tmp_path / "blas_plugin.py"
    plugin.write_text(BLAS_PLUGIN)
    log = tmp_path / "blas.log"
    monkeypatch.setenv("BLAS_LOG", str(log))
    data = make_folder_dataset(tmp_path / "data", 4)
    argv = ["--plugin", str(plugin), "--engine", "blas-counting", "--dataset", "folder", "--data-folder", str(data),
            "--metric", "si_sdr", "--jobs", "2", "--no-cache", "--quiet", "--no-plots", "--no-html",
            "--results-folder", str(tmp_path / "results")]
    assert main(argv) == 0
    rows = [line.split() for line in log.read_text().splitlines()]
    assert len(rows) == 4 and {pid for pid, _ in rows} != {str(os.getpid())}
    assert {threads for _, threads in rows} == {"1"}
    assert max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas") == max(blas)  # restored after
