"""A rated set: recordings with the ratings people gave them, in one layout
every source of ratings is turned into (docs/datasets.md, "Rated sets").

``DIR/ratings.csv`` names the audio (paths relative to DIR), one row per
file. Columns: ``file``; optional ``condition`` (what was done to it) and
``reference`` (a clean reference's path, for the intrusive metrics); one
column per rated dimension, named by it (``mos``, ``sig``, ``bak``, ``ovrl``,
``mushra``, any other name), and optionally ``<dimension>_votes``,
``<dimension>_std`` and ``<dimension>_ci95`` (the ratings' count, standard
deviation and 95 % half-interval, which P.1401's RMSE* and outlier ratio use).

A table is read whole or not at all: every problem (a file that is not
there, a row given twice, a rating off its scale, a count that is not one)
is one line of the error, and nothing is scored from a table that has one.
The listening test's answers (nsbench.listen.collect) are written in this
layout, so its agreement and a public rated set's come from the same code.
"""
from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.plugins.errors import UserError

TABLE = "ratings.csv"
FILE, CONDITION, REFERENCE = "file", "condition", "reference"
VOTES, STD, CI95 = "votes", "std", "ci95"
EXTRAS = (VOTES, STD, CI95)
# The scales nsbench knows, by dimension name; any other dimension takes any finite number.
SCALES = {"mos": (1.0, 5.0), "sig": (1.0, 5.0), "bak": (1.0, 5.0), "ovrl": (1.0, 5.0), "mushra": (0.0, 100.0)}
Z95 = 1.96  # the 95 % half-interval of a mean: 1.96 std / sqrt(votes) (the P.835 workbook's own)
# What a rated clip notes of its reference's alignment: written by the rated
# sets' adapters (datasets/rated.py), read back by the report
# (nsbench.report.human_agreement), so one wording serves both.
ALIGNED_NOTE = "aligned to its reference: the rated file lags it by {lag} samples at {rate} Hz"
ALIGNED_PATTERN = re.compile(r"aligned to its reference: the rated file lags it by (-?\d+) samples at (\d+) Hz")
UNALIGNED_NOTE = "not aligned to its reference: no clear lag found"


@dataclass(frozen=True)
class Rating:
    """One dimension's rating of one file (or condition): the mean and, where known, its spread."""

    mean: float
    votes: float = math.nan
    std: float = math.nan
    ci95: float = math.nan


@dataclass(frozen=True)
class RatedItem:
    file: str  # relative to the set's folder
    condition: str = ""
    reference: str = ""
    ratings: Mapping[str, Rating] = field(default_factory=dict)
    name: str = ""  # the clip's name where the adapter gives one (p835-reference: c1_f1)

    @property
    def clip_id(self) -> str:
        """The clip the file is: its name, else its path without the suffix (as the folder dataset names clips)."""
        return self.name or self.file.rpartition(".")[0] or self.file


@dataclass(frozen=True)
class RatedSet:
    folder: Path
    cell: str  # the cell's value of ``set`` (the folder's name; wb, fullband for the P.835 set)
    dimensions: tuple[str, ...]
    items: tuple[RatedItem, ...]
    # Per condition and dimension, where the source publishes them (the P.835
    # workbook's per-condition sheet); None: pooled from the files.
    condition_ratings: Mapping[str, Mapping[str, Rating]] | None = None
    table: str = TABLE  # the file below ``folder`` the ratings were read from (the provenance hashes it)

    def conditions(self) -> dict[str, dict[str, Rating]]:
        """Each condition's rating per dimension: as published, else pooled from its files (``pooled``); {} without conditions."""
        if self.condition_ratings is not None:
            return {name: dict(by_dim) for name, by_dim in self.condition_ratings.items()}
        groups: dict[str, list[RatedItem]] = {}
        for item in self.items:
            if item.condition:
                groups.setdefault(item.condition, []).append(item)
        return {name: {dim: pooled([item.ratings[dim] for item in members]) for dim in self.dimensions}
                for name, members in groups.items()}


def aligned_note(lag: int, rate: int) -> str:
    """The note of a reference moved by ``lag`` samples at ``rate`` Hz to meet its rated file."""
    return ALIGNED_NOTE.format(lag=lag, rate=rate)


def alignment_of(note: str) -> tuple[int, int] | None:
    """(lag, rate) of an ``aligned_note``; None for any other note."""
    match = ALIGNED_PATTERN.match(note)
    return (int(match[1]), int(match[2])) if match else None


def pooled(ratings: Sequence[Rating]) -> Rating:
    """A condition's rating from its files': with vote counts, the mean over
    every vote and the standard deviation of all votes (from each file's mean,
    std and count, ddof 1, as the P.835 workbook computes its per-condition
    sheet, which this reproduces to the last digit); without, the mean of the
    files' means and no spread."""
    votes = [r.votes for r in ratings]
    if any(math.isnan(v) for v in votes):
        return Rating(sum(r.mean for r in ratings) / len(ratings))
    total = sum(votes)
    mean = sum(r.votes * r.mean for r in ratings) / total
    if any(math.isnan(r.std) for r in ratings) or total < 2:
        return Rating(mean, total)
    squares = sum((r.votes - 1) * r.std**2 + r.votes * (r.mean - mean) ** 2 for r in ratings)
    std = math.sqrt(squares / (total - 1))
    return Rating(mean, total, std, Z95 * std / math.sqrt(total))


# ------------------------------------------------------------------ reading


def read(folder: Path, cell: str = "") -> RatedSet:
    """DIR/ratings.csv, checked whole; UserError with one line per problem."""
    path = folder / TABLE
    if not path.is_file():
        raise UserError(f"a rated set needs {path} (columns file, condition, reference, one per rated dimension): missing")
    try:
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise UserError(f"{path}: cannot read it as CSV ({error})") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        raise UserError(f"{path}: empty; its first line names the columns (file, then one per rated dimension)")
    header = [name.strip() for name in rows[0]]
    problems: list[str] = []
    dimensions = header_problems(header, path, problems)
    items = [item for number, row in enumerate(rows[1:], start=2)
             if (item := parse_row(dict(zip(header, (c.strip() for c in row))), len(row) == len(header), dimensions,
                                   f"{path} line {number}", folder, problems)) is not None]
    duplicates(items, path, problems)
    if not items and not problems:
        problems.append(f"{path}: no rows below its header")
    if problems:
        raise UserError("".join([problems[0], *(f"\nnsbench: error: {problem}" for problem in problems[1:])]))
    return RatedSet(folder, cell or folder.resolve().name, tuple(dimensions), tuple(items))


def header_problems(header: list[str], path: Path, problems: list[str]) -> list[str]:
    """The rated dimensions the header names; its problems appended."""
    if FILE not in header:
        problems.append(f"{path}: no 'file' column (the header reads {', '.join(header)})")
    seen = set()
    for name in header:
        if name in seen:
            problems.append(f"{path}: column '{name}' given twice")
        seen.add(name)
    dimensions = [name for name in header if name not in (FILE, CONDITION, REFERENCE) and not extra_of(name)]
    for name in header:
        base = extra_of(name)
        if base and base not in dimensions:
            problems.append(f"{path}: column '{name}' names no rated dimension '{base}'")
    if not dimensions:
        problems.append(f"{path}: no rated dimension (a column such as mos, sig, bak, ovrl or mushra)")
    return dimensions


def extra_of(name: str) -> str:
    """``sig`` for ``sig_votes``, ``sig_std``, ``sig_ci95``; "" for any other column."""
    base, _, suffix = name.rpartition("_")
    return base if base and suffix in EXTRAS else ""


def parse_row(row: Mapping[str, str], whole: bool, dimensions: Sequence[str], where: str, folder: Path,
              problems: list[str]) -> RatedItem | None:
    if not whole:
        problems.append(f"{where}: {len(row)} cells where the header names more or fewer; left out")
    file, reference = row.get(FILE, ""), row.get(REFERENCE, "")
    if not file:
        problems.append(f"{where}: no file named")
        return None
    for role, name in ((FILE, file), (REFERENCE, reference)):
        if name and not inside(folder, name):
            problems.append(f"{where}: {role} '{name}' is not a file under {folder}")
    ratings = {}
    for dim in dimensions:
        rating = parse_rating(row, dim, where, problems)
        if rating is not None:
            ratings[dim] = rating
    return RatedItem(file, row.get(CONDITION, ""), reference, ratings) if len(ratings) == len(dimensions) else None


def inside(folder: Path, name: str) -> bool:
    """``name`` is a file below ``folder`` (not above it, not absolute)."""
    path = (folder / name).resolve()
    return not Path(name).is_absolute() and path.is_relative_to(folder.resolve()) and path.is_file()


def parse_rating(row: Mapping[str, str], dim: str, where: str, problems: list[str]) -> Rating | None:
    values = {}
    for column, check in ((dim, "mean"), *((f"{dim}_{extra}", extra) for extra in EXTRAS)):
        text = row.get(column, "")
        if column != dim and not text:
            values[check] = math.nan
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        why = value_problem(value, check, dim)
        if why:
            problems.append(f"{where}: {column} {text!r} {why}")
            return None
        values[check] = value
    return Rating(values["mean"], values[VOTES], values[STD], values[CI95])


def value_problem(value: float, kind: str, dim: str) -> str:
    if not math.isfinite(value):
        return "is not a number"
    if kind == "mean" and dim in SCALES and not SCALES[dim][0] <= value <= SCALES[dim][1]:
        return f"is off the {dim} scale ({SCALES[dim][0]:g} to {SCALES[dim][1]:g})"
    if kind == VOTES and (value < 1 or value != int(value)):
        return "is not a count of votes (a whole number, at least 1)"
    if kind in (STD, CI95) and value < 0:
        return "is negative"
    return ""


def duplicates(items: Sequence[RatedItem], path: Path, problems: list[str]) -> None:
    """Two rows of one file, or two files that would be one clip (a.wav and a.flac)."""
    seen: dict[str, str] = {}
    for item in items:
        if item.clip_id in seen:
            again = "given twice" if seen[item.clip_id] == item.file else f"and {seen[item.clip_id]} would be one clip"
            problems.append(f"{path}: file {item.file} {again}")
        seen.setdefault(item.clip_id, item.file)


# ------------------------------------------------------------------ writing


def table_text(items: Sequence[RatedItem], dimensions: Sequence[str]) -> str:
    """ratings.csv's text for these items: every extra column any item has, full float precision."""
    extras = [f"{dim}_{extra}" for dim in dimensions for extra in EXTRAS
              if any(not math.isnan(getattr(item.ratings[dim], extra)) for item in items)]
    header = [FILE, *([CONDITION] if any(i.condition for i in items) else []),
              *([REFERENCE] if any(i.reference for i in items) else []), *dimensions, *extras]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for item in items:
        cells: dict[str, Any] = {FILE: item.file, CONDITION: item.condition, REFERENCE: item.reference}
        for dim in dimensions:
            rating = item.ratings[dim]
            cells[dim] = repr(rating.mean)
            cells.update({f"{dim}_{extra}": number_text(getattr(rating, extra)) for extra in EXTRAS})
        writer.writerow([cells[name] for name in header])
    return out.getvalue()


def number_text(value: float) -> str:
    if math.isnan(value):
        return ""
    return str(int(value)) if value == int(value) else repr(value)
