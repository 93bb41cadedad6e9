"""Small helpers for the sentences nsbench prints."""
from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """"1 file", "2 files"; ``many`` where the plural is not word + "s"."""
    return f"{count} {word}" if count == 1 else f"{count} {many or word + 's'}"


ELLIPSIS = "…"
NARROWEST = 4  # a column cut to fit is never narrower than this, nor than its header


def fit_rows(rows: list[tuple[str, ...]], width: int | None) -> tuple[str, bool]:
    """The rows as aligned columns two spaces apart, and whether any cell was
    cut. With ``width``, the columns after the first (the name one types) are
    capped at one width, the largest that fits, and longer cells end in an
    ellipsis; the first column is never cut."""
    cells = [[str(cell) for cell in row] for row in rows]
    natural = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    widths = list(natural)
    if width is not None and total_width(natural) > width:
        widths = [natural[0], *capped(natural[1:], width - natural[0] - 2, [len(h) for h in cells[0][1:]])]
    cut = widths != natural
    lines = ["  ".join(shorten(cell, w).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines), cut


def total_width(widths: list[int]) -> int:
    return sum(widths) + 2 * (len(widths) - 1)


def capped(natural: list[int], room: int, headers: list[int]) -> list[int]:
    """Each of ``natural`` capped at the largest common cap that fits ``room``
    (with the separators), no column below NARROWEST or its header."""
    def widths_at(cap: int) -> list[int]:
        return [min(w, max(cap, NARROWEST, h)) for w, h in zip(natural, headers)]

    cap = max(natural)
    while cap > 1 and total_width(widths_at(cap)) > room:
        cap -= 1
    return widths_at(cap)


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS
