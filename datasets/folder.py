"""``folder``: a user's own ``noisy/`` and ``clean/`` folders, paired by file name.

``noisy/`` alone is a set without references (a user's calls, uploads, field
recordings): every clip loads with ``clean=None`` and the run scores it with
the metrics that need no reference (nsbench.run.no_reference). With both
folders a noisy file without its clean one stops the run, unless
``--allow-unpaired`` scores it without a reference; a clean file without its
noisy one stops it either way (there is nothing to run an engine on).

No official script: a user's set follows nsbench's own protocol. Each metric's
``mean``, ``median`` and ``mad`` are over clips, each clip once (a clip run with
several seeds counts once, by its mean over seeds), as Picovoice's benchmark
averages files; one cell, named after the folder.

What each clean file says (the ``wer`` metric's reference), where known: a
``transcripts.tsv`` at the root, lines ``<file name or stem><TAB><text>``, or a
``.txt`` beside the clean file with its stem (``clean/a.wav``, ``clean/a.txt``).
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Mapping

from nsbench.adapters import load_noisy, load_pair, load_with_transcript, plural, with_text
from nsbench import ClipSource, DatasetSpec, UserError, hookimpl

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
TRANSCRIPTS_FILE = "transcripts.tsv"


def audio_files(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted(folder.rglob("*")) if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file()}


def pairs(root: Path, allow_unpaired: bool = False) -> list[tuple[str, Path, Path | None]]:
    """(name, noisy, clean) for every noisy file; clean is None for a file
    without a reference: every file when there is no ``clean/`` folder, and
    with ``allow_unpaired`` the noisy files that have no clean file.

    Other unpaired files are a UserError that lists them: silently scoring a
    subset would make two runs incomparable without anyone noticing.
    """
    folders = {role: root / role for role in ("noisy", "clean")}
    if not folders["noisy"].is_dir():
        raise UserError(f"folder dataset expects {root}/noisy/ (and {root}/clean/ for references); missing {folders['noisy']}")
    noisy = audio_files(folders["noisy"])
    if not noisy:
        raise UserError(f"no audio files ({', '.join(AUDIO_SUFFIXES)}) under {folders['noisy']}")
    if not folders["clean"].is_dir():  # a set without references
        return [(name, noisy[name], None) for name in sorted(noisy)]
    clean = audio_files(folders["clean"])
    unpaired = sorted(set(clean) - set(noisy)) + ([] if allow_unpaired else sorted(set(noisy) - set(clean)))
    if unpaired:
        shown = ", ".join(unpaired[:10]) + (" ..." if len(unpaired) > 10 else "")
        hint = "" if allow_unpaired else " (--allow-unpaired scores noisy files without a reference)"
        raise UserError(f"{plural(len(unpaired), 'file')} in only one of noisy/ and clean/ under {root}: {shown}{hint}")
    return [(name, noisy[name], clean.get(name)) for name in sorted(noisy)]


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    root = Path(options["data_folder"])
    labels = {"set": root.name}
    table = read_transcripts(root / TRANSCRIPTS_FILE)
    sources = []
    for name, noisy, clean in pairs(root, bool(options.get("allow_unpaired"))):
        stem = Path(name).stem
        if clean is None:
            load = functools.partial(load_noisy, stem, str(noisy), labels)
            sources.append(ClipSource(clip_id=stem, load=load, labels=labels, has_reference=False))
            continue
        load = functools.partial(load_pair, stem, str(noisy), str(clean), labels)
        text, beside = table.get(name, table.get(stem)), clean.with_suffix(".txt")
        if text is not None:
            load = functools.partial(with_text, load, text)
        elif beside.is_file():
            load = functools.partial(load_with_transcript, load, str(beside))
        sources.append(ClipSource(clip_id=stem, load=load, labels=labels))
    return sources


def read_transcripts(path: Path) -> dict[str, str]:
    """transcripts.tsv: file name (or stem) -> text; {} without the file."""
    if not path.is_file():
        return {}
    table = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        name, tab, text = line.partition("\t")
        if not tab:
            raise UserError(f"{path}:{number}: expected '<file name><TAB><text>', found {line.strip()!r}")
        table[name.strip()] = text.strip()
    return table


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    """The folder and a hash of its file names and sizes (cheap, catches most changes)."""
    root = Path(options["data_folder"])
    digest = hashlib.sha256()
    for name, noisy, clean in pairs(root, bool(options.get("allow_unpaired"))):
        digest.update(f"{name}:{noisy.stat().st_size}:{clean.stat().st_size if clean else '-'}\n".encode())
    transcripts = root / TRANSCRIPTS_FILE
    return {
        "data_folder": str(root.resolve()),
        "listing_sha256": digest.hexdigest(),
        **({"transcripts_sha256": hashlib.sha256(transcripts.read_bytes()).hexdigest()} if transcripts.is_file() else {}),
    }


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--allow-unpaired", action="store_true",
        help="folder: score noisy files that have no clean file without a reference, instead of stopping the run",
    )


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="folder",
            clips=clips,
            description="your own noisy/ and clean/ folders, paired by file name (--data-folder); noisy/ alone: no references",
            cell_keys=("set",),
            needs_data_folder=True,
            describe=describe,
        )
    )
