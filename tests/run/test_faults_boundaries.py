"""Boundaries: what other people's lists and programs may not do.

Covered elsewhere: command engines never go through a shell, a path with
spaces, quotes or ; stays one argument (tests/engines/test_user_models.py); FUSS list
entries leaving the data folder are refused (tests/datasets/test_fuss.py);
an interrupted run leaves no temporary file (test_faults_interrupts.py).
MUSDB18, DNS 2020, VoiceBank and Biodenoising find their files by listing
folders, never by reading paths from a file (Biodenoising's JSON lists are
only compared, by file name, with what is on disk).
"""
from __future__ import annotations

import json
import re
import stat
import tempfile
from pathlib import Path

import numpy as np
import pytest

from nsbench.builtin.datasets import dns2020_remix as remix, generated_set
from nsbench.builtin.datasets import demo
from nsbench.external import PrivateFolder
from nsbench.plugins.errors import ClipError, UserError

from tests.helpers.audio import tone_and_noise, write_wav
from tests.helpers.paths import REPO_ROOT


@pytest.mark.parametrize("clip_id", ["../../../etc/passwd", "/etc/passwd", "noisy/../../x", "..", "", 3])
def test_a_demo_manifest_entry_cannot_leave_the_demo_folder(monkeypatch, tmp_path, clip_id):
    folder = tmp_path / "demo-cache"
    folder.mkdir()
    manifest = [{"clip_id": "white_snr0_0", "labels": {}}, {"clip_id": clip_id, "labels": {}}]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(demo, "demo_folder", lambda seed: folder)
    message = f"{folder / 'manifest.json'}: clip id {clip_id!r} is not a plain file name; delete {folder} and it is generated again"
    with pytest.raises(UserError, match=f"^{re.escape(message)}$"):
        demo.clips({"demo_seed": 1})


def test_a_damaged_demo_manifest_is_one_line(monkeypatch, tmp_path):
    (tmp_path / "manifest.json").write_text('[{"clip_id": "a"')
    monkeypatch.setattr(demo, "demo_folder", lambda seed: tmp_path)
    with pytest.raises(UserError, match=rf"manifest\.json is damaged .*; delete {re.escape(str(tmp_path))} and it is generated again"):
        demo.clips({"demo_seed": 1})


def test_private_folders_are_private_under_the_system_temp_and_removed(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    folder = PrivateFolder("nsbench-command-")
    (folder.path / "input.wav").write_bytes(b"x")
    assert folder.path.parent == tmp_path and stat.S_IMODE(folder.path.stat().st_mode) == 0o700
    folder.close()
    assert list(tmp_path.iterdir()) == []


def test_demo_generation_that_fails_leaves_no_staging_folder(tmp_path):
    made = []

    def make_clip(entry):
        if len(made) == 2:
            raise RuntimeError("espeak crashed")
        made.append(entry)
        silence = np.zeros(160, np.float32)
        return generated_set.MadeClip(silence, silence, silence, dict(entry["labels"]))

    entries = [{"clip_id": f"c{index}", "labels": {}} for index in range(4)]
    with pytest.raises(RuntimeError, match="espeak crashed"):
        generated_set.generate(tmp_path / "demo-set", entries, make_clip, 16000)
    assert list(tmp_path.iterdir()) == []


def test_a_remix_that_cannot_be_written_fails_its_clip_and_leaves_no_temporary_file(monkeypatch, tmp_path):
    clean, noise = tone_and_noise(0, seconds=0.5)
    clean_path = write_wav(tmp_path / "clean.wav", clean, 16000, "PCM_16")
    noisy_path = write_wav(tmp_path / "noisy.wav", clean + noise, 16000, "PCM_16")

    def disk_full(*args, **kwargs):
        Path(args[0]).write_bytes(b"half a fi")  # what a full disk leaves
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(remix.soundfile, "write", disk_full)
    cache = tmp_path / "cache"
    with pytest.raises(ClipError, match=rf"^cannot write the remix of {re.escape(str(noisy_path))} to {re.escape(str(cache))}: "
                                        r"\[Errno 28\] No space left on device$"):
        remix.cached_remix(clean_path, noisy_path, 0.0, cache_folder=cache)
    assert list(cache.iterdir()) == []
    with pytest.raises(ClipError, match=rf"^cannot read {re.escape(str(tmp_path / 'gone.wav'))}: No such file or directory$"):
        remix.cached_remix(tmp_path / "gone.wav", noisy_path, 0.0, cache_folder=cache)


# Calls that would run or unpickle what a file gives us. The --jobs path
# pickles our own ClipSources from the parent to its own workers (pickle.dumps
# here, the pool unpickles): our data between our processes, not a file's.
# --plugin and python: engines import code the user names on the command line.
UNSAFE = re.compile(
    r"pickle\.loads?\(|\beval\(|\bexec\(|yaml\.(unsafe_)?load\(|allow_pickle\s*=\s*True|shell\s*=\s*True"
    r"|os\.system\(|os\.popen\(|marshal\.loads?\(|shelve\.open\(|torch\.load\(|joblib\.load\("
)
# Allowed, once each: a Dask task's arguments, pickled by our parent for our
# workers (nsbench.run.dask_executor.packed, unpickled by
# nsbench.run.dask_worker.unpacked), as the --jobs pool does (Dask
# unpickles every message it carries anyway); and a --plugin file run on each
# Dask worker as the parent imported it (nsbench.run.dask_plugin_files): code
# the user named on the command line.
OUR_OWN = ["nsbench/run/dask_plugin_files.py: exec(", "nsbench/run/dask_worker.py: pickle.loads("]


def test_nothing_untrusted_is_unpickled_evaluated_or_run_through_a_shell():
    sources = [REPO_ROOT / "benchmark.py"]
    for folder in ("nsbench", "engines", "datasets", "metrics", "examples"):
        sources += sorted((REPO_ROOT / folder).rglob("*.py"))
    assert len(sources) > 40
    found = [f"{path.relative_to(REPO_ROOT)}: {match.group()}" for path in sources for match in UNSAFE.finditer(path.read_text())]
    assert sorted(found) == OUR_OWN
    assert UNSAFE.search("data = pickle.load(handle)") and UNSAFE.search("subprocess.run(cmd, shell=True)")
