"""nsbench.store.atomic, the one way files are put in place: a write that
fails or is killed halfway leaves the old file whole and (when it fails) no
temporary file behind."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench.store import atomic

REPO_ROOT = Path(atomic.__file__).parents[2]


def folder_names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_a_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "deep" / "er" / "entry.bin"  # folders made as needed
    atomic.write_bytes(path, b"old")
    atomic.write_bytes(path, b"new ", memoryview(b"contents"))
    assert path.read_bytes() == b"new contents"
    assert folder_names(path.parent) == ["entry.bin"]


def test_a_failure_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "entry.bin"
    path.write_bytes(b"old contents")
    with pytest.raises(TypeError):
        atomic.write_bytes(path, b"first part written, ", object())  # the second part cannot be written
    assert path.read_bytes() == b"old contents"
    assert folder_names(tmp_path) == ["entry.bin"]


def test_an_interrupt_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "results.json"
    atomic.write_json(path, {"value": 1})

    def interrupted(temporary: Path) -> None:
        temporary.write_text('{"value": 2, "trunc')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.write_with(path, interrupted)
    assert json.loads(path.read_text()) == {"value": 1}
    assert folder_names(tmp_path) == ["results.json"]


def test_a_process_killed_mid_write_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "entry.bin"
    path.write_bytes(b"old contents")
    script = textwrap.dedent(
        f"""
        import sys, time
        from nsbench.store import atomic

        def slow(temporary):
            with open(temporary, "wb") as file:
                file.write(b"half of the new")
                file.flush()
                print("writing", flush=True)
                time.sleep(60)

        atomic.write_with({str(path)!r}, slow)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"writing\n"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        child.kill()
    assert path.read_bytes() == b"old contents"
    [temporary] = [name for name in folder_names(tmp_path) if name != "entry.bin"]
    assert temporary.startswith(".entry.bin.") and temporary.endswith(atomic.TEMPORARY_SUFFIX)  # hidden, findable


def test_written_files_get_the_permissions_open_gives(tmp_path):
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    atomic.write_text(tmp_path / "atomic", "text")
    assert (tmp_path / "atomic").stat().st_mode == plain.stat().st_mode  # not mkstemp's 0600


def test_json_text_and_audio(tmp_path):
    atomic.write_json(tmp_path / "indented.json", {"b": [1, float("nan")]}, indent=2)
    assert (tmp_path / "indented.json").read_text() == '{\n  "b": [\n    1,\n    NaN\n  ]\n}\n'
    atomic.write_json(tmp_path / "compact.json", {"a": 1})
    assert (tmp_path / "compact.json").read_text() == '{"a": 1}'
    atomic.write_text(tmp_path / "text.txt", "naïve")
    assert (tmp_path / "text.txt").read_bytes() == "naïve".encode()
    samples = np.linspace(-0.5, 0.5, 800)
    atomic.write_audio(tmp_path / "clip.wav", samples, 8000, subtype="PCM_16", format="WAV")
    back, rate = soundfile.read(tmp_path / "clip.wav")
    assert rate == 8000 and np.max(np.abs(back - samples)) < 1e-4


def test_a_writer_that_needs_an_extension_gets_it(tmp_path):
    path = tmp_path / "activity.npz"
    atomic.write_with(path, lambda temporary: np.savez(temporary, frames=3), suffix=".tmp.npz")
    with np.load(path) as stored:
        assert int(stored["frames"]) == 3
    assert folder_names(tmp_path) == ["activity.npz"]


def test_a_name_near_the_file_system_limit_is_written(tmp_path):
    path = tmp_path / ("x" * 250)
    atomic.write_text(path, "long")
    assert path.read_text() == "long"


def test_a_staged_folder_appears_whole_or_not_at_all(tmp_path):
    folder = tmp_path / "set"
    with pytest.raises(RuntimeError):
        with atomic.staged_folder(folder) as staging:
            (staging / "one.wav").write_bytes(b"1")
            raise RuntimeError("the second clip failed")
    assert folder_names(tmp_path) == []  # neither the folder nor its staging
    with atomic.staged_folder(folder) as staging:
        (staging / "one.wav").write_bytes(b"1")
    assert folder_names(folder) == ["one.wav"] and folder_names(tmp_path) == ["set"]


def test_a_staged_folder_that_loses_a_race_keeps_the_winners(tmp_path):
    folder = tmp_path / "set"
    done = lambda there: (there / "manifest.json").is_file()  # noqa: E731
    with atomic.staged_folder(folder, done=done) as staging:
        (staging / "manifest.json").write_text("ours")
        folder.mkdir()
        (folder / "manifest.json").write_text("theirs")  # another process finished first
    assert (folder / "manifest.json").read_text() == "theirs" and folder_names(tmp_path) == ["set"]
    with pytest.raises(OSError):  # an incomplete folder in the way is an error
        with atomic.staged_folder(tmp_path / "other", done=done) as staging:
            (staging / "manifest.json").write_text("ours")
            (tmp_path / "other").mkdir()
            (tmp_path / "other" / "partial.wav").write_text("")
    assert folder_names(tmp_path) == ["other", "set"]


def test_concurrent_writers_each_write_whole_files(tmp_path):
    path = tmp_path / "shared.json"
    script = textwrap.dedent(
        f"""
        import sys
        from nsbench.store import atomic
        for round in range(200):
            atomic.write_json({str(path)!r}, {{"writer": sys.argv[1], "payload": "x" * 20000}})
        """
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, str(n)], cwd=REPO_ROOT) for n in range(2)]
    deadline = time.monotonic() + 60
    reads = 0
    while any(writer.poll() is None for writer in writers) and time.monotonic() < deadline:
        if path.exists():
            assert len(json.loads(path.read_text())["payload"]) == 20000  # never half a file
            reads += 1
    assert all(writer.wait(timeout=60) == 0 for writer in writers)
    assert folder_names(tmp_path) == ["shared.json"] and reads > 0
