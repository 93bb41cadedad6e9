"""--executor dask: the same numbers as a serial run and --jobs 2 on a local
cluster of real worker processes; a scheduler that does not answer; a worker
that dies."""
from __future__ import annotations

import importlib.util
import json
import textwrap

import pytest

from nsbench.cli import main

from tests.helpers.audio import make_folder_dataset, tone_and_noise
from tests.helpers.plugins import QUIETER_PLUGIN as PLUGIN
from tests.run.test_parallel import TIMING

# Looked up, not imported: importing distributed costs ~1 s of every collection.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="distributed is not installed")

def run_in_subprocess(argv: list[str], expected_code: int = 0, **env: str) -> None:
    """A Dask run in its own process: a local cluster leaves multiprocessing's
    resource tracker running as a child of the process that started it, which
    later tests that count their children would see."""
    import os
    import subprocess
    import sys

    from tests.helpers.paths import REPO_ROOT

    result = subprocess.run([sys.executable, "benchmark.py", *argv], cwd=REPO_ROOT, env={**os.environ, **env},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == expected_code, result.stderr


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_timing(row):
    return row["clip_id"], {k: v for k, v in row["scores"].items() if k not in TIMING}, row["undefined"], row["error"], row["flags"]


def test_serial_jobs_and_a_local_dask_cluster_give_identical_numbers(tmp_path):
    plugin = tmp_path / "quieter_plugin.py"
    plugin.write_text(PLUGIN)
    common = ["--plugin", str(plugin), "--engine", "quieter", "--engine", "speex", "--limit", "8", "--no-cache",
              "--quiet", "--no-plots", "--no-html"]
    runs = {"serial": ["--jobs", "1"], "jobs": ["--jobs", "2"], "dask": ["--executor", "dask", "--jobs", "3"]}
    for name, flags in runs.items():
        argv = [*common, *flags, "--results-folder", str(tmp_path / name)]
        if name == "dask":
            run_in_subprocess(argv)
        else:
            assert main(argv) == 0
    for engine in ("passthrough", "quieter", "speex"):
        serial, *others = ([without_timing(row) for row in rows(tmp_path / name / "demo" / f"{engine}.clips.jsonl")] for name in runs)
        assert len(serial) == 8 and all(row[3] is None for row in serial)
        assert all(other == serial for other in others), engine
        summaries = [json.loads((tmp_path / name / "demo" / f"{engine}.json").read_text())["metrics"] for name in runs]
        for metric in set(summaries[0]) - TIMING:
            assert summaries[0][metric] == summaries[1][metric] == summaries[2][metric], (engine, metric)


def test_a_scheduler_that_does_not_answer_is_one_line_and_nothing_runs(tmp_path, capsys):
    code = main(["--engine", "speex", "--limit", "2", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9",
                 "--results-folder", str(tmp_path / "results"), "--quiet", "--no-cache"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("nsbench: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 within ")
    assert not (tmp_path / "results" / "demo").exists() or not any((tmp_path / "results" / "demo").glob("*.json"))


def test_scheduler_without_dask_executor_is_refused(capsys):
    assert main(["--scheduler", "tcp://127.0.0.1:9", "--limit", "1"]) == 2
    assert "--scheduler is for --executor dask" in capsys.readouterr().err


def test_a_clip_whose_worker_dies_twice_fails_and_the_others_score(tmp_path):
    """A real worker process exits in the engine on one clip; the scheduler
    retries that clip once on another worker, then it is recorded as failed."""
    data = make_folder_dataset(tmp_path / "data", 8, seconds=lambda index: 0.5 + 0.1 * index)
    plugin = tmp_path / "quieter_plugin.py"
    plugin.write_text(PLUGIN)
    results = tmp_path / "results"
    run_in_subprocess(["--plugin", str(plugin), "--engine", "quieter", "--dataset", "folder", "--data-folder", str(data),
                       "--metric", "si_sdr", "--executor", "dask", "--jobs", "2", "--results-folder", str(results),
                       "--quiet", "--no-plots", "--no-html", "--no-cache"],
                      expected_code=4,  # every result written; utt2 failed
                      DIE_ON_LENGTH=str(len(tone_and_noise(2, seconds=0.7)[0])))
    records = {row["clip_id"]: row for row in rows(results / "folder" / "quieter.clips.jsonl")}
    assert sorted(records) == [f"utt{index}" for index in range(8)]
    assert records["utt2"]["error"].startswith("the Dask workers running this clip died, as often as the scheduler allows")
    # A death counts against the clip that caused it, never against one waiting beside it.
    assert {clip for clip, row in records.items() if row["error"] is None and "si_sdr" in row["scores"]} == set(records) - {"utt2"}


def test_ctrl_c_during_a_dask_run_stops_it_cleanly(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C: the workers
    ignore it, the parent stops them, keeps the clips done and exits 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers.paths import REPO_ROOT

    data = make_folder_dataset(tmp_path / "data", 30, seconds=0.5, name="utt{index:02d}")
    plugin = tmp_path / "quieter_plugin.py"
    plugin.write_text(PLUGIN)
    results = tmp_path / "results"
    command = [sys.executable, "benchmark.py", "--plugin", str(plugin), "--engine", "quieter", "--dataset", "folder",
               "--data-folder", str(data), "--metric", "si_sdr", "--executor", "dask", "--jobs", "2",
               "--results-folder", str(results), "--quiet", "--no-plots", "--no-html"]
    process = subprocess.Popen(command, cwd=REPO_ROOT, env={**os.environ, "ENGINE_SLEEP": "0.3"},
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                               start_new_session=True)
    log = results / "folder" / "quieter.clips.jsonl"
    deadline = time.monotonic() + 120
    while not (log.is_file() and len(log.read_text().splitlines()) >= 3):
        assert process.poll() is None and time.monotonic() < deadline, "the run ended or stalled"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.splitlines()[0].startswith("nsbench: interrupted by SIGINT during quieter, after ")
    done = rows(log)
    assert 3 <= len(done) < 30 and all(row["error"] is None for row in done)
    # The workers end with the run (they may take a moment to notice).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        left = subprocess.run(["ps", "-o", "pid,etime,args", "-g", str(process.pid)], capture_output=True, text=True).stdout
        raise AssertionError(f"processes left after the run:\n{left}")


def test_the_parent_keeps_distributeds_message_logs_short():
    """Each task's message (its batch of clips and the engine's run) stays in
    the client's log of recent messages and the scheduler's transition log:
    at distributed's default of 1,000 that held a 100,000-clip run's parent
    ~60 MB higher (nsbench.run.dask_executor.SHORT_LOGS). The limit must be
    in force where those logs are made, as the cluster and client start. In
    a subprocess: a local cluster leaves multiprocessing's resource tracker
    behind in the process that started it."""
    import subprocess
    import sys

    from nsbench.run.dask_executor import SHORT_LOGS

    probe = textwrap.dedent(
        """
        import json
        from nsbench.run.dask_executor import dask_client
        with dask_client(None, 1) as client:
            scheduler = client.cluster.scheduler
            print(json.dumps({"client": client.scheduler_comm.recent_message_log.maxlen,
                              "transitions": scheduler.transition_log.maxlen,
                              "to_clients": [c.recent_message_log.maxlen for c in scheduler.client_comms.values()]}))
        """
    )
    found = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                      timeout=120).stdout.splitlines()[-1])
    length = SHORT_LOGS["distributed.admin.low-level-log-length"]
    assert length < 1000
    assert found == {"client": length, "transitions": length, "to_clients": [length]}, found


def test_no_process_is_left_behind_by_these_tests():
    import psutil

    assert psutil.Process().children(recursive=True) == []


# A dataset and a metric from a plugin file, their functions at module level:
# plain pickle stores those by reference to a module the workers cannot import
# (the workers died decoding the task and the run hung at 0 clips).
DATASET_PLUGIN = textwrap.dedent(
    """
    import functools
    import numpy as np
    import nsbench

    def load_clip(index):
        rng = np.random.default_rng(index)
        t = np.arange(8000) / 16000
        clean = (0.3 * np.sin(2 * np.pi * (150 + 20 * index) * t)).astype(np.float32)
        noise = (0.05 * rng.standard_normal(8000)).astype(np.float32)
        return nsbench.Clip(clip_id=f"tone{index}", noisy=clean + noise, clean=clean, sample_rate=16000,
                            noise=noise, labels={"band": "low" if index < 3 else "high"})

    def sources(options):
        return [nsbench.ClipSource(clip_id=f"tone{i}", load=functools.partial(load_clip, i),
                                   labels={"band": "low" if i < 3 else "high"}) for i in range(6)]

    def output_rms(inputs):
        return float(np.sqrt(np.mean(inputs.output.astype(np.float64) ** 2)))

    @nsbench.hookimpl
    def register_datasets(register):
        register(nsbench.DatasetSpec(name="tones", clips=sources, cell_keys=("band",), description="six tones in noise"))

    @nsbench.hookimpl
    def register_metrics(register):
        register(nsbench.MetricSpec(name="output_rms", func=output_rms, unit="", higher_is_better=True,
                                    description="the output's RMS", ignores="everything but level", default=False))
    """
)


@pytest.mark.slow
def test_a_dataset_and_a_metric_from_a_plugin_file_run_on_a_local_dask_cluster(tmp_path):
    plugin = tmp_path / "tones_plugin.py"
    plugin.write_text(DATASET_PLUGIN)
    common = ["--plugin", str(plugin), "--dataset", "tones", "--engine", "speex", "--metric", "output_rms",
              "--metric", "si_sdr", "--no-cache", "--quiet", "--no-plots", "--no-html"]
    assert main([*common, "--jobs", "1", "--results-folder", str(tmp_path / "serial")]) == 0
    run_in_subprocess([*common, "--executor", "dask", "--jobs", "2", "--results-folder", str(tmp_path / "dask")])
    for engine in ("passthrough", "speex"):
        serial, on_dask = ([without_timing(row) for row in rows(tmp_path / name / "tones" / f"{engine}.clips.jsonl")]
                           for name in ("serial", "dask"))
        assert len(serial) == 6 and all(row[3] is None and "output_rms" in row[1] for row in serial)
        assert on_dask == serial, engine


@pytest.mark.slow
def test_a_worker_that_cannot_unpickle_a_clip_ends_the_run_in_one_line(tmp_path):
    """The clips' load functions hold an object of a module made in the
    parent alone (as a module on the parent's path only would be; the
    workers run the plugin file too, in processes of their own name): each
    worker fails to unpickle the clip, and the run stops at once instead of
    hanging."""
    plugin = tmp_path / "tones_plugin.py"
    plugin.write_text(DATASET_PLUGIN + textwrap.dedent(
        """
        import multiprocessing, sys, types
        only_here = types.ModuleType("only_in_the_parent" if multiprocessing.current_process().name == "MainProcess" else "elsewhere")
        class Gain:
            def __call__(self, clip):
                return clip
        Gain.__module__ = "only_in_the_parent"
        only_here.Gain = Gain
        sys.modules[only_here.__name__] = only_here

        def load_through(gain, index):
            return gain(load_clip(index))

        def sources(options):
            return [nsbench.ClipSource(clip_id=f"tone{i}", load=functools.partial(load_through, Gain(), i),
                                       labels={"band": "low"}) for i in range(6)]
        """
    ))
    import subprocess
    import sys

    from tests.helpers.paths import REPO_ROOT

    argv = ["--plugin", str(plugin), "--dataset", "tones", "--engine", "speex", "--metric", "si_sdr", "--executor", "dask",
            "--jobs", "2", "--no-cache", "--quiet", "--no-plots", "--no-html", "--results-folder", str(tmp_path / "r")]
    result = subprocess.run([sys.executable, "benchmark.py", *argv], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    ours = [line for line in result.stderr.splitlines() if line.startswith("nsbench:")]
    assert result.returncode == 2, result.stderr[-3000:]
    # One line of ours (distributed may add its own about stopping workers on a loaded machine).
    assert ours == ["nsbench: error: a Dask worker cannot unpickle a clip of the dataset: ModuleNotFoundError: "
                    "No module named 'only_in_the_parent': install it on every worker; the clips done so far are kept"], ours
    assert "Traceback" not in result.stderr


def batched_run(tmp_path, name, flags, **env):
    """24 clips of lengths 0.5 s + 0.02 s x index on the quieter engine:
    on 2 Dask workers, batches of 3 (nsbench.run.dask_executor.batch_size)."""
    data = make_folder_dataset(tmp_path / "data", 24, seconds=lambda index: 0.5 + 0.02 * index, name="utt{index:02d}")
    plugin = tmp_path / "quieter_plugin.py"
    plugin.write_text(PLUGIN)
    results = tmp_path / name
    run_in_subprocess(["--plugin", str(plugin), "--engine", "quieter", "--dataset", "folder", "--data-folder", str(data),
                       "--metric", "si_sdr", *flags, "--results-folder", str(results), "--quiet", "--no-plots",
                       "--no-html", "--no-cache"], expected_code=4 if env else 0, **env)
    return rows(results / "folder" / "quieter.clips.jsonl")


def test_clips_in_batches_score_as_a_local_run_in_clip_order(tmp_path):
    from nsbench.run.dask_executor import batch_size

    assert batch_size(24, 2) == 3  # more clips than a batch, several batches a worker
    local = batched_run(tmp_path, "local", ["--jobs", "1"])
    dask = batched_run(tmp_path, "dask", ["--executor", "dask", "--jobs", "2"])
    assert [row["clip_id"] for row in dask] == [f"utt{index:02d}" for index in range(24)]
    assert [without_timing(row) for row in dask] == [without_timing(row) for row in local]
    assert all(row["error"] is None and "si_sdr" in row["scores"] for row in dask)


def test_a_failing_clip_inside_a_batch_fails_alone(tmp_path):
    failing = len(tone_and_noise(4, seconds=0.5 + 0.02 * 4)[0])  # utt04, the middle of the second batch
    records = batched_run(tmp_path, "dask", ["--executor", "dask", "--jobs", "2"], FAIL_ON_LENGTH=str(failing))
    assert [row["clip_id"] for row in records] == [f"utt{index:02d}" for index in range(24)]
    failed = [row["clip_id"] for row in records if row["error"] is not None]
    assert failed == ["utt04"]
    assert "this clip fails in the engine" in records[4]["error"]
    assert all("si_sdr" in row["scores"] for row in records if row["clip_id"] != "utt04")


def test_a_batch_with_no_result_within_the_stall_limit_ends_the_run_in_one_line(tmp_path):
    """The engine takes 30 s a clip; $NSBENCH_DASK_STALL is 2 s: the run
    stops in one line instead of waiting (a real slow engine stands in for a
    stuck worker, which gives no result the same way)."""
    import os
    import subprocess
    import sys

    from tests.helpers.paths import REPO_ROOT

    data = make_folder_dataset(tmp_path / "data", 2, seconds=0.5, name="utt{index:02d}")
    plugin = tmp_path / "quieter_plugin.py"
    plugin.write_text(PLUGIN)
    argv = ["--plugin", str(plugin), "--engine", "quieter", "--dataset", "folder", "--data-folder", str(data), "--metric",
            "si_sdr", "--executor", "dask", "--jobs", "1", "--no-cache", "--quiet", "--no-plots", "--no-html",
            "--results-folder", str(tmp_path / "r")]
    env = {**os.environ, "ENGINE_SLEEP": "30", "NSBENCH_DASK_STALL": "2"}
    result = subprocess.run([sys.executable, "benchmark.py", *argv], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    ours = [line for line in result.stderr.splitlines() if line.startswith("nsbench:")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert ours == ["nsbench: error: no result in 2 s for the Dask batch from clip utt00 (1 clip; 2 batches in flight): are "
                    "its workers alive and able to run nsbench? ($NSBENCH_DASK_STALL sets the limit, 0 none); the clips done "
                    "so far are kept"], result.stderr[-3000:]
