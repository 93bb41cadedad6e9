"""The default demo set: real recordings from the bundle, mixed as the issue asks.

Reads the set the session generated once (conftest's demo_sources) and checks it
against the bundle's own manifest."""
from __future__ import annotations

import collections
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench.builtin.datasets import generated_set
from nsbench.builtin.datasets import demo
from nsbench.builtin.metrics import speech_gated
from nsbench.cli import main

from tests.helpers import demo_speech
from tests.helpers.paths import REPO_ROOT

# Written out, not read from demo.SNRS_DB: the public sets span 0-19 dB (DNS 2020)
# and 2.5-17.5 dB (VoiceBank), so the demo must reach 20.
SNRS = ("-5", "0", "5", "10", "15", "20")
VOICE_CELLS = {(noise, snr) for noise in ("stationary", "nonstationary", "babble", "music") for snr in SNRS}
ALL_CELLS = VOICE_CELLS | {("music", "no voice"), ("none", "clean")}
# Six clips in each of the 24 voice cells, six music-only and six clean-voice clips.
CLIPS = 6 * 24 + 6 + 6
LABELS = {"noise", "snr_db", "recording", "talker", "sex"}
BUNDLE_FILES = {demo.MANIFEST, demo.CHECKSUMS, demo.ATTRIBUTION}
# Written out, not read from demo.MIN_SPEECH_SECONDS: issue 37 asks for 2 s of
# speech in every voiced clip, as the VAD nsbench ships counts it.
MIN_SPEECH_SECONDS = 2.0
needs_silero = pytest.mark.skipif(speech_gated.vad_version() == "", reason=f"silero-vad not installed ({speech_gated.INSTALL})")


@pytest.fixture(scope="module")
def demo_set(demo_sources):
    """(folder, manifest entries by clip id, bundle recordings)."""
    folder = demo.demo_folder(demo.DEFAULT_SEED)
    entries = {item["clip_id"]: item for item in json.loads((folder / "manifest.json").read_text())}
    assert [source.clip_id for source in demo_sources] == list(entries)
    return folder, entries, demo.read_recordings(demo.BUNDLE_FOLDER)


@pytest.fixture(scope="module")
def stems(demo_set):
    """clip id -> (noisy, clean, noise) as written, float64."""
    folder = demo_set[0]
    return {
        clip_id: tuple(soundfile.read(str(folder / role / f"{clip_id}.wav"), dtype="float64")[0] for role in ("noisy", "clean", "noise"))
        for clip_id in demo_set[1]
    }


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_ones(demo_set, tmp_path):
    folder = demo_set[0]
    demo.generate(tmp_path / "again", demo.DEFAULT_SEED, demo.BUNDLE_FOLDER)
    assert generated_set.content_hash(tmp_path / "again") == generated_set.content_hash(folder)
    demo.generate(tmp_path / "other", demo.DEFAULT_SEED + 1, demo.BUNDLE_FOLDER)
    assert generated_set.content_hash(tmp_path / "other") != generated_set.content_hash(folder)


def test_every_clip_is_made_only_from_listed_files_with_a_permitted_licence(demo_set):
    _, entries, recordings = demo_set
    used = set()
    for clip_id, entry in entries.items():
        assert entry["sources"], clip_id
        for source in entry["sources"]:
            if source.startswith(demo.SYNTHETIC):  # the white and pink controls, made by our own code
                assert source in {"synthetic:white", "synthetic:pink"} and entry["labels"]["noise"] == "stationary"
                continue
            assert source in recordings, f"{clip_id}: {source} is not in the bundle's manifest"
            assert recordings[source].licence in demo.PERMITTED_LICENCES, (clip_id, source)
            used.add(source)
    assert not any(re.search(r"NC|SA|ND", licence) for licence in demo.PERMITTED_LICENCES)
    # Held-out talkers are the check set's: the demo never uses them.
    held_out = {file for file, r in recordings.items() if r.talker in demo.HELD_OUT_TALKERS}
    assert len(held_out) == 4 and not used & held_out
    assert used == set(recordings) - held_out


def test_the_bundle_holds_exactly_its_manifest_as_16_bit_flac(demo_set):
    recordings = demo_set[2]
    files = {p.relative_to(demo.BUNDLE_FOLDER).as_posix() for p in demo.BUNDLE_FOLDER.rglob("*") if p.is_file()}
    assert files == set(recordings) | BUNDLE_FILES
    assert sum((demo.BUNDLE_FOLDER / f).stat().st_size for f in files) < 8e6
    for file in recordings:
        info = soundfile.info(str(demo.BUNDLE_FOLDER / file))
        assert (info.format, info.subtype, info.samplerate, info.channels) == ("FLAC", "PCM_16", 16000, 1), file
    talkers = collections.Counter((r.category, r.sex) for r in recordings.values() if r.talker)
    assert talkers == {("speech", "female"): 8, ("speech", "male"): 8, ("babble", "female"): 4, ("babble", "male"): 4}


def test_the_attribution_credits_every_bundled_file(demo_set):
    attribution = (demo.BUNDLE_FOLDER / demo.ATTRIBUTION).read_text()
    for file, recording in demo_set[2].items():
        # Readers are credited by their LibriSpeech id, other files by name.
        credit = f"{recording.talker.removeprefix('LibriSpeech-')} {recording.sex[0].upper()}" if recording.talker else Path(file).name
        assert credit in attribution, file


def test_cells_labels_and_counts(demo_set):
    _, entries, _ = demo_set
    cells = collections.defaultdict(list)
    for entry in entries.values():
        assert set(entry["labels"]) == LABELS and all(isinstance(v, str) for v in entry["labels"].values())
        cells[entry["labels"]["noise"], entry["labels"]["snr_db"]].append(entry["labels"])
    assert len(entries) == CLIPS == 156
    assert set(cells) == ALL_CELLS
    for cell in VOICE_CELLS:
        labels = cells[cell]
        assert len(labels) >= 6, cell
        # Balanced by sex, every clip a different talker.
        assert collections.Counter(label["sex"] for label in labels) == {"female": 3, "male": 3}, cell
        assert len({label["talker"] for label in labels}) == len(labels), cell
    recordings_of = lambda noise: {label["recording"] for cell, labels in cells.items() if cell[0] == noise for label in labels}
    assert recordings_of("stationary") == {"engine_boat_hum", "wind_outdoor", "white", "pink"}
    assert recordings_of("nonstationary") == set(demo.RECORDINGS["nonstationary"])
    assert recordings_of("music") == {"tenor_sax", "trumpet", "violin", "singing"}
    assert len(cells["music", "no voice"]) == 6 and {label["talker"] for label in cells["music", "no voice"]} == {"none"}
    assert len(cells["none", "clean"]) == 6 and collections.Counter(label["sex"] for label in cells["none", "clean"]) == {"female": 3, "male": 3}


def test_the_first_clips_cover_every_cell(demo_sources):
    cell_of = lambda source: (source.labels["noise"], source.labels["snr_db"])
    first = [cell_of(s) for s in demo_sources[: len(ALL_CELLS)]]
    # 26 clips, each cell once: --limit 26 spans the whole table.
    assert len(ALL_CELLS) == 26 and sorted(first) == sorted(ALL_CELLS)
    # Every further round of 26 covers every cell once again.
    for start in range(0, 6 * len(ALL_CELLS), len(ALL_CELLS)):
        assert sorted(cell_of(s) for s in demo_sources[start : start + len(ALL_CELLS)]) == sorted(ALL_CELLS), start


def test_the_15_and_20_db_cells_have_three_female_and_three_male_talkers_in_every_category(demo_set):
    # What a user meets most (nearly clean speech); test_snr_is_exact_... checks their SNR.
    _, entries, recordings = demo_set
    for noise in ("stationary", "nonstationary", "babble", "music"):
        for snr in ("15", "20"):
            clips = [e for e in entries.values() if (e["labels"]["noise"], e["labels"]["snr_db"]) == (noise, snr)]
            assert len(clips) == 6, (noise, snr)
            assert collections.Counter(e["labels"]["sex"] for e in clips) == {"female": 3, "male": 3}, (noise, snr)
            assert len({e["labels"]["talker"] for e in clips}) == 6, (noise, snr)
            # The interference is the category's own material, and the recordings rotate within the cell.
            material = {source for e in clips for source in e["sources"][1:]}
            kinds = {recordings[f].category if f in recordings else "noise" for f in material}  # synthetic: noise
            assert kinds == {"babble" if noise == "babble" else "music" if noise == "music" else "noise"}, (noise, snr)
            if noise != "babble":
                assert len({e["labels"]["recording"] for e in clips}) >= 4, (noise, snr)


def test_snr_is_exact_and_nothing_reaches_beyond_full_scale(demo_set, stems):
    entries = demo_set[1]
    for clip_id, (noisy, clean, noise) in stems.items():
        labels = entries[clip_id]["labels"]
        assert len(noisy) == demo.CLIP_SECONDS * demo.SAMPLE_RATE
        assert np.max(np.abs(noisy)) <= 1.0 and np.max(np.abs(clean)) <= 1.0, clip_id
        np.testing.assert_allclose(noisy, clean + noise, atol=1e-6)
        if (labels["noise"], labels["snr_db"]) in VOICE_CELLS:
            snr = 10 * np.log10(np.sum(clean**2) / np.sum(noise**2))
            assert snr == pytest.approx(float(labels["snr_db"]), abs=0.01), clip_id
    assert not np.any(stems["clean-voice_0"][2]) and not np.any(stems["music-only_0"][1])


def test_babble_has_at_least_four_real_talkers_and_never_the_target(demo_set):
    _, entries, recordings = demo_set
    babble_clips = [e for e in entries.values() if e["labels"]["noise"] == "babble"]
    assert len(babble_clips) == 36
    for entry in babble_clips:
        talkers = [recordings[s].talker for s in entry["sources"] if recordings[s].category == "babble"]
        assert len(set(talkers)) >= 4, entry["clip_id"]
        assert entry["labels"]["talker"] not in talkers


def test_noise_windows_stay_out_of_the_check_sets_reserve():
    ramp = np.arange(20 * demo.SAMPLE_RATE, dtype=np.float32)  # each sample holds its own index
    reserve = int(demo.CHECK_RESERVE_SECONDS * demo.SAMPLE_RATE)
    for seed in range(50):
        excerpt = demo.noise_excerpt(np.random.default_rng(seed), ramp, 4 * demo.SAMPLE_RATE)
        assert excerpt.max() < len(ramp) - reserve


@pytest.mark.parametrize("damage", ["corrupt", "missing"])
def test_a_damaged_bundle_stops_the_run_in_one_line_before_any_engine(demo_sources, tmp_path, monkeypatch, capsys, damage):
    # The session's set is already in the cache under the same checksums: the check must not rely on a fresh mix.
    bundle = tmp_path / "bundle"
    shutil.copytree(demo.BUNDLE_FOLDER, bundle)
    victim = bundle / "noise" / "rain.flac"
    if damage == "corrupt":
        data = bytearray(victim.read_bytes())
        data[len(data) // 2] ^= 0xFF
        victim.write_bytes(bytes(data))
    else:
        victim.unlink()
    monkeypatch.setattr(demo, "BUNDLE_FOLDER", bundle)
    results = tmp_path / "results"
    assert main(["--engine", "passthrough", "--results-folder", str(results), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(victim) in err[0] and "reinstall nsbench" in err[0]
    assert ("corrupt" if damage == "corrupt" else "missing") in err[0]
    assert not results.exists()  # nothing ran, nothing was written


# ------------------------------------------------------------------ every voiced clip speaks (issue 37)


@pytest.fixture(scope="module")
def builder():
    """bench/make_demo_bundle.py, imported as ``python bench/make_demo_bundle.py`` runs it."""
    spec = importlib.util.spec_from_file_location("make_demo_bundle", REPO_ROOT / "bench" / "make_demo_bundle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bundled(file: str) -> np.ndarray:
    return soundfile.read(str(demo.BUNDLE_FOLDER / file), dtype="float32")[0]


@needs_silero
def test_every_voiced_clip_holds_at_least_two_seconds_of_speech(demo_set, stems):
    entries = demo_set[1]
    voiced = [clip_id for clip_id, entry in entries.items() if entry["labels"]["talker"] != "none"]
    assert len(voiced) == CLIPS - 6  # all but the music-only clips
    speech = {clip_id: demo_speech.speech_seconds(stems[clip_id][1].astype(np.float32)) for clip_id in voiced}
    short = {clip_id: seconds for clip_id, seconds in speech.items() if seconds < MIN_SPEECH_SECONDS}
    assert not short, f"voiced clips with under {MIN_SPEECH_SECONDS} s of speech: {short}"
    # The measure sees a pause: the same clean voice with its second half silenced holds less than half as much.
    clip_id = min(speech, key=speech.get)
    halved = stems[clip_id][1].astype(np.float32).copy()
    halved[len(halved) // 2 :] = 0
    assert demo_speech.speech_seconds(halved) < speech[clip_id] / 2 + 0.1


@needs_silero
def test_the_builder_refuses_a_target_a_clip_could_take_too_little_speech_from(builder):
    # Every target recording shipped passes; reader 4014's reading (a target
    # until issue 37: 1.95 s of speech in 5.5 s, babble since) does not, before
    # or after its pauses are shortened.
    targets = {file: bundled(file) for file, r in demo.read_recordings(demo.BUNDLE_FOLDER).items() if r.category == "speech"}
    assert len(targets) == 16 and builder.shortfalls(targets) == []
    sparse = "babble/ls4014_M_186175-0000.flac"
    [line] = builder.shortfalls({sparse: bundled(sparse)})
    assert line.startswith(f"{sparse}: a clip could take ") and "under the demo's 2 s" in line
    [line] = builder.shortfalls({sparse: builder.tightened(bundled(sparse))})
    assert line.startswith(f"{sparse}: 2.9") and "shorter than a clip's voice (3.80 s)" in line


@needs_silero
def test_the_builder_writes_nothing_when_it_refuses(builder, tmp_path, monkeypatch, capsys):
    """A pack whose one target reading is reader 4014's (under another name: the
    builder knows the real one for babble): one line naming it, exit 1, the bundle untouched."""
    pack, target = tmp_path / "shared" / "demo-pack", "speech/ls4014_M_sparse.flac"
    (pack / "speech").mkdir(parents=True)
    shutil.copyfile(demo.BUNDLE_FOLDER / "babble/ls4014_M_186175-0000.flac", pack / target)
    header, *rows = (demo.BUNDLE_FOLDER / demo.MANIFEST).read_text().splitlines()
    row = next(line for line in rows if "ls4014" in line).split("\t")
    row[0], row[1] = "speech", target
    (pack / "MANIFEST.tsv").write_text(f"{header}\n{chr(9).join(row)}\n")
    bundle = tmp_path / "bundle"
    (bundle / "speech").mkdir(parents=True)
    (bundle / "speech" / "kept.flac").write_bytes(b"the bundle as it was")
    monkeypatch.setattr(builder, "BUNDLE", bundle)
    monkeypatch.setattr(sys, "argv", ["make_demo_bundle.py", "--shared", str(tmp_path / "shared")])
    # 4014's is too short once its pauses are shortened, or sparse if they were not: refused either way.
    assert builder.main() == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"refused, nothing written: {target}: ")
    assert [p.name for p in bundle.rglob("*")] == ["speech", "kept.flac"]


@needs_silero
def test_the_builder_cuts_a_long_pause_to_half_a_second_and_keeps_the_speech(builder):
    reading = bundled("speech/ls8014_F_112586-0000.flac")  # no pause over 0.5 s: the builder left it whole
    assert len(builder.tightened(reading)) == pytest.approx(len(reading), abs=0.02 * demo.SAMPLE_RATE)
    room = reading[: int(0.2 * demo.SAMPLE_RATE)]  # its own lead-in: the room's sound, no speech
    middle = int(3.0 * demo.SAMPLE_RATE)
    paused = np.concatenate([reading[:middle], np.tile(room, 15), reading[middle:]])  # a 3 s pause
    shortened = builder.tightened(paused)
    # 3 s cut to 0.5 s, give or take a 32 ms VAD chunk at each end; the VAD
    # takes a few chunks after a word to fall below 0.5, so up to 0.25 s more stays.
    assert 0.43 * demo.SAMPLE_RATE <= len(shortened) - len(reading) <= 0.75 * demo.SAMPLE_RATE
    assert demo_speech.speech_seconds(shortened) == pytest.approx(demo_speech.speech_seconds(reading), abs=0.1)
    assert builder.shortfalls({"paused": paused}) and not builder.shortfalls({"shortened": shortened})
