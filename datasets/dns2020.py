"""``dns2020``: the DNS Challenge (Interspeech 2020) synthetic test set.

``--data-folder`` is ``DNS-Challenge/datasets/test_set/synthetic/no_reverb``
(branch interspeech2020/master), or ``with_reverb``: ``clean/clean_fileid_<ID>.wav``
and ``noisy/<cleanstem>_<noisestem>_snr<S>_tl<T>_fileid_<ID>.wav``, paired on
the file id. This is Picovoice's benchmark set; its clip names (``<fileid>_<noisestem>``)
are Picovoice's too.

``--remix-snr-db S [S ...]`` remixes every pair at each S with Picovoice's
remixer (datasets/dns2020_remix.py), so one run gives one table with a row per SNR.

Official script: Picovoice/noise-suppression-benchmark (line numbers at commit
c4d5d9f). Per file, ``pystoi.stoi(clean, denoised, fs, extended=False)`` on
the file as soundfile reads it (``benchmark.py`` 40-44, ``metrics.py`` 6-11),
and RTF = the engine's runtime over the file's duration (``benchmark.py`` 43);
the reported figures are ``np.mean`` over the files of each (113-114, written
as ``{"rtf", "stoi"}`` 120-122). nsbench's ``stoi`` key is that mean. Its
``rtf`` is total CPU time over total duration, where Picovoice's is the mean
of per-file wall-clock ratios (``perf_counter`` around the engine call,
``engine.py`` 64-66, 118-120): on DNS 2020's files, all 10 s, the ratio of
totals equals the mean of ratios; CPU rather than wall time is a departure by
design (``rtf_wall`` is beside it), and so is removing every engine's declared
or measured delay before scoring, where Picovoice removes Koala's
(``engine.py`` 71) and none for RNNoise. Remixes follow ``remixer.py`` (peak
512-sample-frame energy, lines 10 and 51).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.adapters import load_pair
from nsbench import Clip, ClipSource, DatasetSpec, UserError, hookimpl

# Pairing: the file id ends every name in both folders.
FILE_ID = re.compile(r"fileid_(\d+)\.wav$")
CLEAN_NAME = re.compile(r"clean_fileid_(\d+)\.wav")
# Picovoice's Interspeech2020Dataset.NOISY_FILENAME_PATTERN: group 1 is the noise stem.
PICOVOICE_NOISY = re.compile(r"clnsp\d+_(.+)_snr\d+_tl-\d+_fileid_(\d+)\.wav")
SNR_IN_NAME = re.compile(r"_snr(-?\d+(?:\.\d+)?)_")
# Noise stems in the test set (see tests/data/dns2020_noisy_names.txt):
#  freesound clips "<category words>_<freesound id>_<segment>" (vacuum_154783_0,
#  air_conditioner_151977_3), also with the uploader and title
#  (clatter_noise_431472__debsound__retro-bicycle-...-rear-wheel_0);
#  11-character YouTube ids (-ozcHS8vKhU, DMTAv9mw_x8, s8-7-XXSGvQ);
#  a YouTube id joined to a freesound stem (uOZZEV1IcDI-copy_machine_426874_7).
FREESOUND_STEM = re.compile(r"([A-Za-z]+(?:_[A-Za-z]+)*)_\d+(?:__.+)?_\d+")
YOUTUBE_ID = re.compile(r"[A-Za-z0-9_-]{11}")
YOUTUBE_THEN_FREESOUND = re.compile(r"[A-Za-z0-9_-]{11}-(.+)")
UNKNOWN = "unknown"
SHOWN = 10  # names listed in an error before "..."


def noise_label(stem: str) -> str:
    """A noise category for a noise stem: the freesound category words
    ("vacuum", "air_conditioner"), or "youtube" for a bare YouTube id, whose
    content the name does not tell."""
    match = FREESOUND_STEM.fullmatch(stem)
    if match:
        return match.group(1)
    if YOUTUBE_ID.fullmatch(stem):
        return "youtube"
    match = YOUTUBE_THEN_FREESOUND.fullmatch(stem)
    if match and FREESOUND_STEM.fullmatch(match.group(1)):
        return FREESOUND_STEM.fullmatch(match.group(1)).group(1)
    return UNKNOWN


def parse_noisy_name(name: str) -> tuple[str, dict[str, str]]:
    """(item name, labels) for a noisy file name. The item name is Picovoice's
    ``<fileid>_<noisestem>``; a name their pattern does not match keeps its
    own stem and the label "unknown" rather than being dropped."""
    file_id = FILE_ID.search(name).group(1)
    match = PICOVOICE_NOISY.fullmatch(name)
    snr = SNR_IN_NAME.search(name)
    labels = {"snr_db": snr.group(1) if snr else UNKNOWN, "fileid": file_id}
    if match:
        stem = match.group(1)
        labels.update(noise=noise_label(stem), noise_stem=stem)
        return f"{file_id}_{stem}", labels
    labels.update(noise=UNKNOWN, noise_stem=UNKNOWN)
    return f"{file_id}_{name[: FILE_ID.search(name).start()].rstrip('_')}", labels


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def shown(names: Sequence[str]) -> str:
    return ", ".join(names[:SHOWN]) + (" ..." if len(names) > SHOWN else "") if names else "nothing"


def check_layout(root: Path) -> None:
    """Both subfolders exist, or a message with what was expected and found."""
    for role in ("clean", "noisy"):
        if (root / role).is_dir():
            continue
        found = listing(root)
        hint = [str(root / n) for n in found if (root / n / "clean").is_dir() and (root / n / "noisy").is_dir()]
        tip = f"; did you mean --data-folder {' or '.join(hint)}?" if hint else ""
        raise UserError(
            f"dns2020 expects clean/ and noisy/ under {root} (DNS-Challenge "
            f"datasets/test_set/synthetic/no_reverb or with_reverb); no {role}/ there, found: {shown(found)}{tip}"
        )


def pairs(root: Path) -> list[tuple[str, dict[str, str], Path, Path]]:
    """(item name, labels, noisy path, clean path) for every file id, by id.

    Any .wav file that does not pair, or does not follow the naming, is a
    UserError that lists it: scoring a silent subset would make two runs
    incomparable without anyone noticing.
    """
    check_layout(root)
    clean_dir, noisy_dir = root / "clean", root / "noisy"
    clean_wavs = [n for n in listing(clean_dir) if n.lower().endswith(".wav")]
    noisy_wavs = [n for n in listing(noisy_dir) if n.lower().endswith(".wav")]
    clean = {m.group(1): n for n in clean_wavs if (m := CLEAN_NAME.fullmatch(n))}
    noisy: dict[str, list[str]] = {}
    for name in noisy_wavs:
        if match := FILE_ID.search(name):
            noisy.setdefault(match.group(1), []).append(name)
    if not clean:
        raise UserError(f"no clean_fileid_*.wav under {clean_dir}; found: {shown(listing(clean_dir))}")
    if not noisy:
        raise UserError(f"no *_fileid_<ID>.wav under {noisy_dir}; found: {shown(listing(noisy_dir))}")
    problems = [f"clean/{n} (not clean_fileid_<ID>.wav)" for n in clean_wavs if not CLEAN_NAME.fullmatch(n)]
    problems += [f"noisy/{n} (no fileid_<ID>.wav at the end)" for n in noisy_wavs if not FILE_ID.search(n)]
    problems += [f"noisy/{' and '.join(ns)} (same file id {i})" for i, ns in noisy.items() if len(ns) > 1]
    problems += [f"noisy/{ns[0]} (no clean/clean_fileid_{i}.wav)" for i, ns in noisy.items() if i not in clean]
    problems += [f"clean/{n} (no noisy file with fileid_{i})" for i, n in clean.items() if i not in noisy]
    if problems:
        raise UserError(f"{len(problems)} files under {root} do not pair by file id: {shown(sorted(problems))}")
    result = []
    for file_id in sorted(noisy, key=int):
        item, labels = parse_noisy_name(noisy[file_id][0])
        result.append((item, labels, noisy_dir / noisy[file_id][0], clean_dir / clean[file_id]))
    return result


def remix_snrs(options: Mapping[str, Any]) -> list[float]:
    return list(options.get("remix_snr_db") or [])


def snr_text(snr_db: float) -> str:
    return f"{snr_db:g}"


def load_remixed(clip_id: str, noisy_path: str, clean_path: str, labels: Mapping[str, str], snr_db: float) -> Clip:
    """Remix (or find the cached remix) and load it against the clean file."""
    from nsbench.builtin.datasets import dns2020_remix as remix  # the module, so a test can count remix.remix calls

    remixed = remix.cached_remix(clean_path, noisy_path, snr_db)
    clip = load_pair(clip_id, str(remixed), clean_path, labels)
    # Every clip is remixed (the dataset description says how); only clipping,
    # which Picovoice's 16-bit write does silently, is worth a note.
    clipped = int((clip.noisy >= 32767 / 32768).sum() + (clip.noisy <= -1.0).sum())
    if not clipped:
        return clip
    note = f"the remix at {snr_text(snr_db)} dB reaches full scale on {clipped} samples (clipped, as Picovoice's 16-bit write does)"
    # This note says why; load_pair's own full-scale note on the noisy file would repeat it.
    kept = tuple(n for n in clip.notes if not n.startswith("noisy reaches full scale"))
    return dataclasses.replace(clip, notes=kept + (note,))


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    root = Path(options["data_folder"])
    snrs = remix_snrs(options)
    sources = []
    for item, labels, noisy, clean in pairs(root):
        if not snrs:
            load = functools.partial(load_pair, item, str(noisy), str(clean), labels)
            sources.append(ClipSource(clip_id=item, load=load, labels=labels))
            continue
        # Each pair at every SNR in turn, so --limit still spans every row.
        for snr in snrs:
            clip_id = f"{item}_remixed_{snr_text(snr)}db"
            remixed_labels = {**labels, "snr_db": snr_text(snr), "file_snr_db": labels["snr_db"]}
            load = functools.partial(load_remixed, clip_id, str(noisy), str(clean), remixed_labels, snr)
            sources.append(ClipSource(clip_id=clip_id, load=load, labels=remixed_labels))
    return sources


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    """The folder, the pair count and a hash of file names and sizes (cheap,
    catches most changes), and the remix settings."""
    from nsbench.builtin.datasets.dns2020_remix import POWER_FRAME, REMIXER_VERSION

    root = Path(options["data_folder"])
    found = pairs(root)
    digest = hashlib.sha256()
    for path in sorted(p for _, _, noisy, clean in found for p in (noisy, clean)):
        digest.update(f"{path.parent.name}/{path.name}:{path.stat().st_size}\n".encode())
    description = {"data_folder": str(root.resolve()), "pairs": len(found), "listing_sha256": digest.hexdigest()}
    snrs = remix_snrs(options)
    if snrs:
        description["remix"] = {
            "snr_db": snrs,
            "remixer_version": REMIXER_VERSION,
            "definition": f"noise = noisy - clean; power = max sum of squares over whole {POWER_FRAME}-sample frames; "
            "clean + g*noise with power(clean)/power(g*noise) = 10^(S/10); 16-bit WAV as libsndfile writes it",
        }
    return description


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--remix-snr-db", type=float, nargs="+", metavar="S",
        help="dns2020: remix every pair at each SNR S (dB) with Picovoice's remixer; one report row per S",
    )


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="dns2020",
            clips=clips,
            description="DNS Challenge 2020 synthetic test set (--data-folder .../synthetic/no_reverb); --remix-snr-db S ...",
            cell_keys=("snr_db",),
            needs_data_folder=True,
            describe=describe,
        )
    )
