"""``python benchmark.py rank TABLE.csv``: rank any table of per-system
metric means by URGENT's rule (nsbench.ranking), a published
leaderboard or a spreadsheet of your own.

TABLE.csv: a header row ``system,<metric>,...``, a row ``direction,higher|lower,...``,
a row ``category,<name>,...`` (an empty category, or ``-``: the column is
read but not ranked), then one row per system; an empty cell is a missing
value (it ranks last). The table is a stranger's data: read as text, every
problem in it reported, one line each, and nothing else done with it.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

from nsbench.plugins.errors import UserError
from nsbench.ranking import TIES, rank_table
from nsbench.store import atomic

EXIT_USER_ERROR = 2
NOT_RANKED = ("", "-")
MAX_BYTES = 50_000_000  # a leaderboard is kilobytes: a bigger file is not one


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nsbench rank", description=(
        "Rank systems on several metrics by URGENT's rule: per-metric mean, rank per metric, mean rank per "
        "category, mean over categories (lower is better)."))
    p.add_argument("table", type=Path, help="CSV: rows system,<metric>...; direction,higher|lower...; category,<name>...; then a row per system")
    p.add_argument("--ties", choices=TIES, default="dense", help='dense ("1223", URGENT\'s; default) or min ("1224")')
    p.add_argument("--decimals", type=int, metavar="N", help="round each mean to N decimals before ranking (URGENT's leaderboard: 2)")
    p.add_argument("--json", type=Path, metavar="OUT", help="also write the ranking as JSON to OUT")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        means, directions, categories = read_table(args.table)
        ranking = rank_table(means, directions, categories, args.ties, args.decimals)
        ranking["settings"]["table"] = str(args.table)
        print("\n".join(table_lines(ranking, means)))
        if args.json:
            write_ranking(args.json, ranking)
    except UserError as error:
        for line in str(error).splitlines():
            print(f"nsbench: error: {line}", file=sys.stderr)
        return EXIT_USER_ERROR
    return 0


def read_table(path: Path) -> tuple[dict[str, dict[str, float]], dict[str, str], dict[str, str]]:
    """(means by system, directions, categories of the ranked metrics); a
    UserError with one line per problem found."""
    rows = read_rows(path)
    problems: list[str] = []
    labels = ("system", "direction", "category")
    for number, label in enumerate(labels):
        if len(rows) <= number or not rows[number] or rows[number][0].strip().lower() != label:
            problems.append(f"{path}: row {number + 1} must start with '{label}'")
    if problems:
        raise UserError("\n".join(problems))
    metrics = [name.strip() for name in rows[0][1:]]
    problems += [f"{path}: row 1: metric {i + 2} has no name" for i, name in enumerate(metrics) if not name]
    problems += [f"{path}: row 1: metric '{name}' named twice" for name in sorted({m for m in metrics if m and metrics.count(m) > 1})]
    for number, row in enumerate(rows, start=1):
        if len(row) != len(metrics) + 1:
            problems.append(f"{path}: row {number} has {len(row)} cells, the header {len(metrics) + 1}")
    if problems:
        raise UserError("\n".join(problems))
    directions = {m: rows[1][i + 1].strip().lower() for i, m in enumerate(metrics)}
    problems += [f"{path}: row 2: direction of '{m}' is {d!r}: say higher or lower" for m, d in directions.items() if d not in ("higher", "lower")]
    categories = {m: rows[2][i + 1].strip() for i, m in enumerate(metrics) if rows[2][i + 1].strip() not in NOT_RANKED}
    means, problems = system_means(path, rows[3:], metrics, problems)
    if not categories:
        problems.append(f"{path}: row 3: no metric has a category, so nothing ranks")
    if not means:
        problems.append(f"{path}: no system rows after the category row")
    if problems:
        raise UserError("\n".join(problems))
    return means, directions, categories


def system_means(path: Path, rows: list[list[str]], metrics: list[str], problems: list[str]) -> tuple[dict[str, dict[str, float]], list[str]]:
    means: dict[str, dict[str, float]] = {}
    for number, row in enumerate(rows, start=4):
        system = row[0].strip()
        if not system:
            problems.append(f"{path}: row {number}: no system name")
        elif system in means:
            problems.append(f"{path}: row {number}: system '{system}' appears twice")
        values = {}
        for metric, text in zip(metrics, row[1:]):
            text = text.strip()
            if not text:
                continue  # missing: ranks last
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                problems.append(f"{path}: row {number}: {metric} of '{system}' is {text!r}, not a number")
                continue
            values[metric] = value
        means[system] = values
    return means, problems


def read_rows(path: Path) -> list[list[str]]:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UserError(f"{path}: {size:,} bytes, not a table of means (at most {MAX_BYTES:,})")
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except IsADirectoryError:
        raise UserError(f"{path}: a folder, not a CSV file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read it ({error.strerror})") from None
    try:
        rows = [row for row in csv.reader(text.splitlines()) if any(cell.strip() for cell in row)]
    except csv.Error as error:
        raise UserError(f"{path}: not a CSV file ({error})") from None
    if not rows:
        raise UserError(f"{path}: empty")
    return rows


def table_lines(ranking: dict[str, Any], means: dict[str, dict[str, float]]) -> list[str]:
    """The ranked table: rank, system, overall score, each category's mean rank, each metric's mean (rank)."""
    categories = list(ranking["settings"]["categories"])
    metrics = [m for members in ranking["settings"]["categories"].values() for m in members]
    header = ["rank", "system", "score", *categories, *metrics]
    rows = [header]
    for row in ranking["systems"]:
        rows.append([str(row["overall_rank"]), row["system"], f"{row['overall_score']:.2f}",
                     *(f"{row['category_ranks'][c]:.2f}" for c in categories),
                     *(f"{means[row['system']][m]:g} ({row['metric_ranks'][m]})" if m in means[row["system"]]
                       else f"– ({row['metric_ranks'][m]})" for m in metrics)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 1 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
    settings = ranking["settings"]
    rounding = f", means rounded to {settings['decimals']} decimals" if settings["decimals"] is not None else ""
    lines.append(f"score: mean over categories of the mean rank in each (lower is better); ties {settings['ties']}{rounding}; "
                 "in brackets: the rank on that metric")
    return lines


def write_ranking(path: Path, ranking: dict[str, Any]) -> None:
    """--json OUT, refusing to replace a file that is not a ranking nsbench wrote."""
    if path.exists():
        try:
            earlier = json.loads(path.read_text(encoding="utf-8"))
            ours = isinstance(earlier, dict) and isinstance(earlier.get("settings"), dict) and earlier["settings"].get("written_by") == WRITTEN_BY
        except (OSError, UnicodeDecodeError, ValueError):
            ours = False
        if not ours:
            raise UserError(f"{path} exists and is not a ranking nsbench wrote: give another --json path")
    ranking["settings"]["written_by"] = WRITTEN_BY
    try:
        atomic.write_text(path, json.dumps(ranking, indent=2) + "\n")
    except OSError as error:
        raise UserError(f"{path}: cannot write it ({error.strerror})") from None


WRITTEN_BY = "nsbench rank"
