#!/usr/bin/env python3
"""Builds ``datasets/demo_audio/``, the recordings the ``demo`` dataset mixes
(not a benchmark: how the bundle was made, and how to remake it).

    python bench/make_demo_bundle.py [--shared ../shared/audio]

Copies the demo pack (16 target talkers, 8 babble talkers, 8 noises: FLAC
files copied byte for byte, their MANIFEST.tsv lines kept verbatim) and the
four real music clips (16-bit WAV, stored losslessly as 16-bit FLAC, their
manifest lines mapped onto the pack's columns), then writes SHA256SUMS (over every file, ATTRIBUTION.md included), which
the dataset checks on every run to catch a broken install.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import shutil
import sys
from pathlib import Path

import numpy as np
import soundfile

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLE = REPO_ROOT / "datasets" / "demo_audio"
PACK_FOLDERS = ("speech", "babble", "noise")
MUSIC = (
    "medleysolos_tenor_sax_test-5",
    "medleysolos_trumpet_test-6",
    "medleysolos_violin_test-7",
    "vocadito_10_solo_singing",
)
CHECKSUMS = "SHA256SUMS"


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO_ROOT.parent / "shared" / "audio")
    opts = parser.parse_args()
    pack = opts.shared / "demo-pack"
    if not pack.is_dir():
        print(f"no demo pack at {pack}", file=sys.stderr)
        return 1
    for folder in (*PACK_FOLDERS, "music"):  # ATTRIBUTION.md is written by hand and stays
        shutil.rmtree(BUNDLE / folder, ignore_errors=True)
    lines = (pack / "MANIFEST.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    rows = [line for line in lines[1:] if line.split("\t")[0] in PACK_FOLDERS]
    for line in rows:
        file = line.split("\t")[1]
        (BUNDLE / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pack / file, BUNDLE / file)
    with open(opts.shared / "MANIFEST.tsv", newline="") as handle:
        shared = {Path(row["file"]).stem: row for row in csv.DictReader(handle, delimiter="\t")}
    (BUNDLE / "music").mkdir()
    for stem in MUSIC:
        audio, rate = soundfile.read(str(opts.shared / "music" / f"{stem}.wav"), dtype="int16")
        soundfile.write(str(BUNDLE / "music" / f"{stem}.flac"), audio, rate, subtype="PCM_16")
        rows.append("\t".join(music_row(shared[stem], audio / 32768.0, rate, header)))
    (BUNDLE / "MANIFEST.tsv").write_text("\n".join(["\t".join(header), *rows]) + "\n")
    files = sorted(p for p in BUNDLE.rglob("*") if p.is_file() and p.name != CHECKSUMS)
    sums = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(BUNDLE).as_posix()}" for p in files]
    (BUNDLE / CHECKSUMS).write_text("\n".join(sums) + "\n")
    size = sum(p.stat().st_size for p in BUNDLE.rglob("*") if p.is_file())
    print(f"{BUNDLE}: {len(files)} files, {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
