"""``dns2020-blind``: the DNS Challenge (Interspeech 2020) blind test set, no references.

``--data-folder`` is ``DNS-Challenge/datasets/blind_test_set`` (microsoft/DNS-Challenge,
branch interspeech2020/master): 600 noisy WAV files, 16 kHz, no clean files:
``noreverb_fileid_<N>.wav`` (150 synthetic mixtures without reverberation),
``reverb_fileid_<N>.wav`` (150 with) and ``realrec_fileid_<N>.wav`` (300 real
recordings), N from 0. The cell is the prefix (``condition``).

Official evaluation: the challenge ranked this set by crowdsourced ITU-T P.808
listening tests per condition; no clean references ship in the folder, so
nothing intrusive can be computed here. nsbench departs: it scores every file with the no-reference
panel (DNSMOS and what else needs no reference: nsbench.run.no_reference), not
with listeners; the mean per condition and overall are its figures. A file
named otherwise stops the run, naming it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from nsbench.builtin.datasets.dns2020_real import labelled, listing_description, sources_of
from nsbench import ClipSource, DatasetSpec, hookimpl

BLIND_NAME = re.compile(r"(noreverb|reverb|realrec)_fileid_(\d+)\.wav")
LAYOUT = "DNS-Challenge datasets/blind_test_set (branch interspeech2020/master)"


def parse_name(name: str) -> dict[str, str]:
    """{"condition", "fileid"} of a blind-test file name; ValueError if it is not one."""
    match = BLIND_NAME.fullmatch(name)
    if not match:
        raise ValueError(f"{name} is not <noreverb|reverb|realrec>_fileid_<N>.wav")
    return {"condition": match.group(1), "fileid": match.group(2)}


def ordered(named: list[tuple[str, dict[str, str]]]) -> list[tuple[str, dict[str, str]]]:
    """By condition, then file id as a number (fileid_2 before fileid_10)."""
    return sorted(named, key=lambda item: (item[1]["condition"], int(item[1]["fileid"])))


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    root = Path(options["data_folder"])
    return sources_of(root, ordered(labelled(root, "dns2020-blind", LAYOUT, parse_name)))


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    root = Path(options["data_folder"])
    names = [name for name, _ in ordered(labelled(root, "dns2020-blind", LAYOUT, parse_name))]
    return listing_description(root, names, LAYOUT)


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="dns2020-blind",
            clips=clips,
            description="DNS Challenge 2020 blind test set, no references (--data-folder .../datasets/blind_test_set)",
            cell_keys=("condition",),
            needs_data_folder=True,
            describe=describe,
            headline_metric="dnsmos_ovrl",
        )
    )
