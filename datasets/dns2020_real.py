"""``dns2020-real``: the DNS Challenge (Interspeech 2020) real recordings, no references.

``--data-folder`` is ``DNS-Challenge/datasets/test_set/real_recordings``
(microsoft/DNS-Challenge, branch interspeech2020/master): 300 noisy WAV files,
16 kHz, and no clean files. 150 are ``audioset_realrec_<category>_<YouTube
id>.wav`` (AudioSet clips with speech over a noise), 150
``ms_realrec_<headset|speakerphone>_<name>.wav`` (Microsoft's own recordings).
Cells: ``source`` (audioset, ms) and ``category``, read from the name by
matching the known categories: a YouTube id holds ``_`` and ``-``
(``audioset_realrec_car_-_8fjPTviLo.wav``), so the name is never split on ``_``.

Official evaluation: none with a reference; the challenge ranked engines on
these files by crowdsourced ITU-T P.808 listening tests (and published
DNSMOS, its no-reference predictor, beside them). nsbench departs: it scores
every file with the no-reference panel (DNSMOS and what else needs no
reference: nsbench.run.no_reference), not with listeners, and reports the mean
per cell and overall; a file whose name does not follow the layout stops the
run, naming it, rather than being scored under no cell.
"""
from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.adapters import load_noisy
from nsbench import ClipSource, DatasetSpec, UserError, hookimpl

# Categories per source, as the file names spell them (REFERENCE.md section 6).
CATEGORIES = {
    "audioset": ("airconditioner", "babycry", "barking", "breathing", "car", "clatter", "door", "munching",
                 "printer", "typing"),
    "ms": ("headset", "speakerphone"),
}
# <source>_realrec_<category>_<rest>.wav, the category one of the known words.
REAL_NAME = re.compile(
    r"(?P<source>audioset|ms)_realrec_(?P<category>"
    + "|".join(sorted({c for cs in CATEGORIES.values() for c in cs}, key=len, reverse=True))
    + r")_(?P<rest>.+)\.wav"
)
SHOWN = 10  # names listed in an error before "..."
LAYOUT = "DNS-Challenge datasets/test_set/real_recordings (branch interspeech2020/master)"


def shown(names: Sequence[str]) -> str:
    return ", ".join(names[:SHOWN]) + (" ..." if len(names) > SHOWN else "") if names else "nothing"


def parse_name(name: str) -> dict[str, str]:
    """{"source", "category"} of a real-recording file name; ValueError if it
    is not one (an unknown source or category, or not .wav)."""
    match = REAL_NAME.fullmatch(name)
    if not match or match.group("category") not in CATEGORIES[match.group("source")]:
        raise ValueError(f"{name} is not <audioset|ms>_realrec_<category>_<id>.wav with a known category")
    return {"source": match.group("source"), "category": match.group("category")}


def wav_names(root: Path, dataset: str, layout: str) -> list[str]:
    """The .wav file names directly under ``root``, or a UserError saying what was expected and found."""
    if not root.is_dir():
        raise UserError(f"{dataset} expects the folder {layout}; {root} is not a folder")
    found = sorted(p.name for p in root.iterdir())
    names = [name for name in found if name.lower().endswith(".wav")]
    if not names:
        raise UserError(f"{dataset} expects the .wav files of {layout} under {root}; found: {shown(found)}")
    return names


def labelled(root: Path, dataset: str, layout: str, parse) -> list[tuple[str, dict[str, str]]]:
    """(file name, labels) for every .wav file; names that do not parse are
    one UserError listing them (a silent subset would make runs incomparable)."""
    result, unknown = [], []
    for name in wav_names(root, dataset, layout):
        try:
            result.append((name, parse(name)))
        except ValueError:
            unknown.append(name)
    if unknown:
        raise UserError(f"{len(unknown)} files under {root} are not named as {layout} names them: {shown(unknown)}")
    return result


def sources_of(root: Path, named: Sequence[tuple[str, dict[str, str]]]) -> list[ClipSource]:
    """One ClipSource without a reference per file, in name order."""
    sources = []
    for name, labels in named:
        stem = Path(name).stem
        load = functools.partial(load_noisy, stem, str(root / name), labels)
        sources.append(ClipSource(clip_id=stem, load=load, labels=labels, has_reference=False))
    return sources


def listing_description(root: Path, names: Sequence[str], source: str) -> dict[str, Any]:
    """The folder, the file count and a hash of names and sizes (cheap, catches most changes)."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(f"{name}:{(root / name).stat().st_size}\n".encode())
    return {"data_folder": str(root.resolve()), "files": len(names), "listing_sha256": digest.hexdigest(),
            "official_source": source, "references": "none"}


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    root = Path(options["data_folder"])
    return sources_of(root, labelled(root, "dns2020-real", LAYOUT, parse_name))


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    root = Path(options["data_folder"])
    names = [name for name, _ in labelled(root, "dns2020-real", LAYOUT, parse_name)]
    return listing_description(root, names, LAYOUT)


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="dns2020-real",
            clips=clips,
            description="DNS Challenge 2020 real recordings, no references (--data-folder .../test_set/real_recordings)",
            cell_keys=("source", "category"),
            needs_data_folder=True,
            describe=describe,
            headline_metric="dnsmos_ovrl",
        )
    )
