"""``fuss``: Free Universal Sound Separation (Wisdom et al. 2021; Zenodo 3743844).

``--data-folder`` is ``ssdata_reverb/`` (or the dry ``ssdata/``): it holds
``{train,validation,eval}/exampleNNNN.wav`` (the mixture),
``exampleNNNN_sources/{background0,foreground0..2}_sound.wav`` and
``<split>_example_list.txt``, one example a line, tab-separated, the mixture
path first and then its 1-4 source paths, relative to the list file's folder
(``make_ss_examples.py`` writes it; ``data_io.read_lines_from_file`` reads it).

Official script: google-research/sound-separation
``models/dcase2020_fuss_baseline/evaluate_lib.py`` (line numbers at commit
678e737), reading with ``train/data_io.py``. Read as it reads:

* the mixture file is not read; the mixture is the sum of the sources, which are
  zero-padded to 4 rows (``data_io.py`` 251, 288);
* every source is cut or zero-padded to 160000 samples, 10 s at 16 kHz
  (``evaluate_lib.py`` 114-115 ``num_samples=160000``, ``data_io.py`` 262-263
  ``decode_wav(desired_samples=...)``); a source of another length is noted;
* multichannel files: the first channel is kept (``decode_wav(desired_channels=1)``),
  noted on the clip;
* a clip's cell is its number of *active* sources (RMS > 1e-8, ``evaluate_lib.py``
  28-31 on the 160000 read samples), the count the evaluation groups by
  (186-189); examples with no active source are skipped (138-141).

Aggregation: SI-SNR for 1 source, SI-SNRi for 2, 3, 4 and the pooled "2-4" row,
each the mean and std over the scored pairs of every clip in the cell
(``evaluate_lib.py`` 96-105, 224-235); see ``metrics/fuss_sisnr.py``, whose
``Pooling`` makes the cells report exactly that, with the mean over clips beside
it as ``clip_mean``. Under- and over-separation rates are per example (236-238).

Where nsbench departs, by design, each noted on the clip: the official reader
(``tf.audio.decode_wav``) takes 16-bit PCM WAV only, and ignores the sample
rate; nsbench also reads 24-bit, float and other formats libsndfile knows,
and resamples a source whose rate differs from the first source's. Its
figures come from the engine nsbench runs, not from a TensorFlow checkpoint;
the per-example metrics (SI-SNR, permutation, activity masks) agree with the
published code to float32 rounding. Source activity is read once and cached
under ``$NSBENCH_CACHE`` (keyed by path, size and modification time).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

import numpy as np
import soundfile

from nsbench.adapters import write_json_atomically, cache_root, fit_length, plural, read_audio, resample
from nsbench import Clip, ClipSource, DatasetSpec, UserError, hookimpl

SPLITS = ("eval", "validation", "train")
DEFAULT_SPLIT = "eval"
MAX_SOURCES = 4  # FUSS mixtures have 1-4 sources; references are zero-padded to 4 rows
ACTIVE_RMS = 1e-8  # evaluate_lib._weights_for_nonzero_refs
# evaluate_lib.py reads every source as this many samples, cut or zero-padded
# (num_samples=160000): 10 s at FUSS's 16 kHz.
EVAL_SAMPLES = 160000
FUSS_RATE = 16000
OFFICIAL_SUBTYPE = "PCM_16"  # tf.audio.decode_wav reads 16-bit PCM WAV only
SHOWN = 10
CACHE_VERSION = 2  # 2: activity on the first channel's first EVAL_SAMPLES, as evaluate_lib.py


def list_path(root: Path, split: str) -> Path:
    return root / f"{split}_example_list.txt"


def shown(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (" ..." if len(items) > SHOWN else "") if items else "nothing"


def inside(root: Path, entry: str, where: str) -> Path:
    """The path of a list entry, refused if it could leave the data root."""
    # Judged on the text, not by resolving links: a data folder whose audio is
    # symlinked from another disk stays usable, while ../ and absolute paths
    # in a list file cannot make us read outside it.
    normalized = os.path.normpath(entry.replace("\\", "/"))
    if os.path.isabs(normalized) or normalized.startswith("~") or normalized.split(os.sep)[0] in ("..", "."):
        raise UserError(f"{where}: path {entry!r} leaves the data folder {root}; FUSS lists hold relative paths")
    return root / normalized


def read_list(root: Path, split: str) -> list[tuple[str, Path, list[Path]]]:
    """(example id, mixture path, source paths) per line of the split's list."""
    path = list_path(root, split)
    if not path.is_file():
        found = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
        raise UserError(
            f"fuss expects {path.name} in {root} (point --data-folder at ssdata_reverb/ or ssdata/, "
            f"the folder holding {{eval,validation,train}}/ and <split>_example_list.txt); found: {shown(found)}"
        )
    examples = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = [field for field in line.strip().split("\t") if field]
        if not fields:
            continue
        where = f"{path}:{number}"
        if not 2 <= len(fields) <= MAX_SOURCES + 1:
            raise UserError(
                f"{where}: expected a mixture and 1-{MAX_SOURCES} source paths separated by tabs, found {len(fields)} fields"
            )
        mixture, *sources = (inside(root, field, where) for field in fields)
        examples.append((PurePosixPath(fields[0]).stem, mixture, sources))
    if not examples:
        raise UserError(f"{path} lists no examples")
    missing = [str(p.relative_to(root)) for _, _, sources in examples for p in sources if not p.is_file()]
    if missing:
        raise UserError(f"{len(missing)} source files listed in {path.name} are missing under {root}: {shown(missing)}")
    return examples


# --------------------------------------------------------------------------- source activity


def cache_file(root: Path, split: str) -> Path:
    base = cache_root()
    key = hashlib.sha256(f"{root.resolve()}|{split}".encode()).hexdigest()[:16]
    return base / f"fuss-activity-v{CACHE_VERSION}-{key}.json"


def file_rms(path: Path) -> float:
    """RMS of what evaluate_lib.py reads of the file: the first channel, cut or
    zero-padded to EVAL_SAMPLES (the padding counts in the mean, as there)."""
    data, _ = soundfile.read(str(path), frames=EVAL_SAMPLES, dtype="float64", always_2d=True)
    return float(np.sqrt(np.sum(data[:, 0] ** 2) / EVAL_SAMPLES)) if data.size else 0.0


def source_rms(root: Path, split: str, paths: list[Path]) -> dict[str, float]:
    """RMS of every source, read once and cached by (size, modification time)."""
    cache = cache_file(root, split)
    try:
        known = json.loads(cache.read_text())
    except (OSError, ValueError):
        known = {}
    rms, changed = {}, False
    for path in paths:
        name = str(path.relative_to(root))
        stat = path.stat()
        stamp = [stat.st_size, stat.st_mtime_ns]
        entry = known.get(name)
        if entry is None or entry[:2] != stamp:
            try:
                entry = [*stamp, file_rms(path)]
            except Exception as error:  # soundfile raises several types for bad files
                raise UserError(f"fuss: cannot read {path}: {error}") from error
            known[name], changed = entry, True
        rms[name] = entry[2]
    if changed:
        try:
            write_json_atomically(cache, known)
        except OSError:
            pass  # a read-only cache only costs the next run the same reading
    return rms


# --------------------------------------------------------------------------- clips


def reader_notes(path: str, rate: int) -> list[str]:
    """Where this file's reading departs from evaluate_lib.py's reader."""
    info = soundfile.info(path)
    name, notes = Path(path).name, []
    if info.channels > 1:
        notes.append(f"{name}: {info.channels} channels, the first kept, as evaluate_lib.py's reader (decode_wav, desired_channels=1)")
    if info.format != "WAV" or info.subtype != OFFICIAL_SUBTYPE:
        notes.append(f"{name} is {info.format} {info.subtype}: evaluate_lib.py's reader takes 16-bit PCM WAV only; nsbench reads it as float")
    if rate != FUSS_RATE:
        notes.append(f"{name} is at {rate} Hz, FUSS is {FUSS_RATE} Hz: still cut or padded to {EVAL_SAMPLES} samples, as evaluate_lib.py")
    return notes


def load_example(clip_id: str, mixture: str, sources: tuple[str, ...], labels: Mapping[str, str]) -> Clip:
    """The sources as (4, EVAL_SAMPLES) rows, zero-padded in count and cut or
    zero-padded in length, as evaluate_lib.py reads them; noisy is their sum."""
    stacked = np.zeros((MAX_SOURCES, EVAL_SAMPLES), dtype=np.float32)
    notes: list[str] = []
    rate = 0
    for index, path in enumerate(sources):
        audio, audio_rate, audio_notes = read_audio(path, first_channel=True)
        notes += audio_notes + reader_notes(path, audio_rate)
        if rate and audio_rate != rate:
            notes.append(f"{Path(path).name} resampled from {audio_rate} Hz to {rate} Hz (evaluate_lib.py does not resample)")
            audio = resample(audio, audio_rate, rate)
        rate = rate or audio_rate
        if len(audio) != EVAL_SAMPLES:
            how = "cut" if len(audio) > EVAL_SAMPLES else "zero-padded"
            notes.append(f"{Path(path).name} has {len(audio)} samples: {how} to {EVAL_SAMPLES}, as evaluate_lib.py reads it")
        stacked[index] = fit_length(audio, EVAL_SAMPLES)
    return Clip(
        clip_id=clip_id,
        noisy=stacked.sum(axis=0, dtype=np.float32),
        clean=np.zeros(EVAL_SAMPLES, dtype=np.float32),
        sample_rate=rate,
        labels=dict(labels),
        notes=tuple(notes),
        source_path=mixture,
        sources=stacked,
    )


def split_of(options: Mapping[str, Any]) -> str:
    return options.get("fuss_split") or DEFAULT_SPLIT


def survey(options: Mapping[str, Any]) -> tuple[list[tuple[str, Path, list[Path], int]], list[str]]:
    """(example id, mixture, sources, active count) for every scorable example,
    and the ids skipped because no source is active."""
    root, split = Path(options["data_folder"]), split_of(options)
    examples = read_list(root, split)
    rms = source_rms(root, split, [p for _, _, sources in examples for p in sources])
    kept, skipped = [], []
    for clip_id, mixture, sources in examples:
        active = sum(rms[str(p.relative_to(root))] > ACTIVE_RMS for p in sources)
        if active:
            kept.append((clip_id, mixture, sources, active))
        else:
            skipped.append(clip_id)
    return kept, skipped


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    kept, skipped = survey(options)
    if skipped:
        print(
            f"nsbench: fuss: skipped {plural(len(skipped), 'example')} whose sources are all silent, "
            f"as the FUSS evaluation does: {shown(skipped)}",
            file=sys.stderr,
        )
    made = []
    for clip_id, mixture, sources, active in kept:
        labels = {"sources": str(active)}
        load = functools.partial(load_example, clip_id, str(mixture), tuple(str(p) for p in sources), labels)
        made.append(ClipSource(clip_id=clip_id, load=load, labels=labels))
    return made


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    root, split = Path(options["data_folder"]), split_of(options)
    kept, skipped = survey(options)
    listing = list_path(root, split)
    return {
        "data_folder": str(root.resolve()),
        "split": split,
        "example_list": listing.name,
        "example_list_sha256": hashlib.sha256(listing.read_bytes()).hexdigest(),
        "examples": len(kept),
        "skipped_all_silent": skipped,
        "mixture": "recomputed as the sum of the sources, zero-padded to 4 sources (as evaluate_lib.py)",
        "reading": f"every source cut or zero-padded to {EVAL_SAMPLES} samples, first channel only (as evaluate_lib.py)",
    }


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--fuss-split", choices=SPLITS, default=DEFAULT_SPLIT,
        help="fuss: which split's <split>_example_list.txt to score (default eval)",
    )


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="fuss",
            clips=clips,
            description="FUSS sound separation, 1-4 sources per 10 s mixture (--data-folder ssdata_reverb/; --fuss-split)",
            cell_keys=("sources",),
            needs_data_folder=True,
            # FUSS reports SI-SNR for 1 source and SI-SNRi for 2, 3, 4 and 2-4 together.
            headline_metric="fuss_sisnri",
            table_metrics=("fuss_sisnr", "fuss_sisnri", "fuss_under_separated", "fuss_over_separated"),
            pooled_cells={"2-4": ("2", "3", "4")},
            describe=describe,
        )
    )
