"""``rated``: recordings people rated, in nsbench's rated-set layout
(nsbench.ratings: ``DIR/ratings.csv`` and the audio it names).

Every file is a clip whose input is the rated recording: the run scores it as
the passthrough engine's output, and the report sets each metric against the
ratings (nsbench.report.human_agreement, ITU-T P.1401). Engines named on a
rated set run too; their outputs were never rated, and the report says so.

A file with a ``reference`` loads with it as its clean reference, aligned
first: the lag of the file behind its reference (nsbench's cross-correlation,
nsbench.audio.alignment) is taken out of the reference, the rated audio is
left as it was rated, and each clip notes by how much (the report sums them
up). Published rated sets are rarely aligned: the P.835 reference conditions'
16 kHz files lag their sources by 275 samples (17 ms), which an intrusive
metric would otherwise score as distortion.

The cell is ``set`` (the folder's name) and ``condition`` (the table's, "-"
without one).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench import Clip, ClipSource, DatasetSpec, hookimpl
from nsbench.adapters import (DEFAULT_MAX_LAG_SECONDS, UNALIGNED_NOTE, RatedSet, aligned_note, estimate_lag, load_noisy, load_pair,
                              read_rated_set)

CELL_KEYS = ("set", "condition")
NO_CONDITION = "-"


def load_rated(clip_id: str, file: str, reference: str, labels: Mapping[str, str]) -> Clip:
    """The rated file as the clip's input, with its reference aligned to it where it has one."""
    if not reference:
        return load_noisy(clip_id, file, labels)
    clip = load_pair(clip_id, file, reference, labels)
    lag = estimate_lag(clip.noisy, clip.clean, int(DEFAULT_MAX_LAG_SECONDS * clip.sample_rate))
    if lag is None:
        return replace_clean(clip, clip.clean, UNALIGNED_NOTE)
    return replace_clean(clip, shifted(clip.clean, lag), aligned_note(lag, clip.sample_rate))


def shifted(audio: np.ndarray, lag: int) -> np.ndarray:
    """``audio`` delayed by ``lag`` samples (advanced where negative), zero-filled, same length."""
    out = np.zeros_like(audio)
    if lag >= 0:
        out[lag:] = audio[: len(audio) - lag]
    else:
        out[:lag] = audio[-lag:]
    return out


def replace_clean(clip: Clip, clean: np.ndarray, note: str) -> Clip:
    return dataclasses.replace(clip, clean=clean, notes=(*clip.notes, note))


def sources_of(rated: RatedSet) -> list[ClipSource]:
    sources = []
    for item in rated.items:
        labels = {"set": rated.cell, "condition": item.condition or NO_CONDITION}
        reference = str(rated.folder / item.reference) if item.reference else ""
        load = functools.partial(load_rated, f"{rated.cell}/{item.clip_id}", str(rated.folder / item.file), reference, labels)
        sources.append(ClipSource(clip_id=f"{rated.cell}/{item.clip_id}", load=load, labels=labels,
                                  has_reference=bool(reference)))
    return sources


def folder_of(options: Mapping[str, Any]) -> Path:
    return Path(options["data_folder"])


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    return sources_of(read_rated_set(folder_of(options)))


def ratings(options: Mapping[str, Any]) -> list[RatedSet]:
    return [read_rated_set(folder_of(options))]


def describe_sets(sets: list[RatedSet]) -> dict[str, Any]:
    """Each set's folder and a hash of its table and its files' sizes."""
    described = {}
    for rated in sets:
        digest = hashlib.sha256((rated.folder / rated.table).read_bytes())
        for item in rated.items:
            for name in filter(None, (item.file, item.reference)):
                digest.update(f"{name}:{(rated.folder / name).stat().st_size}\n".encode())
        described[rated.cell] = {"folder": str(rated.folder.resolve()), "sha256": digest.hexdigest(),
                                 "files": len(rated.items), "dimensions": list(rated.dimensions)}
    return {"rated_sets": described}


@hookimpl
def register_datasets(register):
    register(DatasetSpec(
        name="rated",
        clips=clips,
        description="recordings people rated: DIR/ratings.csv and its audio (--data-folder); "
                    "the metrics set against the ratings (ITU-T P.1401)",
        cell_keys=CELL_KEYS,
        needs_data_folder=True,
        describe=lambda options: describe_sets(ratings(options)),
        ratings=ratings,
    ))
