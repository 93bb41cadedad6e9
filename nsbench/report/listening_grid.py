"""The listening grid of report.html: the clips worth hearing, each through
every engine of the run, side by side with its noisy input and clean reference.

Which clips: each engine's worst clip, the worst clip of each engine's worst
cell, a clip for each flag an engine raised, then two typical ones (nearest the
median over engines); at most ``GRID_ROWS``, at least ``MIN_ROWS`` where the set
has them. They are known only once every engine has run, so the run keeps every
output until then (nsbench.report.writer: in ``--output-folder``, or else as
16-bit excerpts in a temporary file per engine, nsbench.report.output_spill)
and the grid copies its clips from there.

The report folder then holds only the grid's audio, as 16-bit WAV excerpts of at
most ``LISTEN_SECONDS``, and a small spectrogram PNG beside each.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import soundfile

from nsbench.report.highlights import cell_name
from nsbench.report.layout import View
from nsbench.report.model import file_stem
from nsbench.store import atomic, folders
from nsbench.plugins.errors import ClipError
from nsbench.plugins.records import ClipRecord, ClipSource
from nsbench.report.record_table import RecordTable, as_tables, first_rows, smallest

GRID_ROWS = 10  # about 1.3 MB of 16-bit audio per row for the default run's 11 columns of 4-second clips
MIN_ROWS = 4
TYPICAL_ROWS = 2  # kept free for them however many engines have a worst clip
LISTEN_SECONDS = 30.0  # a longer clip is heard (and drawn) from its start up to this
AUDIO_FOLDER = "audio"  # under results/<dataset>/, beside report.html
INPUT_FOLDER, CLEAN_FOLDER = "_input", "_clean"  # engine folders never start with "_" (file_stem)


@dataclass
class GridOutput:
    """One engine's output on one clip."""

    engine: str
    run: str
    score: float | None = None
    flags: list[str] = field(default_factory=list)
    error: str = ""
    audio: str = ""  # relative to report.html; empty when no output was kept
    image: str = ""


@dataclass
class GridRow:
    clip_id: str
    labels: dict[str, str]
    reasons: list[str]
    input_audio: str = ""
    clean_audio: str = ""
    input_image: str = ""
    clean_image: str = ""
    outputs: list[GridOutput] = field(default_factory=list)


@dataclass(frozen=True)
class Grid:
    metric: str  # the headline metric each output is scored by
    rows: list[GridRow]


class FirstRuns:
    """An engine's record heard in the grid for each clip (its first seed's),
    and those scored by the metric: rows of its RecordTable."""

    def __init__(self, table: RecordTable, metric: str):
        self.table = table
        self.first = first_rows(table.column("clip"))
        values, present = table.score(metric)
        self.scored = self.first[present[self.first] & ~table.column("failed")[self.first]]
        self.values = values  # by row

    def row_of(self, clip_id: str) -> int | None:
        """The clip's first row, or None where the engine did not run it."""
        number = self.table.pools.clips.find(clip_id)
        if number is None:
            return None
        rows = self.first[self.table.column("clip")[self.first] == number]
        return int(rows[0]) if len(rows) else None


def choose_clips(
    results: Sequence[Mapping[str, Any]], records_by_engine: Mapping[str, RecordTable | Sequence[ClipRecord]], metric: str,
    higher_is_better: bool, limit: int = GRID_ROWS, *, view: View,
) -> dict[str, list[str]]:
    """clip id -> why it is worth hearing, in the grid's order (worst first)."""
    sign = 1.0 if higher_is_better else -1.0
    tables = as_tables(records_by_engine)
    runs = {engine: FirstRuns(table, metric) for engine, table in tables.items()}
    judged = [r for r in results if not view.passes_input_through(r["engine"]) and r["engine"] in runs] or list(results)
    chosen: dict[str, list[str]] = {}

    def add(clip: str | None, why: str, room: int) -> None:
        if clip is not None and (clip in chosen or len(chosen) < room):
            chosen.setdefault(clip, []).append(why)

    def worst_of(run: FirstRuns, rows: np.ndarray) -> str | None:
        """The clip of the lowest signed score among ``rows`` (ties: the first clip id)."""
        found = smallest(sign * run.values[rows], lambda i: run.table.clip_id(rows[i]), 1)
        return run.table.clip_id(rows[found[0]]) if found else None

    room = max(limit - TYPICAL_ROWS, 1)
    for result in judged:
        run = runs.get(result["engine"])
        add(worst_of(run, run.scored) if run else None, f"worst of {result['engine']}", room)
    for result in judged:
        cell, run = (result.get("worst_cell") or {}).get("cell"), runs.get(result["engine"])
        if cell and run:
            members = run.scored[np.isin(run.scored, run.table.rows_where("labels", lambda labels: in_cell(labels, cell)))]
            add(worst_of(run, members), f"worst in {result['engine']}'s worst cell ({cell_name(cell)})", room)
    for result in results:
        run = runs.get(result["engine"])
        for name, flag in result.get("flags", {}).items():
            add(flagged_clip(run, name, flag["clips"], worst_of) if run else None, f"{result['engine']}: {name}", room)
    add_typical(chosen, add, [runs[r["engine"]] for r in judged if r["engine"] in runs], sign, limit)
    return chosen


def flagged_clip(run: FirstRuns, name: str, clips: Sequence[str], worst_of: Callable) -> str | None:
    """The worst scored clip among those the flag lists, else the first of them."""
    raised = run.table.rows_where("flags", lambda flags: name in flags)
    by_run = {run.table.run_id(row): row for row in raised}
    flagged = np.array([by_run[clip] for clip in clips if clip in by_run], dtype=np.int64)
    scored_clips = run.table.column("clip")[run.scored]
    heard = flagged[np.isin(run.table.column("clip")[flagged], scored_clips)]
    return worst_of(run, heard) or (run.table.clip_id(flagged[0]) if len(flagged) else None)


def add_typical(chosen: dict[str, list[str]], add: Callable, runs: Sequence[FirstRuns], sign: float, limit: int) -> None:
    """Two clips nearest the median over engines, then (a small run) the worst of the rest."""
    clips, means = clip_means(runs, sign)
    if not len(clips):
        return
    name = runs[0].table.pools.clips.values.__getitem__
    median = float(np.median(means))
    free = np.flatnonzero([name(clip) not in chosen for clip in clips]) if chosen else np.arange(len(clips))
    for i in smallest(np.abs(means[free] - median), lambda i: name(clips[free[i]]), TYPICAL_ROWS):
        add(name(clips[free[i]]), "typical (near the median over engines)", limit)
    for i in smallest(means, lambda i: name(clips[i]), len(chosen) + min(MIN_ROWS, limit)):  # a small run: the worst of the rest
        if len(chosen) >= min(MIN_ROWS, limit):
            break
        add(name(clips[i]), "among the worst over engines", limit)


def in_cell(labels: tuple[tuple[str, Any], ...], cell: Mapping[str, Any]) -> bool:
    items = dict(labels)
    return all(str(items.get(key, "")) == str(value) for key, value in cell.items())


def clip_means(runs: Sequence[FirstRuns], sign: float) -> tuple[np.ndarray, np.ndarray]:
    """The clips some engine scored (clip numbers), and each one's mean headline
    score over engines (np.mean of them in engine order), signed so that lower is worse."""
    size = len(runs[0].table.pools.clips) if runs else 0
    stack, present = np.full((len(runs), size), np.nan), np.zeros((len(runs), size), dtype=bool)
    for i, run in enumerate(runs):
        numbers = run.table.column("clip")[run.scored]
        stack[i, numbers], present[i, numbers] = sign * run.values[run.scored], True
    counts = present.sum(axis=0)
    clips = np.flatnonzero(counts)
    means = np.empty(len(clips))
    every = counts[clips] == len(runs)
    # Rows of a C-ordered (clips, engines) array: np.mean of each in engine order, as of a list.
    means[every] = np.ascontiguousarray(stack[:, clips[every]].T).mean(axis=1)
    for i in np.flatnonzero(~every):
        means[i] = np.mean(stack[present[:, clips[i]], clips[i]])
    return clips, means


def build_grid(
    folder: Path, results: Sequence[Mapping[str, Any]], records_by_engine: Mapping[str, RecordTable | Sequence[ClipRecord]],
    sources: Mapping[str, ClipSource], read_output: Callable[[str, str], tuple[np.ndarray, int] | None],
    metric: str, higher_is_better: bool, draw: bool = True, *, view: View,
) -> Grid:
    """Chooses the clips, writes their listening copies (and spectrograms) under
    ``folder/audio/``. ``read_output(engine, run)`` gives a kept output, or None.
    ``sources.get(clip_id)``: the clip's source (a few are looked up)."""
    tables = as_tables(records_by_engine)
    runs = {engine: FirstRuns(table, metric) for engine, table in tables.items()}
    rows = []
    for clip_id, reasons in choose_clips(results, tables, metric, higher_is_better, view=view).items():
        heard_by = {engine: run.row_of(clip_id) for engine, run in runs.items()}
        records = {engine: runs[engine].table.record(row) for engine, row in heard_by.items() if row is not None}
        labels = next((dict(record.labels) for record in records.values()), {})
        row = GridRow(clip_id, labels, reasons)
        heard: dict[str, np.ndarray] = {}  # relative audio path -> what was written, for the spectrograms
        rate = reference_copies(folder, row, sources.get(clip_id), heard)
        for result in results:
            output, output_rate = grid_output(folder, result, records.get(result["engine"]), clip_id, metric, read_output, heard)
            row.outputs.append(output)
            rate = rate or output_rate
        if draw and heard:
            from nsbench.report.spectrograms import draw_row  # matplotlib only where a report is drawn

            images = {audio: str(Path(audio).with_suffix(".png")) for audio in heard}
            draw_row(list(heard.values()), rate, [folder / image for image in images.values()])
            row.input_image, row.clean_image = images.get(row.input_audio, ""), images.get(row.clean_audio, "")
            for output in row.outputs:
                output.image = images.get(output.audio, "")
        rows.append(row)
    return Grid(metric, rows)


def reference_copies(folder: Path, row: GridRow, source: ClipSource | None, heard: dict[str, np.ndarray]) -> int:
    """The noisy input and clean reference of the row's clip; returns its rate (0 if it cannot be loaded)."""
    try:
        clip = source.load() if source else None
    except ClipError:  # it loaded for the engines a moment ago; if not now, the row has no reference players
        clip = None
    if clip is None:
        return 0
    row.input_audio, row.clean_audio = (f"{AUDIO_FOLDER}/{role}/{row.clip_id}.wav" for role in (INPUT_FOLDER, CLEAN_FOLDER))
    if clip.clean is None:  # a clip without a reference: its input alone
        row.clean_audio = ""
    for audio, path in ((clip.noisy, row.input_audio), (clip.clean, row.clean_audio)):
        if audio is not None:
            heard[path] = listening_copy(audio, clip.sample_rate, folders.inside(folder, path))
    return clip.sample_rate


def grid_output(
    folder: Path, result: Mapping[str, Any], record: ClipRecord | None, clip_id: str, metric: str,
    read_output: Callable[[str, str], tuple[np.ndarray, int] | None], heard: dict[str, np.ndarray],
) -> tuple[GridOutput, int]:
    """One engine's cell of a row: its score and flags, and its output copied
    (added to ``heard``); with the output's rate (0 when none was kept). Flags
    that define the engine (the baseline is its input) are not repeated there."""
    engine = result["engine"]
    if record is None:
        return GridOutput(engine, clip_id, error="not run on this clip"), 0
    flags = [flag for flag in record.flags if flag not in result.get("expected_flags", {})]
    output = GridOutput(engine, record.run_id, record.scores.get(metric), flags, record.error or "")
    kept = None if record.failed else read_output(engine, record.run_id)
    if kept is None:
        return output, 0
    audio, rate = kept
    output.audio = f"{AUDIO_FOLDER}/{file_stem(engine)}/{record.run_id}.wav"
    heard[output.audio] = listening_copy(audio, rate, folders.inside(folder, output.audio))
    return output, rate


def excerpt(audio: np.ndarray, rate: int) -> np.ndarray:
    """The first LISTEN_SECONDS of (samples,) or (channels, samples) audio."""
    return np.asarray(audio)[..., : int(LISTEN_SECONDS * rate)]


def heard_excerpt(audio: np.ndarray, rate: int) -> np.ndarray:
    """What the grid plays of ``audio``: its excerpt, float32, clipped at full scale."""
    return np.clip(excerpt(audio, rate), -1.0, 1.0).astype(np.float32)


def listening_copy(audio: np.ndarray, rate: int, path: Path) -> np.ndarray:
    """Writes the excerpt as 16-bit PCM, which every browser plays; beyond full
    scale is clipped (and flagged as clipped). Returns what was written."""
    heard = heard_excerpt(audio, rate)
    write_wav(path, heard, rate, "PCM_16")
    return heard


def write_wav(path: Path, audio: np.ndarray, rate: int, subtype: str) -> None:
    """(samples,) or (channels, samples) audio as a WAV file, put in place
    whole (nsbench.store.atomic). Encoded in memory first: on a full disk
    libsndfile says only "System error", the file system's write says why."""
    encoded = io.BytesIO()
    soundfile.write(encoded, np.asarray(audio).T, rate, format="WAV", subtype=subtype)
    atomic.write_bytes(path, encoded.getbuffer())


def read_excerpt(path: Path) -> tuple[np.ndarray, int] | None:
    """A kept output's first LISTEN_SECONDS as (samples,) or (channels, samples); None if absent."""
    if not path.is_file():
        return None
    rate = soundfile.info(str(path)).samplerate
    audio, rate = soundfile.read(str(path), frames=int(LISTEN_SECONDS * rate), dtype="float32", always_2d=True)
    return as_signal(audio), rate


def as_signal(frames: np.ndarray) -> np.ndarray:
    """soundfile's (frames, channels) as nsbench holds audio: (samples,) or (channels, samples)."""
    return frames[:, 0] if frames.shape[1] == 1 else frames.T
