"""The adversarial family (issue 36), datasets' part: F-09, F-10, F-12 and
F-23's dataset file. Each test names its case; docs/failures.md (the adversarial family)
says what nsbench does for each. Real files, real symbolic links, real runs
through the CLI; the one fault that cannot be made here (root lists every
folder) is injected, and its test says so."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench import EngineSpec, UserError, hookimpl
from nsbench.audio.files import write_audio
from nsbench.builtin.datasets import folder
from nsbench.cli import main

from tests.helpers.audio import make_folder_dataset, tone_and_noise, write_wav

RATE = 16000
QUICK = ["--metric", "si_sdr", "--jobs", "1", "--quiet", "--no-html", "--no-plots"]


def write_pair(root: Path, name: str, seed: int, seconds: float = 0.5) -> np.ndarray:
    """clean/<name> and noisy/<name>; the noisy audio, which differs with ``seed``."""
    clean, noise = tone_and_noise(seed, seconds=seconds)
    noisy = clean + noise
    subtype = "PCM_16" if name.endswith(".flac") else "FLOAT"  # FLAC holds no floats
    write_wav(root / "clean" / name, clean, RATE, subtype)
    write_wav(root / "noisy" / name, noisy, RATE, subtype)
    return noisy


def run(tmp_path: Path, *argv: str, plugins: tuple[object, ...] = ()) -> int:
    return main([*argv, "--results-folder", str(tmp_path / "results"), *QUICK], plugins=plugins)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


class Seeded:
    """A seeded engine: its output is the input times 2**-seed, so each seed's file is its own."""

    @hookimpl
    def register_engines(self, register):
        register(EngineSpec(name="seeded-gain", factory=lambda options: Gain(2.0 ** -options["seed"]),
                            description="test", sample_rate=RATE, delay=0, seeded=True, default=False))


class Gain:
    sample_rate, delay = RATE, 0

    def __init__(self, gain: float):
        self.gain = gain

    def process(self, audio):
        return (self.gain * audio).astype(np.float32)

    def close(self):
        pass


# --------------------------------------------------------------------------- F-09


def test_f09_files_of_one_name_in_two_sub_folders_are_two_clips(tmp_path):
    """F-09: noisy/s1/d.wav and noisy/s2/d.wav were keyed by name and one was dropped."""
    root = tmp_path / "set"
    noisy = {sub: write_pair(root, f"{sub}/d.wav", seed) for seed, sub in enumerate(["s1", "s2"])}
    sources = folder.clips({"data_folder": str(root)})
    assert [source.clip_id for source in sources] == ["s1/d", "s2/d"]
    for source in sources:  # each clip is its own file, read as written (float WAV: to rounding)
        assert np.allclose(source.load().noisy, noisy[source.clip_id.split("/")[0]], atol=1e-7)


def test_f09_each_file_is_run_and_written_once_and_seeds_stay_seeds(tmp_path):
    """F-09: through the CLI, both sub-folders' clips run, and --output-folder
    writes each to its own file (out/<engine>/s1/d.wav); --seeds still runs a
    seeded engine once per seed of each clip (s1/d_seed0.wav, s1/d_seed1.wav)."""
    root = tmp_path / "set"
    noisy = {sub: write_pair(root, f"{sub}/d.wav", seed) for seed, sub in enumerate(["s1", "s2"])}
    out = tmp_path / "out"
    code = run(tmp_path, "--dataset", "folder", "--data-folder", str(root), "--engine", "seeded-gain",
               "--seeds", "0-1", "--output-folder", str(out), plugins=(Seeded(),))
    assert code == 0
    results = tmp_path / "results" / "folder"
    for engine, runs in (("passthrough", [None]), ("seeded-gain", [0, 1])):
        lines = [json.loads(line) for line in (results / f"{engine}.clips.jsonl").read_text().splitlines()]
        assert sorted((line["clip_id"], line["seed"]) for line in lines) == [(c, s) for c in ("s1/d", "s2/d") for s in runs]
        for sub in ("s1", "s2"):
            for seed in runs:
                name = "d" if seed is None else f"d_seed{seed}"
                written, rate = soundfile.read(str(out / engine / sub / f"{name}.wav"), dtype="float32")
                gain = 1.0 if seed is None else 2.0 ** -seed
                assert rate == RATE and np.allclose(written, gain * noisy[sub], atol=1e-6)


def test_f09_a_wav_and_a_flac_of_one_name_are_refused_with_their_names(tmp_path, capsys):
    """F-09: a.wav and a.flac were merged as two "seeds" of clip a and both wrote a.wav."""
    root = tmp_path / "set"
    for name, seed in (("a.wav", 0), ("a.flac", 1), ("b.wav", 2)):
        write_pair(root, name, seed)
    code = run(tmp_path, "--dataset", "folder", "--data-folder", str(root), "--engine", "passthrough")
    assert code == 2
    line = one_error_line(capsys)
    assert "noisy/a.flac and noisy/a.wav" in line and "would be one clip 'a'" in line
    assert not (tmp_path / "results").exists()


def test_f09_transcripts_are_found_by_the_path_below_clean(tmp_path):
    """F-09: with clips in sub-folders, transcripts.tsv names each by its path
    (the bare name still works for a file at the top)."""
    root = tmp_path / "set"
    write_pair(root, "s1/d.wav", 0)
    write_pair(root, "s2/d.wav", 1)
    write_pair(root, "top.wav", 2)
    (root / folder.TRANSCRIPTS_FILE).write_text("s1/d.wav\tone\ns2/d\ttwo\ntop\tthree\n", encoding="utf-8")
    texts = {source.clip_id: source.load().transcript for source in folder.clips({"data_folder": str(root)})}
    assert texts == {"s1/d": "one", "s2/d": "two", "top": "three"}


# --------------------------------------------------------------------------- F-10


def test_f10_a_self_referencing_file_link_stops_the_run_named(tmp_path, capsys):
    """F-10: noisy/loop.wav -> loop.wav was skipped without a word (is_file() is False on a loop)."""
    root = make_folder_dataset(tmp_path / "set", count=2, seconds=0.5)
    (root / "noisy" / "loop.wav").symlink_to("loop.wav")
    code = run(tmp_path, "--dataset", "folder", "--data-folder", str(root), "--engine", "passthrough")
    assert code == 2
    line = one_error_line(capsys)
    assert "noisy/loop.wav under" in line and "a symbolic link that leads nowhere" in line
    assert "Too many levels of symbolic links" in line


def test_f10_a_link_to_a_folder_above_is_named_as_a_loop(tmp_path):
    """F-10: noisy/s1/up -> .. (a folder above): named, not walked for ever nor skipped."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    (root / "noisy" / "s1").mkdir()
    (root / "noisy" / "s1" / "up").symlink_to("..", target_is_directory=True)
    with pytest.raises(UserError, match=r"^noisy/s1/up under .* is a symbolic link to a folder above it, a loop"):
        folder.pairs(root)


def test_f10_a_link_that_leads_nowhere_is_named(tmp_path):
    """F-10: a dangling link (a folder on an unmounted disk?) was skipped without a word."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    (root / "clean" / "more").symlink_to(tmp_path / "unmounted" / "more", target_is_directory=True)
    with pytest.raises(UserError, match=r"^clean/more under .*: mend it or remove it$") as caught:
        folder.pairs(root)
    assert "No such file or directory" in str(caught.value)


def test_f10_links_to_folders_are_followed(tmp_path):
    """F-10: a linked folder's files were skipped without a word (rglob does
    not follow links); they are clips like any other."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    elsewhere = tmp_path / "elsewhere"
    write_pair(elsewhere, "x.wav", 3)
    for role in ("noisy", "clean"):
        (root / role / "linked").symlink_to(elsewhere / role, target_is_directory=True)
    assert [name for name, _, _ in folder.pairs(root)] == ["linked/x.wav", "utt0.wav"]


def test_f10_an_unreadable_sub_folder_stops_the_run_named(tmp_path, monkeypatch, capsys):
    """F-10: rglob swallowed the PermissionError of a folder it could not list.

    Injected: these tests run as root, whom no permission bit stops, so
    listing noisy/locked and clean/locked raises the PermissionError
    os.scandir raises for anyone else (on c12dba3, rglob's own os.scandir
    call hit it and the pair vanished from the run)."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    write_pair(root, "locked/z.wav", 4)
    locked, real_scandir = {root / role / "locked" for role in ("noisy", "clean")}, os.scandir

    def scandir(path="."):
        if Path(path) in locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code = run(tmp_path, "--dataset", "folder", "--data-folder", str(root), "--engine", "passthrough")
    assert code == 2
    line = one_error_line(capsys)
    assert line.endswith(f"cannot list noisy/locked under {root}: Permission denied")


# --------------------------------------------------------------------------- F-12


def test_f12_data_folder_without_dataset_is_refused(tmp_path, capsys):
    """F-12: --data-folder without --dataset silently ran the 156-clip demo."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    code = run(tmp_path, "--data-folder", str(root), "--engine", "passthrough", "--limit", "1")
    assert code == 2
    line = one_error_line(capsys)
    assert line.startswith("nsbench: error: --data-folder is not taken by dataset 'demo' (the default without --dataset); "
                           "datasets that take it: ")
    assert "folder" in line.split("take it: ")[1].split(", ")
    assert not (tmp_path / "results").exists()


def test_f12_command_name_with_a_python_engine_is_refused(tmp_path, capsys):
    """F-12: --command-name beside a python: engine named nothing, and the run went on."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    code = run(tmp_path, "--dataset", "folder", "--data-folder", str(root),
               "--engine", "python:examples.python_model:denoise", "--command-name", "mine")
    assert code == 2
    assert one_error_line(capsys) == ("nsbench: error: --command-name is not taken by any engine of this run "
                                      "(passthrough, python:examples.python_model:denoise); engines that take it: command")


@pytest.mark.parametrize("argv, flag, takers", [
    (["--dataset", "folder", "--demo-seed", "3"], "--demo-seed", "datasets that take it: demo, demo-tts"),
    (["--allow-unpaired"], "--allow-unpaired", "datasets that take it: folder"),
    (["--dataset", "folder", "--voicebank-rate", "16000"], "--voicebank-rate", "datasets that take it: voicebank"),
    # Typed with its default value, still given: the flag is what the user meant, not its value.
    (["--dataset", "folder", "--python-rate", "16000"], "--python-rate", "engines that take it: python"),
    (["--dataset", "folder", "--engine", "speex", "--webrtc-ns-level", "3"], "--webrtc-ns-level", "engines that take it: webrtc"),
])
def test_f12_a_flag_the_run_does_not_take_is_refused(tmp_path, capsys, argv, flag, takers):
    """F-12 as a class: any dataset's or engine's flag that nothing of the run takes."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    folder_flags = ["--data-folder", str(root)] if "folder" in argv else []
    code = run(tmp_path, *argv, *folder_flags, *([] if "--engine" in argv else ["--engine", "passthrough"]))
    assert code == 2
    line = one_error_line(capsys)
    assert line.startswith(f"nsbench: error: {flag} is not taken by ") and line.endswith(takers)


def test_f12_a_flag_the_run_takes_is_accepted(tmp_path):
    """F-12: the check refuses only what nothing takes: --allow-unpaired on folder runs."""
    root = make_folder_dataset(tmp_path / "set", count=2, seconds=0.5)
    (root / "clean" / "utt1.wav").unlink()
    code = run(tmp_path, "--dataset", "folder", "--data-folder", str(root), "--engine", "passthrough", "--allow-unpaired")
    assert code == 0


# --------------------------------------------------------------------------- F-23


def test_f23_a_file_named_dot_dot_dot_wav_is_refused_with_its_name(tmp_path, capsys):
    """F-23: noisy/...wav (clip '..') ended the run in a traceback from soundfile."""
    root = make_folder_dataset(tmp_path / "set", count=1, seconds=0.5)
    for role in ("noisy", "clean"):  # the format said: libsndfile sees no extension in "...wav"
        soundfile.write(str(root / role / "...wav"), tone_and_noise(5, seconds=0.5)[0], RATE, format="WAV")
    code = run(tmp_path, "--dataset", "folder", "--data-folder", str(root), "--engine", "passthrough",
               "--output-folder", str(tmp_path / "out"))
    assert code == 2
    assert one_error_line(capsys).endswith(f"noisy/...wav under {root}: a file name without the suffix ('..') "
                                           "cannot name a clip: rename it")


def test_f23_an_output_file_named_dot_dot_dot_wav_is_written(tmp_path):
    """F-23: write_audio guessed the format from the name and libsndfile
    found none in '...wav' (a plugin dataset's clip '..'): it is a WAV, said so."""
    audio = tone_and_noise(6, seconds=0.25)[0]
    write_audio(tmp_path / "...wav", audio, RATE)
    written, rate = soundfile.read(str(tmp_path / "...wav"), dtype="float32")
    assert rate == RATE and np.allclose(written, audio, atol=0)  # float WAV: bit for bit
