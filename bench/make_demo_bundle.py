#!/usr/bin/env python3
"""Builds ``datasets/demo_audio/``, the recordings the ``demo`` dataset mixes
(not a benchmark: how the bundle was made, and how to remake it).

    python bench/make_demo_bundle.py [--shared ../shared/audio]

Takes the demo pack (16 target talkers, 8 babble talkers, 8 noises, FLAC, and
its MANIFEST.tsv) and the four real music clips (16-bit WAV, stored losslessly
as 16-bit FLAC, their manifest lines mapped onto the pack's columns), then
writes SHA256SUMS (over every file, ATTRIBUTION.md included), which the
dataset checks on every run to catch a broken install.

Babble, noise and music files are copied byte for byte, their manifest lines
verbatim. The target talkers' readings (``speech/``) are where a clip's voice
comes from, and the pack cut them at a pause near 6.5 s whatever lay before:
reader 78 pauses 3.6 s mid-reading, reader 4014 reads 1.95 s of 5.5. So every
pause in them longer than MAX_PAUSE_SECONDS (where Silero VAD finds no speech)
is shortened to that, and the silence before the first word and after the
last to half of it (ROLE_CHANGES: two readers too short for that become
babble, two babble readers targets). Then each target must give every clip
at least demo.MIN_SPEECH_SECONDS of speech (tests.helpers.demo_speech.sparsest_speech_seconds);
a recording that does not is refused, one line each, and nothing is written.
The VAD (onnxruntime, silero-vad) is needed here, never when the demo is mixed.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import shutil
import sys
from pathlib import Path
from typing import Mapping

import numpy as np
import soundfile

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from nsbench.builtin.datasets import demo  # noqa: E402
from tests.helpers.demo_speech import sparsest_speech_seconds  # noqa: E402

BUNDLE = REPO_ROOT / "datasets" / "demo_audio"
PACK_FOLDERS = ("speech", "babble", "noise")
TARGETS = "speech"
MUSIC = (
    "medleysolos_tenor_sax_test-5",
    "medleysolos_trumpet_test-6",
    "medleysolos_violin_test-7",
    "vocadito_10_solo_singing",
)
CHECKSUMS = "SHA256SUMS"
# A reader's pause between sentences is rarely longer; the pack's longer ones
# (1-3.6 s) are paragraph and chapter breaks, which a 4 s clip cannot afford.
MAX_PAUSE_SECONDS = 0.5
# Pack file -> its place in the bundle. Readers 4014 (1.95 s of speech in 5.5 s)
# and 446 (2.5 s in 4.9 s) are too short for a clip's voice once their pauses are
# shortened; babble loops its readers, pauses and all. Readers 4788 and 4830, the
# two male babble readers with the fewest pauses, take their places (babble keeps
# 4 female and 4 male readers, the targets 6 and 6 besides the held-out four).
ROLE_CHANGES = {
    "speech/ls4014_M_186175-0000.flac": "babble/ls4014_M_186175-0000.flac",
    "speech/ls446_M_123501-0000.flac": "babble/ls446_M_123501-0000.flac",
    "babble/ls4788_M_294466-0000.flac": "speech/ls4788_M_294466-0000.flac",
    "babble/ls4830_M_25898-0000.flac": "speech/ls4830_M_25898-0000.flac",
}


def pauses(chunks: np.ndarray) -> list[tuple[int, int]]:
    """(first, stop) chunk indices of each run of chunks without speech."""
    edges = np.flatnonzero(np.diff(np.concatenate([[1], chunks.astype(np.int8), [1]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def tightened(reading: np.ndarray) -> np.ndarray:
    """The reading with every pause longer than MAX_PAUSE_SECONDS cut to it
    (half kept on either side, the two halves crossfaded over demo.FADE_SECONDS
    so the room's own sound carries on), and the silence before the first word
    and after the last cut to half of it. A pause is a run of chunks in which
    the VAD, with its padding, finds no speech."""
    from nsbench.builtin.metrics import speech_gated

    speech, _ = speech_gated.classify(speech_gated.speech_probabilities(reading))
    if not speech.any():
        return reading  # nothing to keep apart: shortfalls() refuses it
    half, fade = int(MAX_PAUSE_SECONDS * demo.SAMPLE_RATE) // 2, int(demo.FADE_SECONDS * demo.SAMPLE_RATE)
    runs = [(first * speech_gated.CHUNK, min(stop * speech_gated.CHUNK, len(reading))) for first, stop in pauses(speech)]
    begin = max(runs[0][1] - half, 0) if runs[0][0] == 0 else 0
    finish = min(runs[-1][0] + half, len(reading)) if runs[-1][1] == len(reading) else len(reading)
    out, position = reading[:0], begin
    for start, end in runs:
        if 0 < start and end < len(reading) and end - start > 2 * half + fade:
            out = joined(out, reading[position : start + half + fade], fade)
            position = end - half
    return joined(out, reading[position:finish], fade)


def joined(out: np.ndarray, piece: np.ndarray, fade: int) -> np.ndarray:
    """``piece`` after ``out``, crossfaded over ``fade`` samples (the first piece as it is)."""
    return demo.crossfaded(out, piece, fade) if len(out) else piece


def shortfalls(targets: Mapping[str, np.ndarray]) -> list[str]:
    """One line for each target recording some clip could take too little speech from."""
    return [line for file, recording in targets.items() if (line := shortfall(file, recording))]


def shortfall(file: str, recording: np.ndarray) -> str:
    """What is wrong with a target recording for the demo's rule; "" if nothing."""
    longest, shortest = demo.longest_voice_samples(), demo.shortest_voice_samples()
    if len(recording) < longest:
        return f"{file}: {len(recording) / demo.SAMPLE_RATE:.2f} s long, shorter than a clip's voice ({longest / demo.SAMPLE_RATE:.2f} s)"
    least = sparsest_speech_seconds(recording)
    if least >= demo.MIN_SPEECH_SECONDS:
        return ""
    return (f"{file}: a clip could take {least:.2f} s of speech from it (its sparsest {shortest / demo.SAMPLE_RATE:.1f} s), "
            f"under the demo's {demo.MIN_SPEECH_SECONDS:g} s")


def music_row(row: dict[str, str], audio: np.ndarray, rate: int, header: list[str]) -> list[str]:
    """A music line of the shared audio manifest, in the demo pack's columns."""
    peak = 20 * np.log10(np.max(np.abs(audio)))
    values = {
        "category": "music",
        "file": f"music/{Path(row['file']).stem}.flac",
        "source_repo": row["source_repo"], "commit": row["commit"], "path": row["path"], "license": row["license"],
        "speaker_id": "", "sex": "",
        "orig_sr": row["orig_sr"], "orig_channels": row["orig_channels"], "orig_duration_s": row["orig_duration_s"],
        "segment_s": f"0.000-{len(audio) / rate:.3f}", "duration_s": f"{len(audio) / rate:.3f}",
        "rms_dbfs": row["rms_dbfs"], "peak_dbfs": f"{peak:.1f}",
        "note": f"{row['note']}; resampled to 16 kHz 16-bit WAV for nsbench's shared audio, stored here losslessly as FLAC",
    }
    return [values[column] for column in header]


def pack_rows(pack: Path) -> tuple[list[str], list[list[str]]]:
    """The pack manifest's header and its rows of PACK_FOLDERS, each file in its bundle place (ROLE_CHANGES)."""
    lines = (pack / "MANIFEST.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:] if line.split("\t")[0] in PACK_FOLDERS]
    category, file, note = (header.index(column) for column in ("category", "file", "note"))
    for row in rows:
        if row[file] in ROLE_CHANGES:
            moved = ROLE_CHANGES[row[file]]
            row[note] += f"; nsbench: {Path(moved).parent} here, not {Path(row[file]).parent} (make_demo_bundle.py ROLE_CHANGES)"
            row[file], row[category] = moved, Path(moved).parent.name
    return header, sorted(rows, key=lambda row: PACK_FOLDERS.index(row[category]))  # stable: the pack's order within each


def pack_file(file: str) -> str:
    """Where a bundle file lies in the pack."""
    return next((pack for pack, moved in ROLE_CHANGES.items() if moved == file), file)


def tightened_rows(pack: Path, header: list[str], rows: list[list[str]]) -> dict[str, np.ndarray]:
    """file -> its reading tightened, for every target; their rows get the new
    duration, levels and a note saying what was cut."""
    column = {name: header.index(name) for name in ("category", "file", "duration_s", "rms_dbfs", "peak_dbfs", "note")}
    readings = {}
    for row in rows:
        if row[column["category"]] != TARGETS:
            continue
        original, _ = soundfile.read(str(pack / pack_file(row[column["file"]])), dtype="float32")
        reading = readings[row[column["file"]]] = tightened(original)
        removed = (len(original) - len(reading)) / demo.SAMPLE_RATE
        row[column["duration_s"]] = f"{len(reading) / demo.SAMPLE_RATE:.3f}"
        row[column["rms_dbfs"]] = f"{10 * np.log10(np.mean(np.square(reading, dtype=np.float64))):.1f}"
        row[column["peak_dbfs"]] = f"{20 * np.log10(np.max(np.abs(reading))):.1f}"
        row[column["note"]] += (f"; nsbench: pauses over {MAX_PAUSE_SECONDS:g} s cut to it, silence before and after "
                                f"the reading to {MAX_PAUSE_SECONDS / 2:g} s ({removed:.2f} s removed)")
    return readings


def write_bundle(pack: Path, shared: Path, header: list[str], rows: list[list[str]], readings: Mapping[str, np.ndarray]) -> None:
    """The bundle's audio, MANIFEST.tsv and SHA256SUMS (ATTRIBUTION.md is written by hand and stays)."""
    for folder in (*PACK_FOLDERS, "music"):
        shutil.rmtree(BUNDLE / folder, ignore_errors=True)
    file = header.index("file")
    for row in rows:
        (BUNDLE / row[file]).parent.mkdir(parents=True, exist_ok=True)
        if row[file] in readings:
            soundfile.write(str(BUNDLE / row[file]), readings[row[file]], demo.SAMPLE_RATE, subtype="PCM_16")
        else:
            shutil.copyfile(pack / pack_file(row[file]), BUNDLE / row[file])
    lines = ["\t".join(row) for row in rows]
    with open(shared / "MANIFEST.tsv", newline="") as handle:
        music = {Path(row["file"]).stem: row for row in csv.DictReader(handle, delimiter="\t")}
    (BUNDLE / "music").mkdir()
    for stem in MUSIC:
        audio, rate = soundfile.read(str(shared / "music" / f"{stem}.wav"), dtype="int16")
        soundfile.write(str(BUNDLE / "music" / f"{stem}.flac"), audio, rate, subtype="PCM_16")
        lines.append("\t".join(music_row(music[stem], audio / 32768.0, rate, header)))
    (BUNDLE / "MANIFEST.tsv").write_text("\n".join(["\t".join(header), *lines]) + "\n")
    files = sorted(p for p in BUNDLE.rglob("*") if p.is_file() and p.name != CHECKSUMS)
    sums = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(BUNDLE).as_posix()}" for p in files]
    (BUNDLE / CHECKSUMS).write_text("\n".join(sums) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO_ROOT.parent / "shared" / "audio")
    opts = parser.parse_args()
    pack = opts.shared / "demo-pack"
    if not pack.is_dir():
        print(f"no demo pack at {pack}", file=sys.stderr)
        return 1
    header, rows = pack_rows(pack)
    readings = tightened_rows(pack, header, rows)
    refused = shortfalls(readings)
    if refused:
        print("\n".join(f"refused, nothing written: {line}" for line in refused), file=sys.stderr)
        return 1
    write_bundle(pack, opts.shared, header, rows, readings)
    size = sum(p.stat().st_size for p in BUNDLE.rglob("*") if p.is_file())
    print(f"{BUNDLE}: {sum(1 for p in BUNDLE.rglob('*') if p.is_file())} files, {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
