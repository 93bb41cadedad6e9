"""``folder``: a user's own ``noisy/`` and ``clean/`` folders, paired by the
path of each file below them.

Every file is its own clip: ``noisy/s1/d.wav`` pairs with ``clean/s1/d.wav``
and is the clip ``s1/d``, apart from ``noisy/s2/d.wav`` (keyed by bare file
name, one of the two was silently dropped). Two files that would be one clip
(``a.wav`` and ``a.flac``: their records were merged as if they were seeds of
one clip, and both wrote ``a.wav``) or a name that cannot name one (``...wav``)
stop the run, named.

``noisy/`` alone is a set without references (a user's calls, uploads, field
recordings): every clip loads with ``clean=None`` and the run scores it with
the metrics that need no reference (nsbench.run.no_reference). With both
folders a noisy file without its clean one stops the run, unless
``--allow-unpaired`` scores it without a reference; a clean file without its
noisy one stops it either way (there is nothing to run an engine on).

What the file system would hide stops the run too, named: a folder that
cannot be listed, a symbolic link that loops or leads nowhere (``rglob``
skipped them without a word). Links to folders are followed.

No official script: a user's set follows nsbench's own protocol. Each metric's
``mean``, ``median`` and ``mad`` are over clips, each clip once (a clip run with
several seeds counts once, by its mean over seeds), as Picovoice's benchmark
averages files; one cell, named after the folder.

What each clean file says (the ``wer`` metric's reference), where known: a
``transcripts.tsv`` at the root, lines ``<file name or stem><TAB><text>`` (the
path below ``clean/``, ``s1/d.wav`` or ``s1/d``, or the bare name), or a
``.txt`` beside the clean file with its stem (``clean/a.wav``, ``clean/a.txt``).
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from nsbench.adapters import load_noisy, load_pair, load_with_transcript, plural, with_text
from nsbench import ClipSource, DatasetSpec, UserError, hookimpl

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
TRANSCRIPTS_FILE = "transcripts.tsv"
# Names that cannot name a clip (nor its output file): a file called ``...wav``.
NOT_NAMES = ("", ".", "..")


def audio_files(folder: Path) -> dict[str, Path]:
    """The audio files under ``folder`` by their path below it (``s1/d.wav``), in sorted order."""
    return {path.relative_to(folder).as_posix(): path for path in sorted(walk(folder, folder, ()))}


def walk(folder: Path, top: Path, above: tuple[tuple[int, int], ...]) -> Iterator[Path]:
    """The audio files under ``folder``, following links to folders; ``above``
    holds the folders walked into so far, so that a link back to one is named
    as the loop it is instead of being walked for ever."""
    here = (*above, folder_identity(folder))
    for entry in listing(folder, top):
        path = Path(entry.path)
        if entry.is_symlink():
            check_link(path, top)
        if entry.is_dir():
            if folder_identity(path) in here:
                raise UserError(f"{shown(path, top)} is a symbolic link to a folder above it, a loop: remove it "
                                "or point it elsewhere")
            yield from walk(path, top, here)
        elif entry.name.lower().endswith(AUDIO_SUFFIXES):
            yield path


def listing(folder: Path, top: Path) -> list[os.DirEntry]:
    """The folder's entries, or a UserError: rglob skipped a folder it could
    not list without a word, and a set silently smaller is a run nobody can compare."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError as error:
        raise UserError(f"cannot list {shown(folder, top)}: {error.strerror}") from error


def check_link(path: Path, top: Path) -> None:
    """A UserError for a symbolic link that loops or leads nowhere: what it
    stood for (a file, a folder of them) cannot be known."""
    try:
        os.stat(path)
    except OSError as error:
        raise UserError(f"{shown(path, top)} is a symbolic link that leads nowhere ({error.strerror}): "
                        "mend it or remove it") from error


def folder_identity(folder: Path) -> tuple[int, int]:
    status = os.stat(folder)
    return status.st_dev, status.st_ino


def shown(path: Path, top: Path) -> str:
    """``noisy/s1 under ROOT``: where a problem is, as the user laid the set out."""
    return f"{path.relative_to(top.parent).as_posix()} under {top.parent}"


def clip_id(name: str) -> str:
    """The clip a file is: its path below ``noisy/`` without the suffix (``s1/d``)."""
    return name[: name.rindex(".")]


def check_clip_ids(names: list[str], root: Path) -> None:
    """A UserError naming the files that would not be clips of their own."""
    unnamed = [name for name in names if clip_id(name).rpartition("/")[2] in NOT_NAMES]
    if unnamed:
        raise UserError(f"noisy/{unnamed[0]} under {root}: a file name without the suffix "
                        f"('{clip_id(unnamed[0]).rpartition('/')[2]}') cannot name a clip: rename it")
    by_id: dict[str, list[str]] = {}
    for name in names:
        by_id.setdefault(clip_id(name), []).append(name)
    shared = next((files for files in by_id.values() if len(files) > 1), None)
    if shared:
        listed = " and ".join(f"noisy/{name}" for name in shared)
        raise UserError(f"{listed} under {root} would be one clip '{clip_id(shared[0])}': every file is its own clip, "
                        "so rename all but one")


def pairs(root: Path, allow_unpaired: bool = False) -> list[tuple[str, Path, Path | None]]:
    """(name, noisy, clean) for every noisy file, by its path below ``noisy/``
    (``s1/d.wav``); clean is None for a file without a reference: every file
    when there is no ``clean/`` folder, and with ``allow_unpaired`` the noisy
    files that have no clean file.

    Other unpaired files are a UserError that lists them: silently scoring a
    subset would make two runs incomparable without anyone noticing.
    """
    folders = {role: root / role for role in ("noisy", "clean")}
    if not folders["noisy"].is_dir():
        raise UserError(f"folder dataset expects {root}/noisy/ (and {root}/clean/ for references); missing {folders['noisy']}")
    noisy = audio_files(folders["noisy"])
    if not noisy:
        raise UserError(f"no audio files ({', '.join(AUDIO_SUFFIXES)}) under {folders['noisy']}")
    check_clip_ids(list(noisy), root)
    if not folders["clean"].is_dir():  # a set without references
        return [(name, noisy[name], None) for name in sorted(noisy)]
    clean = audio_files(folders["clean"])
    unpaired = sorted(set(clean) - set(noisy)) + ([] if allow_unpaired else sorted(set(noisy) - set(clean)))
    if unpaired:
        listed = ", ".join(unpaired[:10]) + (" ..." if len(unpaired) > 10 else "")
        hint = "" if allow_unpaired else " (--allow-unpaired scores noisy files without a reference)"
        raise UserError(f"{plural(len(unpaired), 'file')} in only one of noisy/ and clean/ under {root}: {listed}{hint}")
    return [(name, noisy[name], clean.get(name)) for name in sorted(noisy)]


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    root = Path(options["data_folder"])
    labels = {"set": root.name}
    table = read_transcripts(root / TRANSCRIPTS_FILE)
    sources = []
    for name, noisy, clean in pairs(root, bool(options.get("allow_unpaired"))):
        identifier = clip_id(name)
        if clean is None:
            load = functools.partial(load_noisy, identifier, str(noisy), labels)
            sources.append(ClipSource(clip_id=identifier, load=load, labels=labels, has_reference=False))
            continue
        load = functools.partial(load_pair, identifier, str(noisy), str(clean), labels)
        text, beside = transcript(table, name), clean.with_suffix(".txt")
        if text is not None:
            load = functools.partial(with_text, load, text)
        elif beside.is_file():
            load = functools.partial(load_with_transcript, load, str(beside))
        sources.append(ClipSource(clip_id=identifier, load=load, labels=labels))
    return sources


def transcript(table: Mapping[str, str], name: str) -> str | None:
    """A clean file's line of transcripts.tsv: by its path below ``clean/``
    (``s1/d.wav``, ``s1/d``), else by its bare name (``d.wav``, ``d``)."""
    bare = name.rpartition("/")[2]
    return next((table[key] for key in (name, clip_id(name), bare, clip_id(bare)) if key in table), None)


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
            description="your own noisy/ and clean/ folders, paired by the path below them (--data-folder); noisy/ alone: no references",
            cell_keys=("set",),
            needs_data_folder=True,
            describe=describe,
        )
    )
