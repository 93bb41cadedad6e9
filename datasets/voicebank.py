"""``voicebank``: the VoiceBank-DEMAND test set (Valentini-Botinhao et al. 2016).

``--data-folder`` holds ``clean_testset_wav/`` and ``noisy_testset_wav/`` with the
same basenames (``p232_001.wav`` ... ``p257_434.wav``, 824 files, 48 kHz mono) and
optionally ``logfiles/log_testset.txt``, lines ``<fileid> <noise> <snr>``, and
``testset_txt/<fileid>.txt``, what each clean file says (the ``wer`` metric's
reference; a clip without one is scored against the recogniser's transcript of
its clean file). Read
and scored at 16 kHz by default, as the published numbers are
(``--voicebank-rate 48000`` keeps the original rate).

No evaluation script ships with the corpus (Valentini-Botinhao et al. 2016,
Edinburgh DataShare). The figures papers report, and the noisy-input reference
nsbench checks against (edge-speech-denoising-benchmark,
``speech_denoising/metrics/audio_metrics.py``, ``evaluate``: PESQ wide-band,
``pystoi.stoi(..., extended=False)`` and zero-mean SI-SNR per utterance at
16 kHz, then ``statistics.mean`` over the 824 utterances), are means over
files: nsbench's ``mean`` per metric, over all clips. Departures by design:
the 48 kHz files are resampled with soxr "HQ" (librosa's default), not
necessarily the resampler a paper used, which moves PESQ in the second
decimal; nsbench's ``si_sdr`` is not zero-mean (``si_sdr_zm`` is), and cells
split the mean by noise type and SNR from ``log_testset.txt``.

The row nearly every paper prints on this set (PESQ, CSIG, CBAK, COVL, SSNR,
STOI) is the metric set ``vbd-row`` (metrics/composite.py), which the
description suggests: ``--metric vbd-row`` writes it as a table, report.md's
and ``paper-table.tex``.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Mapping

from nsbench.adapters import load_pair, load_with_transcript, plural
from nsbench import ClipSource, DatasetSpec, UserError, hookimpl

CLEAN_DIR = "clean_testset_wav"
NOISY_DIR = "noisy_testset_wav"
TEXT_DIR = "testset_txt"
# The Edinburgh DataShare archive unpacks logfiles.zip into logfiles/; some
# copies keep the log beside the audio folders.
LOG_PATHS = ("logfiles/log_testset.txt", "log_testset.txt")
DEFAULT_RATE = 16000
NO_LOG = "all"  # the single cell when there is no log
NOT_IN_LOG = "not in log"
SHOWN = 10


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def shown(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (" ..." if len(names) > SHOWN else "") if names else "nothing"


def log_path(root: Path) -> Path | None:
    return next((root / p for p in LOG_PATHS if (root / p).is_file()), None)


def read_log(path: Path) -> dict[str, dict[str, str]]:
    """file id -> {"noise", "snr_db"}; a malformed line is a UserError naming it."""
    entries = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        try:
            file_id, noise, snr = fields
            snr_db = f"{float(snr):g}"
        except ValueError:
            raise UserError(f"{path}:{number}: expected '<fileid> <noise> <snr>', found {line.strip()!r}") from None
        entries[file_id] = {"noise": noise, "snr_db": snr_db}
    return entries


def pairs(root: Path) -> list[tuple[str, Path, Path]]:
    """(file id, noisy, clean) for every basename, sorted; unpaired files are a
    UserError that lists them."""
    folders = {role: root / role for role in (CLEAN_DIR, NOISY_DIR)}
    for folder in folders.values():
        if not folder.is_dir():
            raise UserError(
                f"voicebank expects {CLEAN_DIR}/ and {NOISY_DIR}/ under {root}; "
                f"no {folder.name}/ there, found: {shown(listing(root))}"
            )
    clean = {n for n in listing(folders[CLEAN_DIR]) if n.lower().endswith(".wav")}
    noisy = {n for n in listing(folders[NOISY_DIR]) if n.lower().endswith(".wav")}
    for folder, names in ((folders[NOISY_DIR], noisy), (folders[CLEAN_DIR], clean)):
        if not names:
            raise UserError(f"no .wav files under {folder}; found: {shown(listing(folder))}")
    unpaired = sorted([f"{NOISY_DIR}/{n}" for n in noisy - clean] + [f"{CLEAN_DIR}/{n}" for n in clean - noisy])
    if unpaired:
        raise UserError(f"{plural(len(unpaired), 'file')} under {root} {'has' if len(unpaired) == 1 else 'have'} no partner of the same name: {shown(unpaired)}")
    return [(Path(n).stem, folders[NOISY_DIR] / n, folders[CLEAN_DIR] / n) for n in sorted(noisy)]


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    root = Path(options["data_folder"])
    rate = int(options.get("voicebank_rate") or DEFAULT_RATE)
    found = pairs(root)
    path = log_path(root)
    log = read_log(path) if path else None
    sources = []
    for file_id, noisy, clean in found:
        if log is None:
            labels = {"noise": NO_LOG, "snr_db": NO_LOG}
        else:
            labels = dict(log.get(file_id, {"noise": NOT_IN_LOG, "snr_db": NOT_IN_LOG}))
        load = functools.partial(load_pair, file_id, str(noisy), str(clean), labels, target_rate=rate)
        text = root / TEXT_DIR / f"{file_id}.txt"
        if text.is_file():
            load = functools.partial(load_with_transcript, load, str(text))
        sources.append(ClipSource(clip_id=file_id, load=load, labels=labels))
    return sources


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    root = Path(options["data_folder"])
    found = pairs(root)
    digest = hashlib.sha256()
    for _, noisy, clean in found:
        for path in (noisy, clean):
            digest.update(f"{path.parent.name}/{path.name}:{path.stat().st_size}\n".encode())
    path = log_path(root)
    return {
        "data_folder": str(root.resolve()),
        "pairs": len(found),
        "listing_sha256": digest.hexdigest(),
        "sample_rate": int(options.get("voicebank_rate") or DEFAULT_RATE),
        "log": str(path) if path else None,
        "log_sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path else None,
    }


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--voicebank-rate", type=int, default=DEFAULT_RATE, metavar="HZ",
        help="voicebank: rate the 48 kHz files are read and scored at (default 16000, as published)",
    )


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="voicebank",
            clips=clips,
            description=("VoiceBank-DEMAND test set, 824 pairs, scored at 16 kHz (--data-folder; --voicebank-rate); "
                         "the papers' row: --metric vbd-row"),
            cell_keys=("noise", "snr_db"),
            needs_data_folder=True,
            describe=describe,
        )
    )
