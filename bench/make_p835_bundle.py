#!/usr/bin/env python3
"""Builds ``datasets/p835_wb/``, the 16 kHz wide-band P.835 reference
conditions the ``p835-reference`` dataset runs without a download (not a
benchmark: how the bundle was made, and how to remake it).

    python bench/make_p835_bundle.py PATH/TO/p835_reference_conditions

Reads the published layout with the dataset's own workbook reader (openpyxl),
then writes each rated file of ``degraded_WB_16KHz/`` as 16-bit FLAC at its own
rate (c1-c12 at 16 kHz, c0, the source, at 48 kHz as published: FLAC is
lossless, so the samples are the published ones) and ``ratings.csv`` in
nsbench's rated layout, each file's reference its talker's c0 file (the same
bytes as ``source/NSD/<talker>.wav``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import soundfile

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from nsbench.builtin.datasets.p835_reference import BUNDLED, published_sets  # noqa: E402
from nsbench.ratings import TABLE, RatedItem, table_text  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("published", type=Path, help="the p835_reference_conditions/ folder, as published")
    args = parser.parse_args()
    wb = next(rated for rated in published_sets(args.published) if rated.cell == "wb")
    BUNDLED.mkdir(exist_ok=True)
    items = []
    for item in wb.items:
        talker = item.clip_id.partition("_")[2]
        audio, rate = soundfile.read(args.published / item.file, dtype="int16")
        soundfile.write(BUNDLED / f"{item.clip_id}.flac", audio, rate, subtype="PCM_16")
        items.append(RatedItem(f"{item.clip_id}.flac", item.condition, f"c0_{talker}.flac", item.ratings))
    items.sort(key=lambda i: (int(i.condition[1:]), i.file))
    (BUNDLED / TABLE).write_text(table_text(items, wb.dimensions))
    size = sum(path.stat().st_size for path in BUNDLED.iterdir())
    print(f"{len(items)} files, {size / 1e6:.1f} MB in {BUNDLED}")


if __name__ == "__main__":
    main()
