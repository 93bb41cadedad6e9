"""Small helpers for the sentences nsbench prints."""
from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """"1 file", "2 files"; ``many`` where the plural is not word + "s"."""
    return f"{count} {word}" if count == 1 else f"{count} {many or word + 's'}"
