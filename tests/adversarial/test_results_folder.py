"""Issue 36, the results folder: how a run writes its files when names,
folders, another run or the disk work against it (F-02, F-04, F-05, F-06,
F-08). Rows in docs/failures.md (the adversarial family).

Each run here is a real run of the CLI on a plugin dataset of three half-second
tones (an engine that halves its input, si_sdr only, --jobs 1), so that what
is tried is the writer, not the engines.
"""
from __future__ import annotations

import concurrent.futures
import errno
import hashlib
import json
import multiprocessing
import os
import shutil
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nsbench.cli import main
from nsbench.plugins.errors import UserError
from nsbench.plugins.hookspecs import hookimpl
from nsbench.report import clip_log, listening_grid
from nsbench.report.model import RUN_FILE_STEMS, check_file_names, file_stem
from nsbench.store import folders
from nsbench.store.folders import MARKER

from tests.helpers.audio import make_folder_dataset, tone_and_noise
from tests.helpers.paths import REPO_ROOT
from tests.helpers.plugins import cli_with

QUICK = ["--metric", "si_sdr", "--jobs", "1", "--no-cache", "--no-plots", "--quiet"]


class HostilePlugin:
    """A dataset ``dataset`` whose clips have the ids given, and engines of
    the names given (each halves its input)."""

    def __init__(self, clip_ids=("c0", "c1", "c2"), engines=("halving",), dataset="hostile"):
        self.clip_ids, self.engines, self.dataset = clip_ids, engines, dataset

    @hookimpl
    def register_datasets(self, register):
        from nsbench.plugins.records import Clip, ClipSource
        from nsbench.plugins.specs import DatasetSpec

        def clips(options):
            made = []
            for index, clip_id in enumerate(self.clip_ids):
                clean, noise = tone_and_noise(index, seconds=0.5)
                clip = Clip(clip_id, clean + noise, clean, 16000, labels={"kind": "tone"})
                made.append(ClipSource(clip_id, (lambda c=clip: c), clip.labels))
            return made

        register(DatasetSpec(name=self.dataset, clips=clips, description="tones", cell_keys=("kind",)))

    @hookimpl
    def register_engines(self, register):
        from nsbench.plugins.specs import EngineSpec

        for name in self.engines:
            register(EngineSpec(name=name, factory=lambda options: Halving(), description="halves", sample_rate=16000,
                                delay=0, default=False))


class Halving:
    sample_rate, delay = 16000, 0

    def process(self, audio):
        return 0.5 * audio

    def close(self):
        pass


def run(monkeypatch, capsys, plugin: HostilePlugin, *flags: str) -> tuple[int, list[str]]:
    """The CLI on the plugin's dataset with each of its engines: the exit code and stderr's lines."""
    engines = [flag for name in plugin.engines for flag in ("--engine", name)]
    code = main(["--dataset", plugin.dataset, *engines, *QUICK, *flags], plugins=[plugin])
    return code, capsys.readouterr().err.strip().splitlines()


def run_folder(monkeypatch, capsys, tmp_path: Path, plugin: HostilePlugin, *flags: str) -> str:
    """The name of the folder a run of ``plugin`` writes in under the results
    folder (nsbench.report.run_folders): one run elsewhere, and its link read."""
    scratch = tmp_path / "scratch-results"
    assert run(monkeypatch, capsys, plugin, "--results-folder", str(scratch), *flags)[0] == 0
    return os.readlink(scratch / plugin.dataset)


def files_under(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}


def digests(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in files_under(folder)}


# ------------------------------------------------------------------ F-02 names never become paths outside


@pytest.mark.parametrize("bad", ["../../x", "ABSOLUTE"])
def test_f02_a_clip_id_leaving_the_folders_is_refused_before_anything_runs(monkeypatch, capsys, tmp_path, bad):
    """F-02: a plugin dataset's clip id ``../../x`` or an absolute path wrote
    outside the output folder (writer.py:152) and the listening grid's audio
    (listening_grid.py:219,244). Now refused in one line, nothing written."""
    sandbox = tmp_path / "a" / "b"
    clip_id = str(tmp_path / "elsewhere" / "x") if bad == "ABSOLUTE" else bad
    results, outputs = sandbox / "results", sandbox / "outputs"
    code, err = run(monkeypatch, capsys, HostilePlugin(("c0", clip_id)), "--results-folder", str(results),
                    "--output-folder", str(outputs))
    reason = "it is an absolute path" if bad == "ABSOLUTE" else "it climbs out with '..'"
    assert (code, err) == (2, [f"nsbench: error: clip id {clip_id!r} of dataset 'hostile' cannot name its output file: {reason}"])
    assert files_under(tmp_path) <= {f"a/b/results/hostile/{MARKER}"}  # nothing outside, no clip run


def test_f02_the_grid_refuses_a_path_that_leaves_its_folder(tmp_path):
    """F-02 at the sink: the listening grid's copies go through folders.inside."""
    with pytest.raises(UserError, match=r"'audio/_input/\.\./\.\./\.\./x\.wav' cannot name a file in .*: it climbs out"):
        folders.inside(tmp_path, "audio/_input/../../../x.wav")
    assert folders.inside(tmp_path, "audio/_input/track/12s.wav") == tmp_path / "audio/_input/track/12s.wav"  # MUSDB's subfolders


@pytest.mark.parametrize("name", ["..", "../../up"])
def test_f02_an_engine_name_never_names_a_folder_outside(capsys, tmp_path, name):
    """F-02: a command engine named ``..`` (--command-name) had the stem
    ``..``: its outputs went to ``--output-folder/../``. Stems are never
    hidden, ``.`` or ``..``."""
    results, outputs = tmp_path / "run" / "results", tmp_path / "run" / "outputs"
    command = f"command:{sys.executable} {REPO_ROOT / 'examples' / 'command_model.py'} --in {{input}} --out {{output}}"
    code = main(["--dataset", "hostile", "--engine", command, "--command-name", name, *QUICK, "--results-folder", str(results),
                 "--output-folder", str(outputs), "--no-html"], plugins=[HostilePlugin(engines=())])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 0 and line.startswith(f"nsbench: results in {results / 'hostile'}-")
    outside = {name for name in files_under(tmp_path) if not name.startswith(("run/results/hostile-", "run/outputs/"))}
    assert outside == set()
    assert f"{file_stem(name)}/c0.wav" in files_under(outputs)


@pytest.mark.parametrize("name", ["..", ".", "._x", "../../up", "a/../../b", "_x"])
def test_f02_a_stem_is_never_hidden_dots_or_a_grid_folder(name):
    stem = file_stem(name)
    assert stem not in ("", ".", "..") and not stem.startswith((".", "_")) and "/" not in stem


# ------------------------------------------------------------------ F-04 never overwrite what nsbench did not write


def test_f04_output_folder_set_to_the_data_folder_is_refused_and_the_data_kept(capsys, tmp_path):
    """F-04: ``--output-folder`` set to the data folder, with an engine named
    ``noisy``, rewrote the dataset's WAV files (writer.py:150-152)."""
    data = make_folder_dataset(tmp_path / "data", count=2, seconds=0.5)
    before = digests(data)
    run_cli = cli_with(HostilePlugin(engines=("noisy",)))
    code = run_cli(["--dataset", "folder", "--data-folder", str(data), "--engine", "noisy", *QUICK,
                 "--results-folder", str(tmp_path / "results"), "--output-folder", str(data)])
    err = capsys.readouterr().err.strip().splitlines()
    assert (code, err) == (2, [f"nsbench: error: the output folder {data} holds files nsbench did not write (it has no {MARKER} "
                               "marker): give a new or empty folder, or move those files away"])
    assert digests(data) == before
    assert not list((tmp_path / "results").rglob("*.clips.jsonl"))  # refused before the first clip


def test_f04_a_results_folder_of_someone_elses_files_is_not_emptied(monkeypatch, capsys, tmp_path):
    """F-04: results/<dataset>/audio/ is removed as an earlier run's listening
    grid; in a folder nsbench did not write, it is the user's own. Both the
    run's own folder and results/<dataset> (the link to the latest) may be one."""
    name = run_folder(monkeypatch, capsys, tmp_path, HostilePlugin())
    for folder in (tmp_path / "mine" / name, tmp_path / "mine" / "hostile"):
        (folder / "audio").mkdir(parents=True)
        (folder / "audio" / "take1.wav").write_bytes(b"RIFF mine")
        (folder / "report.md").write_text("my notes")
    code, err = run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path / "mine"))
    folder = tmp_path / "mine" / name
    assert code == 2 and err == [f"nsbench: error: the results folder {folder} holds files nsbench did not write (it has no "
                                 f"{MARKER} marker): give a new or empty folder, or move those files away"]
    for folder in (tmp_path / "mine" / name, tmp_path / "mine" / "hostile"):
        assert files_under(folder) == {"audio/take1.wav", "report.md"} and (folder / "report.md").read_text() == "my notes"
    shutil.rmtree(tmp_path / "mine" / name)  # the run's own folder free, the user's results/hostile stays
    code, err = run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path / "mine"))
    assert code == 0 and "stays as it is" in err[0] and (tmp_path / "mine" / "hostile" / "report.md").read_text() == "my notes"


def test_f04_folders_nsbench_wrote_are_written_again(monkeypatch, capsys, tmp_path):
    """F-04, what still works: a new folder, an empty one, one nsbench marked,
    and a results folder an nsbench before markers wrote (it holds a .clips.jsonl)."""
    results, outputs = tmp_path / "results", tmp_path / "outputs"
    outputs.mkdir()  # empty: taken
    plugin = HostilePlugin()
    assert run(monkeypatch, capsys, plugin, "--results-folder", str(results), "--output-folder", str(outputs), "--no-html")[0] == 0
    assert (results / "hostile" / MARKER).is_file() and (outputs / MARKER).is_file()
    assert run(monkeypatch, capsys, plugin, "--results-folder", str(results), "--output-folder", str(outputs), "--no-html")[0] == 0
    (results / "hostile" / MARKER).unlink()  # as an nsbench before markers left it
    assert run(monkeypatch, capsys, plugin, "--results-folder", str(results), "--no-html")[0] == 0
    assert (results / "hostile" / MARKER).is_file()


def test_f04_claim_is_the_one_check_for_any_folder(tmp_path):
    """F-04: folders.claim, which the listen command can use for --output too."""
    assert folders.claim(tmp_path / "new" / "test", "the test folder") == tmp_path / "new" / "test" / MARKER
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "a.wav").write_bytes(b"x")
    with pytest.raises(folders.FolderRefused, match=r"^the test folder .*theirs holds files nsbench did not write"):
        folders.claim(tmp_path / "theirs", "the test folder")
    assert folders.claim(tmp_path / "theirs", "the test folder", adopt=lambda folder: True).is_file()
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(folders.FolderRefused, match=r"a-file is a file, not a folder$"):
        folders.claim(tmp_path / "a-file", "the test folder")


# ------------------------------------------------------------------ F-05 one engine, one file


def test_f05_two_command_engines_of_one_file_name_are_refused_before_anything_runs(capsys, tmp_path):
    """F-05: ``command:/x/a+b.sh`` and ``command:/x/a_b.sh`` had one stem: each
    truncated the other's .clips.jsonl, then record_table.py:262 crashed."""
    program = (REPO_ROOT / "examples" / "command_model.py").read_text()
    engines = []
    for name in ("a+b.py", "a_b.py"):
        (tmp_path / name).write_text(program)
        engines.append(f"command:{sys.executable} {tmp_path / name} --in {{input}} --out {{output}}")
    run_cli = cli_with(HostilePlugin())
    code = run_cli(["--dataset", "hostile", "--engine", engines[0], "--engine", engines[1], *QUICK,
                 "--results-folder", str(tmp_path / "results")])
    stem = file_stem(engines[0])
    assert stem == file_stem(engines[1])
    assert (code, capsys.readouterr().err.strip().splitlines()) == (
        2, [f"nsbench: error: engines {engines[0]!r} and {engines[1]!r} would both write {stem}.json and {stem}.clips.jsonl: "
            "give one of them another name"])
    assert not list((tmp_path / "results").rglob("*.jsonl"))


@pytest.mark.parametrize("engine", ["agreement", "comparison", "listening-key", "report", "ranking", "human-agreement", "Agreement"])
def test_f05_an_engine_may_not_take_a_name_the_run_keeps(monkeypatch, capsys, tmp_path, engine):
    """F-05: an engine named ``agreement`` lost its JSON to the panel's
    agreement.json (writer.py:270); comparison, listening-key and report the
    same; ranking and human-agreement are the open issues' files."""
    code, err = run(monkeypatch, capsys, HostilePlugin(engines=(engine,)), "--results-folder", str(tmp_path))
    assert (code, err) == (2, [f"nsbench: error: engine {engine!r} would write {engine}.json, a name the run keeps for its own "
                               "files; give it another name"])


def test_f05_stems_differ_without_regard_to_case_and_the_reserved_list_holds_every_own_file():
    """F-05: Report.json and report.json are one file on macOS; the files the
    listen command and the plots write are on the reserved list."""
    from nsbench.listen import build
    from nsbench.report import listening_section

    with pytest.raises(UserError, match="engines 'Fast' and 'fast' would both write fast.json"):
        check_file_names("set", ["Fast", "fast"], [])
    check_file_names("set", ["a+b", "a-b", "passthrough"], ["x", "track/12s"])  # stems a_b, a-b, passthrough
    own = [build.KEY_FILE, listening_section.RESULTS_JSON, listening_section.RESULTS_MD, "report.md", "report.html",
           "comparison.json", "agreement.json", listening_grid.AUDIO_FOLDER]
    assert {Path(name).stem for name in own} <= set(RUN_FILE_STEMS)


# ------------------------------------------------------------------ F-06 one run per results folder


def test_f06_a_second_run_on_a_held_results_folder_refuses_naming_the_first(monkeypatch, capsys, tmp_path):
    """F-06: two runs 3 s apart on one results folder both crashed with
    JSONDecodeError and lost clips. The first run is this test holding the
    folder's lock (deterministic: no two runs racing)."""
    folder = tmp_path / run_folder(monkeypatch, capsys, tmp_path, HostilePlugin())
    with folders.held(folder, "the results folder", "benchmark.py --engine speex"):
        started = json.loads((folder / MARKER).read_text())["started"]
        code, err = run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path))
        assert files_under(folder) == {MARKER}  # not a clip line written
    assert (code, err) == (2, [f"nsbench: error: the results folder {folder} is in use by another nsbench run (pid {os.getpid()}, "
                               f"started {started}: benchmark.py --engine speex): wait for it to end, or give this run another folder"])
    assert run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path))[0] == 0  # released


def test_f06_the_lock_of_a_killed_run_is_taken_over(monkeypatch, capsys, tmp_path):
    """F-06: a run killed with SIGKILL leaves its marker naming it; the kernel
    released its lock, so the next run takes the folder and names itself."""
    folder = tmp_path / run_folder(monkeypatch, capsys, tmp_path, HostilePlugin())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom nsbench.store import folders\n"
         f"with folders.held(__import__('pathlib').Path({str(folder)!r}), 'the results folder', 'killed run'):\n"
         "    print('held', flush=True)\n    time.sleep(60)\n"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"  # blocks until the lock is held (or the child ends: "")
    finally:
        holder.kill()
        holder.wait()
    assert json.loads((folder / MARKER).read_text())["pid"] == holder.pid
    assert run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path)) == (0, [f"nsbench: results in {folder}/"])
    assert json.loads((folder / MARKER).read_text())["pid"] == os.getpid()


# ------------------------------------------------------------------ F-08 a read-only folder, a full disk


def test_f08_a_results_folder_that_cannot_be_made_is_one_line_before_any_clip(monkeypatch, capsys, tmp_path):
    """F-08: a results folder nsbench cannot write (here a file stands where
    its parent folder should) was a traceback at the first clip's line."""
    name = run_folder(monkeypatch, capsys, tmp_path, HostilePlugin())
    (tmp_path / "taken").write_text("a file")
    code, err = run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path / "taken"))
    assert (code, err) == (2, [f"nsbench: error: cannot write in the results folder {tmp_path / 'taken' / name}: "
                               "Not a directory"])


def test_f08_a_read_only_results_folder_is_one_line_before_any_clip(monkeypatch, capsys, tmp_path):
    """F-08: a read-only results folder. The EROFS is injected at the check's
    trial write: a read-only mount needs privileges to make, and as root
    (these tests' usual user) chmod does not stop a write."""
    folder = tmp_path / run_folder(monkeypatch, capsys, tmp_path, HostilePlugin())
    calls = []

    def read_only(where):
        calls.append(where)
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(where / ".probe"))

    monkeypatch.setattr(folders, "try_a_write", read_only)
    code, err = run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path))
    assert calls == [folder]
    assert (code, err) == (2, [f"nsbench: error: cannot write in the results folder {folder}: {folder / '.probe'}: "
                               "Read-only file system"])
    assert not list(folder.glob("*.clips.jsonl"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a folder whatever its mode")
def test_f08_a_results_folder_without_write_permission(monkeypatch, capsys, tmp_path):
    """F-08, for real where the tests do not run as root."""
    folder = tmp_path / run_folder(monkeypatch, capsys, tmp_path, HostilePlugin())
    folder.mkdir()
    (folder / MARKER).touch()
    folder.chmod(0o555)
    try:
        code, err = run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path))
    finally:
        folder.chmod(0o755)
    assert code == 2 and err[0].startswith(f"nsbench: error: cannot write in the results folder {folder}: ") and len(err) == 1


class FillsUpOnThirdLine:
    """A .clips.jsonl on a disk that fills up halfway through the third line
    (injected: a full disk cannot be made portably): half of it is written,
    then ENOSPC, as write(2) does."""

    def __init__(self, file):
        self.file, self.lines = file, 0

    def write(self, data):
        self.lines += 1
        if self.lines == 3:
            self.file.write(data[: len(data) // 2])
            self.file.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.file.write(data)

    def __getattr__(self, name):
        return getattr(self.file, name)


def test_f08_a_disk_full_mid_run_stops_in_one_line_with_every_line_whole(monkeypatch, capsys, tmp_path):
    """F-08: ENOSPC at a .clips.jsonl line was a chained traceback and a
    half-written line (writer.py:70-75). Now one line, exit 2, and the log
    holds the two whole lines before it."""
    opened = Path.open

    def open_on_a_full_disk(path, mode="r", *args, **kwargs):
        file = opened(path, mode, *args, **kwargs)
        return FillsUpOnThirdLine(file) if path.name.endswith(".clips.jsonl") and "w" in mode else file

    folder = tmp_path / run_folder(monkeypatch, capsys, tmp_path, HostilePlugin())
    monkeypatch.setattr(Path, "open", open_on_a_full_disk)
    log = folder / "passthrough.clips.jsonl"
    code, err = run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path))
    assert (code, err) == (2, [f"nsbench: error: cannot write in the results folder {folder}: {log}: "
                               "No space left on device; the clip lines written before are whole"])
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(line)["clip_id"] for line in lines[:-1]] == ["c0", "c1"]
    monkeypatch.setattr(Path, "open", opened)
    assert run(monkeypatch, capsys, HostilePlugin(), "--results-folder", str(tmp_path))[0] == 0  # the lock went with the run


def under_a_file_size_limit(size, work, *args):
    """``work(*args)`` in a forked child whose files may grow to ``size``
    bytes: the kernel then writes what fits and fails the rest with EFBIG, as
    a full disk does with ENOSPC (a real short write, not an injected one).
    SIGXFSZ is ignored there, so the write fails instead of the child. Only
    the child is limited: pytest's own output, which in CI goes to a log
    already larger than ``size``, must never meet the limit. Returns what
    ``work`` returned, or the exception it raised."""
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context,
                                                initializer=_limit_file_size, initargs=(size,)) as pool:
        try:
            return pool.submit(work, *args).result(timeout=60)
        except Exception as raised:  # the child's exception, carried back
            return raised


def _limit_file_size(size):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def _three_clip_lines(path, record):
    log = clip_log.ClipLog(path)
    offsets = [log.add(record), log.add(record)]
    try:
        log.add(record)
    except UserError as refused:
        return offsets, str(refused)
    finally:
        log.close()
    return offsets, None


def test_f08_a_clip_line_cut_short_by_the_file_system_is_removed(tmp_path):
    """F-08: each jsonl line is written whole or not at all, on a real short write."""
    from nsbench.plugins.records import ClipRecord

    path = tmp_path / "e.clips.jsonl"
    record = ClipRecord(engine="e", clip_id="c", labels={}, scores={"si_sdr": 1.0})
    line = len(json.dumps(record.to_json())) + 1
    offsets, refused = under_a_file_size_limit(int(2.5 * line), _three_clip_lines, path, record)
    assert offsets == [0, line]
    assert refused is not None and refused.endswith("e.clips.jsonl: File too large; the clip lines written before are whole")
    assert path.read_bytes() == 2 * (json.dumps(record.to_json()) + "\n").encode()


def test_f08_a_grid_copy_cut_short_leaves_no_half_file(tmp_path):
    """F-08: the grid's WAV copies (listening_grid.py:264) are put in place
    whole; a short write is an OSError that names why, with nothing left."""
    path = tmp_path / "audio" / "e" / "c.wav"
    raised = under_a_file_size_limit(4096, listening_grid.listening_copy, np.zeros(16000, np.float32), 16000, path)
    assert isinstance(raised, OSError) and raised.errno == errno.EFBIG
    assert files_under(tmp_path) == set()
