"""Failing engines: each failure stays with its clip, the run finishes, the
summary counts it.

Already covered elsewhere, not repeated here:
- raises, NaN, wrong length, dtype, type or shape; rebuilt after raising;
  cannot start (tests/run/test_runner.py);
- a command that exits non-zero, is killed by SIGSEGV, hangs past its timeout
  or writes nothing, and the next clip runs in a fresh process; arguments
  never go through a shell (tests/engines/test_user_models.py);
- an rnnoise program that segfaults or hangs, and the next clip runs
  (tests/engines/test_rnnoise.py).

Here: a command or rnnoise program writing garbage, prepare() and rebuild
failures, sys.exit() inside a model, one engine hitting many faults through
the CLI with the summary checked, and an in-process engine whose crash kills
its --jobs worker.
"""
from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import shlex
import signal
import sys
import textwrap

import psutil
import pytest

from nsbench.builtin.engines.passthrough import Passthrough
from nsbench.builtin.metrics.sisdr import si_sdr
from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.run.engine_run import EngineRun
from nsbench.run.runner import run_engine
from nsbench.plugins.specs import EngineSpec

from tests.helpers.audio import tone_and_noise, write_wav
from tests.helpers.plugins import cli_with
from tests.helpers.engine_checks import run_builtin, stationary_sources
from tests.helpers.programs import shell_program
from tests.run.test_runner import engine_spec, metrics, sources
from tests.engines.test_user_models import command, engine

PYTHON = shlex.quote(sys.executable)


def program_by_call(tmp_path, faults: dict[int, str]) -> str:
    """A command engine whose run number n does ``faults[n]`` (Python lines
    with IN, OUT, audio and rate defined) instead of copying its input."""
    counter = tmp_path / "calls"
    branches = "".join(f"elif n == {n}:\n{textwrap.indent(body, '    ')}\n" for n, body in faults.items())
    program = tmp_path / "model.py"
    program.write_text(
        "import sys, numpy as np, soundfile\n"
        "IN, OUT = sys.argv[1], sys.argv[2]\n"
        f"n = int(open({str(counter)!r}).read()) + 1 if __import__('os').path.exists({str(counter)!r}) else 1\n"
        f"open({str(counter)!r}, 'w').write(str(n))\n"
        "audio, rate = soundfile.read(IN, dtype='float32')\n"
        f"if False:\n    pass\n{branches}"
        "else:\n    soundfile.write(OUT, audio, rate, subtype='FLOAT')\n"
    )
    return command(sys.executable, str(program), "{input}", "{output}")


COMMAND_GARBAGE = {
    1: ("open(OUT, 'wb').write(b'Traceback (most recent call last): ...' * 10)",
        r"python3?[\d.]* wrote an \{output\} that is not audio: Format not recognised"),
    2: ("open(OUT, 'wb').close()", r"python3?[\d.]* wrote an \{output\} that is not audio: the file is empty \(0 bytes\)"),
    3: ("audio[5:9] = np.nan\nsoundfile.write(OUT, audio, rate, subtype='FLOAT')", r"engine output has 4 NaN or Inf samples"),
    4: ("soundfile.write(OUT, np.stack([audio, audio], axis=1), rate, subtype='FLOAT')",
        r"engine returned an array of shape \(2, 32000\), expected mono \(1-D\)"),
    5: ("soundfile.write(OUT, audio[:-100], rate, subtype='FLOAT')", r"engine returned 31900 samples for 32000 in"),
    6: ("soundfile.write(OUT, audio[::2], rate // 2, subtype='FLOAT')", r"python3?[\d.]* wrote 8000 Hz audio, expected 16000 Hz"),
}


def test_a_command_writing_garbage_fails_those_clips_only(tmp_path, monkeypatch):
    import re
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    (tmp_path / "tmp").mkdir()
    spec, options = engine(program_by_call(tmp_path, {n: body for n, (body, _) in COMMAND_GARBAGE.items()}))
    outcomes = list(run_engine(EngineRun(spec, options, metrics("si_sdr")), sources(len(COMMAND_GARBAGE) + 1)))
    for outcome, (_, message) in zip(outcomes, COMMAND_GARBAGE.values()):
        assert outcome.record.error and re.fullmatch(message, outcome.record.error), outcome.record.error
    last, clip = outcomes[-1].record, sources(len(outcomes))[-1].load()
    assert last.error is None and last.scores["si_sdr"] == pytest.approx(si_sdr(clip.noisy, clip.clean), rel=1e-12)
    assert list((tmp_path / "tmp").iterdir()) == []  # the private folder went, failures or not


def test_an_rnnoise_program_writing_garbage_fails_those_clips_only(tmp_path, demo_tts_sources, monkeypatch):
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    (tmp_path / "tmp").mkdir()
    counter = shlex.quote(str(tmp_path / "calls"))
    # Run 1 is the calibration probe; runs 2-4 are the first three clips.
    body = f"""
n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); echo "$n" > {counter}
case "$n" in
  2) printf 'Segmentation fault\\n' > "$2"; exit 0 ;;
  3) cat "$1" "$1" > "$2"; exit 0 ;;
  4) printf 'garbage!' > "$2"; exit 0 ;;
esac
exec {PYTHON} -m nsbench.builtin.engines.rnnoise_demo "$@"
"""
    program = shell_program(tmp_path, "rnnoise_demo", body)
    clips = stationary_sources(demo_tts_sources)[:4]
    outcomes = run_builtin("rnnoise", clips, {"rnnoise_demo_path": str(program)})
    given = 4 * 48000 + 960  # a 4 s clip at 48 kHz and the measured delay's zeros
    sent = 480 + given + 480  # a frame in front; behind, whole frames (here none) and a spare one
    label = program.resolve()
    assert [o.record.error for o in outcomes[:3]] == [
        f"{label} wrote 19 bytes, an odd number: not 16-bit samples",
        f"{label} wrote {2 * sent} samples for {sent} in: more than it was given",
        f"{label} wrote 4 samples for {sent} in; expected at least {given}",
    ]
    assert outcomes[3].record.error is None and outcomes[3].record.scores["si_sdri"] > 0.5
    assert list((tmp_path / "tmp").iterdir()) == []  # the private folder went, failures or not


def test_an_engine_that_cannot_prepare_fails_that_clip_and_is_rebuilt():
    class Fragile(Passthrough):
        builds = 0

        def __init__(self):
            super().__init__()
            Fragile.builds += 1
            self.broken = Fragile.builds == 1

        def prepare(self):
            if self.broken:
                raise RuntimeError("state reset failed")

    records = [o.record for o in run_engine(EngineRun(engine_spec(lambda o: Fragile()), {}, metrics("si_sdr")), sources(3))]
    assert [r.error for r in records] == ["engine could not prepare: RuntimeError: state reset failed", None, None]
    assert Fragile.builds == 2  # discarded after its failure, built afresh once


def test_an_engine_that_cannot_be_rebuilt_fails_each_clip_with_the_reason():
    class Once(Passthrough):
        builds = 0

        def __init__(self):
            super().__init__()
            Once.builds += 1
            if Once.builds > 1:
                raise OSError("GPU lost")

        def process(self, audio):
            raise RuntimeError("kernel crashed")

    records = [o.record for o in run_engine(EngineRun(engine_spec(lambda o: Once()), {}, metrics("si_sdr")), sources(3))]
    assert [r.error for r in records] == [
        "engine raised RuntimeError: kernel crashed",
        "engine could not be rebuilt: OSError: GPU lost",
        "engine could not be rebuilt: OSError: GPU lost",
    ]


MODEL = '''
import sys
import numpy as np

CALLS = [0]


def model(audio, rate):
    CALLS[0] += 1
    n = CALLS[0]
    if n == 1:
        return None
    if n == 2:
        return list(audio)
    if n == 3:
        return (audio * 32767).astype(np.int16)
    if n == 4:
        return np.stack([audio, audio])
    if n == 5:
        out = audio.copy()
        out[3] = np.nan
        return out
    if n == 6:
        return audio[:-1]
    if n == 7:
        raise RuntimeError("CUDA out of memory")
    if n == 8:
        sys.exit(3)
    if n == 9:
        return audio.astype(np.complex64)
    return audio * 0.5
'''
PYTHON_FAULTS = [
    "engine returned NoneType, expected a numpy array",
    "engine returned list, expected a numpy array",
    "engine returned dtype int16, expected floating point",
    "engine returned an array of shape (2, 16000), expected mono (1-D)",
    "engine output has 1 NaN or Inf sample",
    "engine returned 15999 samples for 16000 in",
    "engine raised RuntimeError: CUDA out of memory",
    "engine raised SystemExit: the engine called sys.exit(3)",
    "engine returned dtype complex64, expected floating point",
]


def test_one_python_engine_with_many_faults_through_the_cli(tmp_path, monkeypatch):
    name = f"faulty_model_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "data"
    for index in range(len(PYTHON_FAULTS) + 2):
        clean, noise = tone_and_noise(index, seconds=1.0)
        write_wav(data / "clean" / f"clip{index:02d}.wav", clean, 16000)
        write_wav(data / "noisy" / f"clip{index:02d}.wav", clean + noise, 16000)
    stderr = io.StringIO()
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", f"python:{name}:model", "--metric", "si_sdr",
            "--jobs", "1", "--results-folder", str(tmp_path / "results"), "--quiet", "--no-plots", "--no-html"]
    with contextlib.redirect_stderr(stderr):
        assert main(argv) == 4  # every result written; some clips failed
    folder = tmp_path / "results" / "folder"
    result = json.loads((folder / f"python_{name}_model.json").read_text())
    failed = [(f"clip{index:02d}", reason) for index, reason in enumerate(PYTHON_FAULTS)]
    assert (result["clips"], result["failures"]) == (len(PYTHON_FAULTS) + 2, len(PYTHON_FAULTS))
    assert [(f["clip_id"], f["error"]) for f in result["failed_clips"]] == failed
    for clip_id, reason in failed:
        assert f"nsbench: python:{name}:model failed on {clip_id}: {reason}\n" in stderr.getvalue()
    # The clips after the faults score as the baseline does: SI-SDR ignores the gain of 0.5.
    rows = {json.loads(line)["clip_id"]: json.loads(line) for line in (folder / f"python_{name}_model.clips.jsonl").read_text().splitlines()}
    baseline = {json.loads(line)["clip_id"]: json.loads(line) for line in (folder / "passthrough.clips.jsonl").read_text().splitlines()}
    for clip_id in ("clip09", "clip10"):
        assert rows[clip_id]["scores"]["si_sdr"] == pytest.approx(baseline[clip_id]["scores"]["si_sdr"], abs=1e-9)


class CrashesOnLongClips(Passthrough):
    """An in-process engine whose native code crashes the process on one clip (the 0.6 s one)."""

    def process(self, audio):
        if len(audio) == 9600:
            faulthandler.disable()  # pytest's would print the worker's stack
            os.kill(os.getpid(), signal.SIGSEGV)
        return audio.copy()


class CrashPlugin:
    @hookimpl
    def register_engines(self, register):
        register(EngineSpec(name="crashy", factory=lambda options: CrashesOnLongClips(), description="segfaults on 0.6 s clips",
                            sample_rate=None, delay=0))


def test_a_worker_killed_by_a_segfault_fails_its_clip_and_fresh_workers_go_on(tmp_path):
    """In-process engines cannot be protected from their own crash with --jobs 1
    (the run ends, keeping what is done); with workers they can."""
    run_cli = cli_with(CrashPlugin())
    data = tmp_path / "data"
    for index in range(6):
        clean, noise = tone_and_noise(index, seconds=0.6 if index == 2 else 0.5)
        write_wav(data / "clean" / f"clip{index}.wav", clean, 16000)
        write_wav(data / "noisy" / f"clip{index}.wav", clean + noise, 16000)
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", "crashy", "--metric", "si_sdr", "--jobs", "2",
            "--results-folder", str(tmp_path / "results"), "--quiet", "--no-plots", "--no-html"]
    with contextlib.redirect_stderr(io.StringIO()):
        assert run_cli(argv) == 4  # every result written; the crashing clip failed
    folder = tmp_path / "results" / "folder"
    result = json.loads((folder / "crashy.json").read_text())
    reason = ("the worker process running this clip died (signal 11, SIGSEGV): a crash in the engine's native code, "
              "or the system killed it; fresh workers took the next clips")
    assert (result["clips"], result["failed_clips"]) == (6, [{"clip_id": "clip2", "error": reason}])
    rows = [json.loads(line) for line in (folder / "crashy.clips.jsonl").read_text().splitlines()]
    baseline = [json.loads(line) for line in (folder / "passthrough.clips.jsonl").read_text().splitlines()]
    assert [row["clip_id"] for row in rows] == [f"clip{index}" for index in range(6)]
    for row, base in zip(rows, baseline):
        if row["clip_id"] != "clip2":
            assert row["scores"]["si_sdr"] == base["scores"]["si_sdr"]
    assert psutil.Process().children(recursive=True) == []
