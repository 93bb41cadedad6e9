"""The listening grid of report.html: the clips worth hearing, each through
every engine of the run, side by side with its noisy input and clean reference.

Which clips: each engine's worst clip, the worst clip of each engine's worst
cell, a clip for each flag an engine raised, then two typical ones (nearest the
median over engines); at most ``GRID_ROWS``, at least ``MIN_ROWS`` where the set
has them. They are known only once every engine has run, so the run keeps every
output until then (nsbench.extras: in ``--output-folder``, or else as 16-bit
excerpts in a temporary folder) and the grid copies its clips from there.

The report folder then holds only the grid's audio, as 16-bit WAV excerpts of at
most ``LISTEN_SECONDS``, and a small spectrogram PNG beside each.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import soundfile

from nsbench.report.highlights import cell_name
from nsbench.report import layout
from nsbench.report.model import file_stem
from nsbench.plugins.errors import ClipError
from nsbench.plugins.records import ClipRecord, ClipSource

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


def first_runs(records: Sequence[ClipRecord]) -> dict[str, ClipRecord]:
    """Per clip, the record heard in the grid: the first seed's."""
    runs: dict[str, ClipRecord] = {}
    for record in records:
        runs.setdefault(record.clip_id, record)
    return runs


def choose_clips(
    results: Sequence[Mapping[str, Any]], records_by_engine: Mapping[str, Sequence[ClipRecord]], metric: str,
    higher_is_better: bool, limit: int = GRID_ROWS,
) -> dict[str, list[str]]:
    """clip id -> why it is worth hearing, in the grid's order (worst first)."""
    sign = 1.0 if higher_is_better else -1.0
    runs = {engine: first_runs(records) for engine, records in records_by_engine.items()}
    scored = {engine: {clip: r for clip, r in by_clip.items() if not r.failed and metric in r.scores}
              for engine, by_clip in runs.items()}
    judged = [r for r in results if not layout.passes_input_through(r["engine"]) and r["engine"] in runs] or list(results)
    chosen: dict[str, list[str]] = {}

    def add(clip: str | None, why: str, room: int) -> None:
        if clip is not None and (clip in chosen or len(chosen) < room):
            chosen.setdefault(clip, []).append(why)

    def worst_of(candidates: Sequence[ClipRecord]) -> str | None:
        return min(candidates, key=lambda r: (sign * r.scores[metric], r.clip_id)).clip_id if candidates else None

    room = max(limit - TYPICAL_ROWS, 1)
    for result in judged:
        add(worst_of(list(scored.get(result["engine"], {}).values())), f"worst of {result['engine']}", room)
    for result in judged:
        cell = (result.get("worst_cell") or {}).get("cell")
        if cell:
            members = [r for r in scored.get(result["engine"], {}).values() if in_cell(r, cell)]
            add(worst_of(members), f"worst in {result['engine']}'s worst cell ({cell_name(cell)})", room)
    for result in results:
        by_run = {r.run_id: r for r in records_by_engine.get(result["engine"], [])}
        for name, flag in result.get("flags", {}).items():
            flagged = [by_run[run] for run in flag["clips"] if run in by_run]
            clip = worst_of([r for r in flagged if r.clip_id in scored.get(result["engine"], {})]) or (
                flagged[0].clip_id if flagged else None)
            add(clip, f"{result['engine']}: {name}", room)
    by_badness = clip_means(scored, [r["engine"] for r in judged], metric, sign)
    if by_badness:
        median = float(np.median(list(by_badness.values())))
        typical = sorted((c for c in by_badness if c not in chosen), key=lambda c: (abs(by_badness[c] - median), c))
        for clip in typical[:TYPICAL_ROWS]:
            add(clip, "typical (near the median over engines)", limit)
    for clip in sorted(by_badness, key=lambda c: (by_badness[c], c)):  # a small run: the worst of the rest
        if len(chosen) >= min(MIN_ROWS, limit):
            break
        add(clip, "among the worst over engines", limit)
    return chosen


def in_cell(record: ClipRecord, cell: Mapping[str, Any]) -> bool:
    return all(str(record.labels.get(key, "")) == str(value) for key, value in cell.items())


def clip_means(scored: Mapping[str, Mapping[str, ClipRecord]], engines: Sequence[str], metric: str, sign: float) -> dict[str, float]:
    """Per clip, the mean headline score over engines, signed so that lower is worse."""
    values: dict[str, list[float]] = {}
    for engine in engines:
        for clip, record in scored.get(engine, {}).items():
            values.setdefault(clip, []).append(sign * record.scores[metric])
    return {clip: float(np.mean(v)) for clip, v in values.items()}


def build_grid(
    folder: Path, results: Sequence[Mapping[str, Any]], records_by_engine: Mapping[str, Sequence[ClipRecord]],
    sources: Mapping[str, ClipSource], read_output: Callable[[str, str], tuple[np.ndarray, int] | None],
    metric: str, higher_is_better: bool, draw: bool = True,
) -> Grid:
    """Chooses the clips, writes their listening copies (and spectrograms) under
    ``folder/audio/``. ``read_output(engine, run)`` gives a kept output, or None."""
    runs = {engine: first_runs(records) for engine, records in records_by_engine.items()}
    rows = []
    for clip_id, reasons in choose_clips(results, records_by_engine, metric, higher_is_better).items():
        labels = next((dict(by_clip[clip_id].labels) for by_clip in runs.values() if clip_id in by_clip), {})
        row = GridRow(clip_id, labels, reasons)
        heard: dict[str, np.ndarray] = {}  # relative audio path -> what was written, for the spectrograms
        rate = reference_copies(folder, row, sources.get(clip_id), heard)
        for result in results:
            output, output_rate = grid_output(folder, result, runs.get(result["engine"], {}).get(clip_id),
                                              clip_id, metric, read_output, heard)
            row.outputs.append(output)
            rate = rate or output_rate
        if draw and heard:
            from nsbench.report.spectrograms import draw_row  # librosa only where a report is drawn

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
            heard[path] = listening_copy(audio, clip.sample_rate, folder / path)
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
    heard[output.audio] = listening_copy(audio, rate, folder / output.audio)
    return output, rate


def excerpt(audio: np.ndarray, rate: int) -> np.ndarray:
    """The first LISTEN_SECONDS of (samples,) or (channels, samples) audio."""
    return np.asarray(audio)[..., : int(LISTEN_SECONDS * rate)]


def listening_copy(audio: np.ndarray, rate: int, path: Path) -> np.ndarray:
    """Writes the excerpt as 16-bit PCM, which every browser plays; beyond full
    scale is clipped (and flagged as clipped). Returns what was written."""
    heard = np.clip(excerpt(audio, rate), -1.0, 1.0).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), heard.T, rate, subtype="PCM_16")
    return heard


def read_excerpt(path: Path) -> tuple[np.ndarray, int] | None:
    """A kept output's first LISTEN_SECONDS as (samples,) or (channels, samples); None if absent."""
    if not path.is_file():
        return None
    rate = soundfile.info(str(path)).samplerate
    audio, rate = soundfile.read(str(path), frames=int(LISTEN_SECONDS * rate), dtype="float32", always_2d=True)
    return (audio[:, 0] if audio.shape[1] == 1 else audio.T), rate
