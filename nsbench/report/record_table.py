"""One engine's clip records, held as columns (issue 26: memory flat in the
number of clips).

A ClipRecord costs ~3 KB live; at 100,000 clips x engines the list of them was
most of what the parent kept. A RecordTable keeps, per record (a run: clip x
seed), numbers in numpy columns (a float64 per score, small ints for the rest)
and indices into values interned once per run (``Pools``: clip ids, labels,
delays, flags, notes, undefined reasons, errors repeat across clips and engines).
What is rarely needed whole (source paths, pooled parts, streaming details) is
reread from the engine's ``.clips.jsonl``, whose byte offset each row keeps;
``record(i)`` and ``records()`` rebuild ClipRecords for those few readers.

A table built from records in memory (``as_table``: tests, small callers)
keeps them, and hands them back as they were.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from nsbench.plugins.records import ClipRecord


class Interner:
    """value -> small int, and back; equal values share one index (and one object)."""

    def __init__(self) -> None:
        self._index: dict[Any, int] = {}
        self.values: list[Any] = []
        self._ranks: np.ndarray | None = None

    def __call__(self, value: Any) -> int:
        index = self._index.get(value)
        if index is None:
            index = self._index[value] = len(self.values)
            self.values.append(value)
            self._ranks = None
        return index

    def __len__(self) -> int:
        return len(self.values)

    def find(self, value: Any) -> int | None:
        """The value's index, or None if it was never interned."""
        return self._index.get(value)

    def ranks(self) -> np.ndarray:
        """Each value's position in sorted order (strings: Python's order), to sort indices as their values."""
        if self._ranks is None or len(self._ranks) != len(self.values):
            order = sorted(range(len(self.values)), key=self.values.__getitem__)
            self._ranks = np.empty(len(order), dtype=np.int64)
            self._ranks[order] = np.arange(len(order))
        return self._ranks


class Pools:
    """The interned values of one run, shared by every engine's table, so
    that a clip id is one index (and one string) whatever engine ran it."""

    def __init__(self) -> None:
        self.clips = Interner()
        self.values = Interner()  # labels, delays, flags, notes, errors... (hashable forms)


class Column:
    """A numpy array that grows by doubling; ``values`` is a view of what was appended."""

    __slots__ = ("data", "size")

    def __init__(self, dtype: Any, fill: Any = 0, size: int = 0):
        self.data = np.full(max(16, size), fill, dtype=dtype)
        self.size = size

    def append(self, value: Any) -> None:
        if self.size == len(self.data):
            grown = np.empty(2 * len(self.data), dtype=self.data.dtype)
            grown[: self.size] = self.data
            self.data = grown
        self.data[self.size] = value
        self.size += 1

    @property
    def values(self) -> np.ndarray:
        return self.data[: self.size]

    def trim(self) -> None:
        self.data = self.data[: max(self.size, 1)].copy()


# Each fixed column: its dtype and how a record fills it.
INTERNED = ("labels", "undefined", "error", "notes", "delay", "lag_unmeasured", "flags", "metric_notes")
NUMBERS: dict[str, tuple[Any, Callable[[ClipRecord], Any]]] = {
    "seed": (np.int64, lambda r: 0 if r.seed is None else r.seed),
    "has_seed": (np.bool_, lambda r: r.seed is not None),
    "duration": (np.float64, lambda r: r.duration),
    "cpu_seconds": (np.float64, lambda r: r.cpu_seconds),
    "wall_seconds": (np.float64, lambda r: r.wall_seconds),
    "sample_rate": (np.int32, lambda r: r.sample_rate),
    "residual_lag": (np.int64, lambda r: r.residual_lag or 0),
    "lag_measured": (np.bool_, lambda r: r.residual_lag is not None),
    "from_cache": (np.bool_, lambda r: r.from_cache),
    "failed": (np.bool_, lambda r: r.failed),
    "streamed": (np.bool_, lambda r: bool(r.streaming)),
}


def hashable(field: str, value: Any) -> Any:
    """A record's field in the form it is interned in: tuples for lists and dicts."""
    if isinstance(value, dict):
        return tuple(value.items())
    if isinstance(value, list):
        return tuple(value)
    return value


class RecordTable:
    """An engine's records as columns; append them as they come (``offset``:
    the record's line in ``path``, the .clips.jsonl, to reread it from)."""

    def __init__(self, pools: Pools | None = None, path: Path | None = None, keep_records: bool = False):
        self.pools = pools or Pools()
        self.path = path
        self.size = 0
        self.clip = Column(np.int32)
        self.offset = Column(np.int64, -1)
        self.interned = {name: Column(np.int32) for name in INTERNED}
        self.numbers = {name: Column(dtype) for name, (dtype, _) in NUMBERS.items()}
        self.scores: dict[str, tuple[Column, Column]] = {}  # metric -> (value, present)
        self.pooled: dict[str, tuple[Column, Column]] = {}  # metric -> (item count, item variance)
        self._records: list[ClipRecord] | None = [] if keep_records else None
        self._cells: dict[tuple[str, ...], tuple[np.ndarray, list[tuple[str, ...]]]] = {}

    def __len__(self) -> int:
        return self.size

    def append(self, record: ClipRecord, offset: int = -1) -> None:
        self.clip.append(self.pools.clips(record.clip_id))
        self.offset.append(offset)
        for name, column in self.interned.items():
            column.append(self.pools.values(hashable(name, getattr(record, name))))
        for name, (_, value_of) in NUMBERS.items():
            self.numbers[name].append(value_of(record))
        for name in record.scores.keys() - self.scores.keys():  # a metric first seen here: earlier rows lack it
            self.scores[name] = (Column(np.float64, np.nan, self.size), Column(np.bool_, False, self.size))
        for name, (values, present) in self.scores.items():
            here = name in record.scores
            values.append(record.scores[name] if here else np.nan)
            present.append(here)
        for name in record.pooled.keys() - self.pooled.keys():
            self.pooled[name] = (Column(np.float64, 1.0, self.size), Column(np.float64, 0.0, self.size))
        for name, (counts, variances) in self.pooled.items():
            parts = record.pooled.get(name, {})  # summary.item_parts: one item, no variance, where none was recorded
            counts.append(float(parts.get("count", 1)))
            variances.append(float(parts.get("variance", 0.0)))
        if self._records is not None:
            self._records.append(record)
        self.size += 1
        self._cells.clear()

    def trim(self) -> None:
        """Gives back the columns' spare room once the engine is done."""
        columns = [self.clip, self.offset, *self.interned.values(), *self.numbers.values(),
                   *(c for pair in self.scores.values() for c in pair), *(c for pair in self.pooled.values() for c in pair)]
        for column in columns:
            column.trim()

    # ------------------------------------------------------------------ reading

    def column(self, name: str) -> np.ndarray:
        if name == "clip":
            return self.clip.values
        if name in self.interned:
            return self.interned[name].values
        return self.numbers[name].values

    def value(self, index: int) -> Any:
        """An interned value (labels: a tuple of items) by its index."""
        return self.pools.values.values[index]

    def score(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, present) of a metric over every row; absent: NaN and False."""
        if name not in self.scores:
            return np.full(self.size, np.nan), np.zeros(self.size, dtype=bool)
        values, present = self.scores[name]
        return values.values, present.values

    def pooled_parts(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(item count, item variance) per row of a pooled metric (1 and 0 where none was recorded)."""
        if name not in self.pooled:
            return np.ones(self.size), np.zeros(self.size)
        counts, variances = self.pooled[name]
        return counts.values, variances.values

    def clip_id(self, row: int) -> str:
        return self.pools.clips.values[self.clip.data[row]]

    def run_id(self, row: int) -> str:
        """As ClipRecord.run_id."""
        clip = self.clip_id(row)
        return f"{clip}_seed{int(self.numbers['seed'].data[row])}" if self.numbers["has_seed"].data[row] else clip

    def labels(self, row: int) -> dict[str, str]:
        return dict(self.value(self.interned["labels"].data[row]))

    def cells(self, cell_keys: Sequence[str]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Per row, its cell's number; the cells (summary.cell_of's tuples) in order of first appearance."""
        key = tuple(cell_keys)
        if key not in self._cells:
            self._cells[key] = self._cell_numbers(key)
        return self._cells[key]

    def _cell_numbers(self, cell_keys: tuple[str, ...]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        labels = self.column("labels")
        number_of: dict[tuple[str, ...], int] = {}
        by_labels = {}
        for index in first_appearances(labels):
            items = dict(self.value(index))
            cell = tuple(str(items.get(name, "")) for name in cell_keys)
            by_labels[index] = number_of.setdefault(cell, len(number_of))
        lookup = np.zeros(int(labels.max()) + 1 if self.size else 1, dtype=np.int64)
        for index, number in by_labels.items():
            lookup[index] = number
        return lookup[labels], list(number_of)

    def rows_where(self, column: str, test: Callable[[Any], bool]) -> np.ndarray:
        """Rows whose interned value in ``column`` passes ``test`` (asked once per distinct value)."""
        indices = self.column(column)
        passing = [index for index in first_appearances(indices) if test(self.value(index))]
        return np.flatnonzero(np.isin(indices, passing))

    def counted(self, column: str, rows: np.ndarray | None = None) -> list[tuple[Any, int]]:
        """The distinct values of an interned column (over ``rows``), in order of first appearance, with their counts."""
        indices = self.column(column) if rows is None else self.column(column)[rows]
        distinct, first, counts = np.unique(indices, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        return [(self.value(int(distinct[i])), int(counts[i])) for i in order]

    # ------------------------------------------------------------------ whole records

    def record(self, row: int) -> ClipRecord:
        """The row's ClipRecord, reread from the .clips.jsonl (or as it was given)."""
        if self._records is not None:
            return self._records[row]
        with open(self.path, "rb") as file:
            return self._read(file, row)

    def records(self, rows: Iterable[int] | None = None) -> Iterator[ClipRecord]:
        """ClipRecords, one at a time, for the rare reader that needs them whole."""
        rows = range(self.size) if rows is None else rows
        if self._records is not None:
            yield from (self._records[row] for row in rows)
            return
        with open(self.path, "rb") as file:
            for row in rows:
                yield self._read(file, row)

    def _read(self, file, row: int) -> ClipRecord:
        file.seek(int(self.offset.data[row]))
        return ClipRecord(**json.loads(file.readline()))


def as_table(records: RecordTable | Iterable[ClipRecord], pools: Pools | None = None) -> RecordTable:
    """A table of records in memory (kept as given), or the table itself."""
    if isinstance(records, RecordTable):
        return records
    table = RecordTable(pools, keep_records=True)
    for record in records:
        table.append(record)
    return table


def as_tables(by_engine: Mapping[str, RecordTable | Iterable[ClipRecord]]) -> dict[str, RecordTable]:
    """Every engine's table, on one set of pools (so clip numbers pair across engines)."""
    pools = next((t.pools for t in by_engine.values() if isinstance(t, RecordTable)), None) or Pools()
    return {engine: as_table(records, pools) for engine, records in by_engine.items()}


def first_appearances(values: np.ndarray) -> list[int]:
    """The distinct values, in order of first appearance."""
    distinct, first = np.unique(values, return_index=True)
    return [int(value) for value in distinct[np.argsort(first, kind="stable")]]


def first_rows(values: np.ndarray) -> np.ndarray:
    """The row of each distinct value's first appearance, in row order."""
    _, first = np.unique(values, return_index=True)
    return np.sort(first)


def smallest(keys: np.ndarray, name: Callable[[int], str], count: int) -> list[int]:
    """Positions of the ``count`` smallest keys, ordered by (key, name): the
    head of ``sorted(..., key=(key, name))`` without sorting the rest."""
    if count <= 0 or not len(keys):
        return []
    if count < len(keys):
        bound = np.partition(keys, count - 1)[count - 1]
        candidates = np.flatnonzero(keys <= bound) if not np.isnan(bound) else np.arange(len(keys))
    else:
        candidates = np.arange(len(keys))
    return sorted((int(i) for i in candidates), key=lambda i: (float(keys[i]), name(i)))[:count]


class ClipValues:
    """A metric's value per clip over some rows: ``clips`` in order of first
    appearance, ``means`` (the mean over a clip's seeds, as np.mean gives it),
    and the rows grouped by clip (``grouped[bounds[i]:bounds[i + 1]]`` are clip i's)."""

    def __init__(self, clips: np.ndarray, means: np.ndarray, grouped: np.ndarray, bounds: np.ndarray):
        self.clips, self.means, self.grouped, self.bounds = clips, means, grouped, bounds

    def __len__(self) -> int:
        return len(self.clips)

    def dense(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(value, present) indexed by clip number, over ``size`` clip numbers."""
        values, present = np.full(size, np.nan), np.zeros(size, dtype=bool)
        values[self.clips], present[self.clips] = self.means, True
        return values, present


def clip_means(table: RecordTable, rows: np.ndarray, metric: str) -> ClipValues:
    """Per clip among ``rows`` scored by ``metric``, its value (baselines.clip_values' and metric_stats')."""
    values, present = table.score(metric)
    rows = rows[present[rows]]
    clips = table.clip.values[rows]
    firsts = first_rows(clips)
    if len(firsts) == len(rows):  # one row per clip: np.mean of one value is 0.0 + it
        return ClipValues(clips, 0.0 + values[rows], rows, np.arange(len(rows) + 1))
    order = clips[firsts]
    position = {int(clip): i for i, clip in enumerate(order)}
    groups: list[list[int]] = [[] for _ in order]
    for row, clip in zip(rows.tolist(), clips.tolist()):
        groups[position[clip]].append(row)
    means = np.array([np.mean(values[group]) for group in groups], dtype=np.float64)
    bounds = np.cumsum([0, *map(len, groups)])
    return ClipValues(order, means, np.fromiter((row for group in groups for row in group), dtype=np.int64, count=len(rows)), bounds)
