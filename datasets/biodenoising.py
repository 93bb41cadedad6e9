"""``biodenoising``: the Biodenoising validation set (Miron et al. 2024; Zenodo 13736465).

``biodenoising_validation_1.0.zip`` unpacks to ``biodenoising_validation/`` with,
per rate, ``{16000,48000}/{clean,noisy,noise}/`` and the lists ``clean.json``,
``noisy.json`` and ``noise.json`` beside those folders (``[[path, samples],
...]``, paths from the authors' machine: earthspecies/biodenoising-datasets
rewrites them on install, so only their file names are compared here). Also
``{rate}_large/`` and ``{rate}_snr_experiments/{-5,0,5,10}/`` in the same shape.
62 animal vocalisation pairs per set.

``--data-folder`` may be ``biodenoising_validation/`` or the folder holding it.
Clean and noisy files are paired by their path relative to ``clean/`` and
``noisy/``. (earthspecies' ``evaluate.py`` derives the noisy path with
``str.replace('clean', 'noisy')`` on the whole absolute path, so a data folder
under, say, ``/data/cleaned/`` sends it to ``/data/noisyed/``; pairing by
relative path has no such failure.)

Official scripts: earthspecies/biodenoising (line numbers at commit 844431d).
``evaluate.py`` scores each file with torchmetrics'
``scale_invariant_signal_distortion_ratio`` (no mean removal) and SI-SDRi =
SI-SDR(denoised) - SI-SDR(noisy) (lines 85-92), and prints the mean and the
median over the files (154-155): nsbench's ``si_sdr`` and ``si_sdri`` with
their ``mean`` and ``median``. ``results.py`` pools every file x seed row of a
method (``process_file`` 90-108), and reports the median with
``scipy.stats.median_abs_deviation`` (unscaled, lines 28-29) and a bootstrap
95% CI of the median from ``confidence_intervals`` (1000 resamples, line 36):
with ``--seeds``, nsbench's ``pooled`` block (``median``, ``mad``,
``median_ci95``), while its top-level figures count each clip once by its mean
over seeds, as the seed card aggregates. Departure by design: pairing by
relative path (above), and the engine's declared delay is removed before
scoring.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

from nsbench.adapters import load_pair, plural
from nsbench import ClipSource, DatasetSpec, UserError, hookimpl

ROOT_NAME = "biodenoising_validation"
RATES = (16000, 48000)
DEFAULT_RATE = 16000  # the seed card's rate
SNR_EXPERIMENTS = ("-5", "0", "5", "10")
AS_RECORDED = "as recorded"  # the standard set's noisy files have no single stated SNR
ROLES = ("clean", "noisy", "noise")
AUDIO_SUFFIXES = (".wav", ".flac")
SHOWN = 10


def shown(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (" ..." if len(items) > SHOWN else "") if items else "nothing"


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def dataset_root(folder: Path, rate: int) -> Path:
    """``biodenoising_validation/`` itself, whether given or its parent."""
    if (folder / ROOT_NAME).is_dir():
        return folder / ROOT_NAME
    if any((folder / name).is_dir() for name in (str(rate), f"{rate}_snr_experiments")):
        return folder
    raise UserError(
        f"biodenoising expects {ROOT_NAME}/{rate}/{{clean,noisy,noise}}/ under --data-folder "
        f"(or --data-folder pointing at {ROOT_NAME}/); {folder} holds: {shown(listing(folder))}"
    )


def sets(options: Mapping[str, Any]) -> list[tuple[Path, dict[str, str]]]:
    """(set folder, labels) for each set to score."""
    rate = int(options.get("biodenoising_rate") or DEFAULT_RATE)
    root = dataset_root(Path(options["data_folder"]), rate)
    if options.get("biodenoising_snr_experiments"):
        base = root / f"{rate}_snr_experiments"
        return [(base / snr, {"set": f"{base.name}/{snr}", "snr_db": snr}) for snr in SNR_EXPERIMENTS]
    return [(root / str(rate), {"set": str(rate), "snr_db": AS_RECORDED})]


def audio_files(folder: Path) -> dict[str, Path]:
    """Relative path (POSIX) -> file, for every audio file under ``folder``."""
    return {
        p.relative_to(folder).as_posix(): p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES
    }


def check_json_list(folder: Path, role: str, found: dict[str, Path]) -> None:
    """When ``<role>.json`` is present, its file names must be the ones on disk:
    a partly unpacked archive is stopped here rather than scored as a subset."""
    path = folder / f"{role}.json"
    if not path.is_file():
        return
    try:
        listed = {Path(str(entry[0]).replace("\\", "/")).name for entry in json.loads(path.read_text())}
    except (ValueError, TypeError, IndexError, KeyError) as error:
        raise UserError(f"{path}: expected a JSON list of [path, samples], {error}") from None
    on_disk = {Path(name).name for name in found}
    if listed != on_disk:
        difference = [f"{n} (listed, not in {role}/)" for n in sorted(listed - on_disk)]
        difference += [f"{n} (in {role}/, not listed)" for n in sorted(on_disk - listed)]
        raise UserError(f"{path.name} and {folder / role}/ disagree on {plural(len(difference), 'file')}: {shown(difference)}")


def pairs(folder: Path) -> list[tuple[str, Path, Path, Path | None]]:
    """(relative path, noisy, clean, noise or None) for every pair in one set."""
    for role in ("clean", "noisy"):
        if not (folder / role).is_dir():
            raise UserError(
                f"biodenoising expects {folder}/{{clean,noisy,noise}}/; no {role}/ there, found: {shown(listing(folder))}"
            )
    found = {role: audio_files(folder / role) for role in ROLES}
    if not found["noisy"]:
        raise UserError(f"no audio files ({', '.join(AUDIO_SUFFIXES)}) under {folder / 'noisy'}")
    unpaired = sorted(
        [f"noisy/{n}" for n in set(found["noisy"]) - set(found["clean"])]
        + [f"clean/{n}" for n in set(found["clean"]) - set(found["noisy"])]
    )
    if unpaired:
        raise UserError(f"{plural(len(unpaired), 'file')} under {folder} {'has' if len(unpaired) == 1 else 'have'} no partner at the same path: {shown(unpaired)}")
    for role in ROLES:
        check_json_list(folder, role, found[role])
    return [(name, found["noisy"][name], found["clean"][name], found["noise"].get(name)) for name in sorted(found["noisy"])]


def clip_id(labels: Mapping[str, str], name: str) -> str:
    stem = name.rsplit(".", 1)[0]
    return stem if labels["snr_db"] == AS_RECORDED else f"snr{labels['snr_db']}/{stem}"


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    rate = int(options.get("biodenoising_rate") or DEFAULT_RATE)
    made = []
    for folder, labels in sets(options):
        for name, noisy, clean, noise in pairs(folder):
            ident = clip_id(labels, name)
            load = functools.partial(
                load_pair, ident, str(noisy), str(clean), labels, str(noise) if noise else "", target_rate=rate
            )
            made.append(ClipSource(clip_id=ident, load=load, labels=dict(labels)))
    return made


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    digest, count = hashlib.sha256(), 0
    for folder, labels in sets(options):
        for name, noisy, clean, _ in pairs(folder):
            digest.update(f"{labels['set']}/{name}:{noisy.stat().st_size}:{clean.stat().st_size}\n".encode())
            count += 1
    rate = int(options.get("biodenoising_rate") or DEFAULT_RATE)
    return {
        "data_folder": str(dataset_root(Path(options["data_folder"]), rate).resolve()),
        "sample_rate": rate,
        "sets": [labels["set"] for _, labels in sets(options)],
        "pairs": count,
        "listing_sha256": digest.hexdigest(),
        "aggregation": "per clip mean over seeds, then median and MAD over clips (seed card); "
        "pooled clip x seed rows with a bootstrap 95% CI of the median beside it (results.py)",
    }


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--biodenoising-rate", type=int, choices=RATES, default=DEFAULT_RATE,
        help="biodenoising: which rate's folder to score (default 16000, as the seed card)",
    )
    parser.add_argument(
        "--biodenoising-snr-experiments", action="store_true",
        help="biodenoising: score {rate}_snr_experiments/{-5,0,5,10}/ instead of {rate}/",
    )


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="biodenoising",
            clips=clips,
            description="Biodenoising validation set, 62 animal vocalisation pairs (--data-folder; --biodenoising-rate, --biodenoising-snr-experiments)",
            cell_keys=("snr_db",),
            needs_data_folder=True,
            describe=describe,
        )
    )
