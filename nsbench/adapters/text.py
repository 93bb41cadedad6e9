"""Provenance and text: installed versions, counted nouns.

Public (docs/adapters.md): import these from ``nsbench.adapters``. ``package_versions``
is defined here over the report's provenance (internal), so a move there
changes nothing a plugin calls."""
from __future__ import annotations

from typing import Iterable

from nsbench.text import plural

__all__ = ["package_versions", "plural"]


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed versions of distributions by name ('not installed' where absent)."""
    from nsbench.report import provenance  # the report's, read when a plugin asks

    return provenance.package_versions(names)
