"""Rated sets: datasets whose files people rated (nsbench.ratings' layout).

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.ratings import RatedSet, RatedItem, Rating, read as read_rated_set, TABLE as RATINGS_TABLE, UNALIGNED_NOTE, aligned_note

__all__ = ["RatedSet", "RatedItem", "Rating", "read_rated_set", "RATINGS_TABLE", "aligned_note", "UNALIGNED_NOTE"]
