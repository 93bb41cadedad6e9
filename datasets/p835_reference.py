"""``p835-reference``: the ITU-T P.835 reference conditions Microsoft rated by
crowdsourcing (Amazon Mechanical Turk, July 2020) and published in the
``p835_reference_conditions/`` folder of ``microsoft/P.808`` (Naderi and
Cutler, Interspeech 2020), read in that published layout:

* ``CSP835_Ref_Conditions.xlsx``: per file, sheets "16KHzWB-results per file"
  and "Fullband-results per file" (header row, then ``file_url``,
  ``short_file_name``, ``condition_num``, ``n votes``, then MOS, std and 95 %
  interval of BAK, SIG and OVRL); per condition, "16KHzWB-results per
  condit" and "Fullband-results per condition" (``Condition Name``, SNR,
  MNRU Q, ``n``, the three MOS, the three std, the three intervals; the 16 kHz
  sheet carries a P.835 OVRL prediction and notes in trailing columns and rows
  below the 13 conditions, which are not ratings and are passed over);
* ``degraded_WB_16KHz/c<N>_<talker>.wav`` (c1-c12 at 16 kHz; c0, the
  unprocessed source, at 48 kHz) and ``degraded_fullband_48KHz/`` (48 kHz);
* ``source/NSD/<talker>.wav``, the sources (byte-identical to
  ``c0_<talker>.wav``), each file's reference; the ``<talker>_adj.wav`` files
  are not explained by the repository and not used.

13 conditions (c0 the source; MNRU Q 8 to 40 dB at 40 dB SNR; white noise at
0 to 30 dB SNR; three mixed) x 6 talkers per set. Each set present is a cell,
``set=wb`` and ``set=fullband``; every file of the workbook, c0 included, is
a rated clip, and condition-level figures use the per-condition sheet.

Without ``--data-folder`` the run uses the 16 kHz set bundled in
``datasets/p835_wb/``, already in nsbench's rated layout (its ratings.csv
made from the workbook by bench/make_p835_bundle.py, the audio as FLAC, the c0
files as the references): no download, and no openpyxl, which only reading
the workbook needs (``pip install nsbench[ratings]``).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator, Mapping

from nsbench import DatasetSpec, UserError, hookimpl
from nsbench.builtin.datasets.rated import CELL_KEYS, describe_sets, sources_of
from nsbench.adapters import RatedItem, RatedSet, Rating, read_rated_set

WORKBOOK = "CSP835_Ref_Conditions.xlsx"
BUNDLED = Path(__file__).resolve().parent / "p835_wb"
OPENPYXL = "openpyxl==3.1.5"
INSTALL = f"pip install {OPENPYXL}  (or: pip install 'nsbench[ratings]')"
# cell -> (audio folder, per-file sheet, per-condition sheet), as published.
SETS = {
    "wb": ("degraded_WB_16KHz", "16KHzWB-results per file", "16KHzWB-results per condit"),
    "fullband": ("degraded_fullband_48KHz", "Fullband-results per file", "Fullband-results per condition"),
}
DIMENSIONS = ("sig", "bak", "ovrl")
FILE_COLUMNS = {"file": "short_file_name", "condition": "condition_num", "votes": "n votes"}
CONDITION_COLUMNS = {"condition": "Condition Name", "votes": "n"}
SOURCES = Path("source") / "NSD"


def rating_columns(dim: str) -> tuple[str, str, str]:
    """Both sheets' MOS, std and interval columns of a dimension (``MOS_SIG``, ``std_sig``, ``95%CI_sig``)."""
    return f"MOS_{dim.upper()}", f"std_{dim}", f"95%CI_{dim}"


# ------------------------------------------------------------------ the workbook


def open_workbook(path: Path) -> Any:
    try:
        import openpyxl
    except ModuleNotFoundError:
        raise UserError(f"reading {path.name} needs openpyxl: {INSTALL}") from None
    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises several kinds for a file that is not a workbook
        raise UserError(f"{path}: not a readable workbook ({type(error).__name__}: {error})") from None


def sheet_rows(book: Any, name: str, path: Path, required: Mapping[str, str]) -> Iterator[dict[str, Any]]:
    """The sheet's rows as dicts by header; stops at the first row without the first required column."""
    if name not in book.sheetnames:
        raise UserError(f"{path}: no sheet '{name}' (it has: {', '.join(book.sheetnames)})")
    rows = book[name].iter_rows(values_only=True)
    header = [str(cell).strip() if cell is not None else "" for cell in next(rows, ())]
    missing = [column for column in required.values() if column not in header]
    if missing:
        raise UserError(f"{path}, sheet '{name}': no column {', '.join(repr(m) for m in missing)} in its header row")
    first = header.index(next(iter(required.values())))
    for row in rows:
        if first >= len(row) or row[first] in (None, ""):
            return  # the rows below the table (the 16 kHz per-condition sheet's notes)
        yield dict(zip(header, row))


def number(row: Mapping[str, Any], column: str, where: str) -> float:
    value = row.get(column)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(f"{where}: {column} is {value!r}, not a number")
    return float(value)


def rating(row: Mapping[str, Any], dim: str, votes: float, where: str) -> Rating:
    mean, std, ci95 = (number(row, column, where) for column in rating_columns(dim))
    return Rating(mean, votes, std, ci95)


def file_items(book: Any, path: Path, cell: str, root: Path) -> list[RatedItem]:
    folder, sheet, _ = SETS[cell]
    items = []
    for number_, row in enumerate(sheet_rows(book, sheet, path, FILE_COLUMNS), start=2):
        where = f"{path}, sheet '{sheet}' row {number_}"
        name = str(row[FILE_COLUMNS["file"]]).strip()
        stem, talker = name.rpartition(".")[0], name.rpartition(".")[0].partition("_")[2]
        votes = number(row, FILE_COLUMNS["votes"], where)
        condition = f"c{int(number(row, FILE_COLUMNS['condition'], where))}"
        scored = {dim: rating(row, dim, votes, where) for dim in DIMENSIONS}
        items.append(RatedItem(f"{folder}/{name}", condition, reference_of(root, folder, talker), scored, name=stem))
    return items


def reference_of(root: Path, folder: str, talker: str) -> str:
    """source/NSD/<talker>.wav; the set's own c0 file where the sources are not there (the same bytes)."""
    source = SOURCES / f"{talker}.wav"
    return source.as_posix() if (root / source).is_file() else f"{folder}/c0_{talker}.wav"


def condition_ratings(book: Any, path: Path, cell: str) -> dict[str, dict[str, Rating]]:
    sheet = SETS[cell][2]
    found = {}
    for number_, row in enumerate(sheet_rows(book, sheet, path, CONDITION_COLUMNS), start=2):
        where = f"{path}, sheet '{sheet}' row {number_}"
        votes = number(row, CONDITION_COLUMNS["votes"], where)
        found[str(row[CONDITION_COLUMNS["condition"]]).strip()] = {
            dim: rating(row, dim, votes, where) for dim in DIMENSIONS}
    return found


def published_sets(root: Path) -> list[RatedSet]:
    """Each set whose audio folder is under ``root``, from the workbook; UserError for what is not as published."""
    present = [cell for cell, (folder, _, _) in SETS.items() if (root / folder).is_dir()]
    if not present:
        folders = " or ".join(f"{folder}/" for folder, _, _ in SETS.values())
        raise UserError(f"p835-reference expects microsoft/P.808's p835_reference_conditions/ layout: no {folders} under {root}")
    path = root / WORKBOOK
    if not path.is_file():
        raise UserError(f"p835-reference: no {WORKBOOK} under {root} (the ratings)")
    book = open_workbook(path)
    try:
        sets = [RatedSet(root, cell, DIMENSIONS, tuple(file_items(book, path, cell, root)), condition_ratings(book, path, cell),
                         WORKBOOK)
                for cell in present]
    finally:
        book.close()
    missing = [f"{item.file}" for rated in sets for item in rated.items for name in (item.file, item.reference)
               if not (root / name).is_file()]
    if missing:
        raise UserError(f"p835-reference: {len(missing)} file(s) the workbook rates are not under {root}: {', '.join(sorted(set(missing))[:5])}")
    return sets


# ------------------------------------------------------------------ the adapter


def ratings(options: Mapping[str, Any]) -> list[RatedSet]:
    folder = options.get("data_folder")
    return published_sets(Path(folder)) if folder else [read_rated_set(BUNDLED, "wb")]


def clips(options: Mapping[str, Any]) -> list:
    return [source for rated in ratings(options) for source in sources_of(rated)]


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {**describe_sets(ratings(options)), "bundled": not options.get("data_folder")}


@hookimpl
def register_datasets(register):
    register(DatasetSpec(
        name="p835-reference",
        clips=clips,
        description="the ITU-T P.835 reference conditions Microsoft rated by crowdsourcing (microsoft/P.808): "
                    "16 kHz set bundled; --data-folder for the published folder (wb and fullband)",
        cell_keys=CELL_KEYS,
        describe=describe,
        ratings=ratings,
        takes_flags=("data_folder",),
    ))
