"""One folder per run identity under the results folder, and
``results/<dataset>`` pointing at the latest.

Runs whose numbers do not compare (other clips, metrics, conditions, dataset
options) used to share ``results/<dataset>/`` and replace each other's
reports. Each distinct identity (nsbench.report.coverage.run_identity) now has
a folder of its own, ``<dataset>-<digest>``: a readable name and the first
hex digits of the identity's digest. Runs with the same identity share one, so
engines run at different times still stand side by side in one report.
``results/<dataset>`` is a relative symbolic link to the newest, so
``nsbench listen results/demo`` and ``--compare results/demo`` find it, and a
copied results folder keeps the link working.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

from nsbench.store import atomic
from nsbench.store.digests import digest

DIGEST_CHARS = 8


def folder_name(dataset: str, identity: Mapping[str, Any]) -> str:
    return f"{dataset}-{digest(json.dumps(identity, sort_keys=True, default=str))[:DIGEST_CHARS]}"


def run_folder(results_root: Path, dataset: str, identity: Mapping[str, Any]) -> Path:
    return results_root / folder_name(dataset, identity)


def is_ours(target: str, dataset: str) -> bool:
    """A link nsbench made: to a sibling named as folder_name names them."""
    return re.fullmatch(rf"{re.escape(dataset)}-[0-9a-f]{{{DIGEST_CHARS}}}", target) is not None


def point_latest(results_root: Path, dataset: str, folder: Path) -> str:
    """Make ``results_root/<dataset>`` link to ``folder``; a note where it
    cannot, since nsbench never replaces a folder or file it did not make
    (an older nsbench's results folder, or the user's own, stays as it is)."""
    link = results_root / dataset
    if link.is_symlink() and not is_ours(os.readlink(link), dataset):
        return f"{link} links {os.readlink(link)}, not a run's folder, and stays as it is; this run is in {folder}/"
    if link.exists() and not link.is_symlink():
        return f"{link}/ is a folder, not nsbench's link to the latest run, and stays as it is; this run is in {folder}/"
    atomic.symlink(link, folder.name)  # relative, so a copied results folder keeps it working
    return ""
