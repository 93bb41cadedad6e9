"""``nsbench listen RESULTS_FOLDER``: builds a blind listening test from a run.

The test folder (``--output``, default ``RESULTS_FOLDER/listening-test``) holds
``index.html``, ``listen.js``, ``listen.css``, ``trials.js`` (the trial list, a
script: a page opened from file:// cannot fetch its own files) and
``audio/<opaque id>.wav``; nothing in it names an engine, a clip or a
condition, nor tells a curious listener one: each trial lists its conditions
in a random order under ids of its own, and the reference a MUSHRA trial plays
as such is a file apart from its hidden copy (their bytes differ too: each
file has its own dither). The key that maps the opaque ids back, with every
objective score of each stimulus, stays in the results folder
(``listening-key.json``), where ``nsbench listen --collect`` reads it.
"""
from __future__ import annotations

import hashlib
import json
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nsbench.listen import design, screening, stimuli
from nsbench.listen.stimuli import token
from nsbench.listen.design import ANCHOR, INPUT, MUSHRA, P835, REFERENCE, Condition
from nsbench.listen.run_audio import FinishedRun, load_clip, reopen
from nsbench.plugins.errors import UserError
from nsbench.store import atomic

PAGE = Path(__file__).parent / "page"
KEY_FILE = "listening-key.json"
TEST_FOLDER = "listening-test"
# 2: each trial shows its conditions under ids of its own (the key's trials map them back),
# and a MUSHRA trial's reference played as such is a file of its own.
FORMAT = 2
OPEN_REFERENCE = -1  # in place of a condition's index: the reference a MUSHRA trial plays as such


@dataclass
class Options:
    method: str | None = None  # None: MUSHRA where the set has clean references, else P.835
    engines: Sequence[str] = ()
    clips_per_cell: int = 1
    seconds: float = 8.0
    seed: int = 0
    max_trials: int = 12  # per part: a MUSHRA screen of 11 conditions takes a few minutes
    parts: int | None = None
    plugins: Sequence[str] = ()  # the run's --plugin, named again (nsbench.listen.run_audio.reopen)


@dataclass
class Built:
    folder: Path
    key: Path
    method: str
    clips: int
    conditions: list[str]
    parts: int
    lowered: dict[str, float] = field(default_factory=dict)  # clip -> dB the whole trial was lowered for the peak


def build(results: Path, output: Path | None, options: Options) -> Built:
    run = reopen(results, options.plugins)
    engines = chosen_engines(run, options.engines)
    keys = cell_keys(run)
    baseline = [r["engine"] for r in run.results if run.view.passes_input_through(r["engine"])]
    clips, cells = design.draw_clips(run.records, [*engines, *baseline], keys, options.clips_per_cell, options.seed)
    if not clips:
        raise UserError(f"{results}: no clip that every chosen engine ran without failing")
    loaded = {clip: load_clip(run.sources, clip) for clip in clips}
    gone = [clip for clip, value in loaded.items() if value is None]
    if gone:
        raise UserError(f"{results}: the dataset no longer has clip {gone[0]} (of {len(gone)}); rerun: {run.command}")
    has_reference = all(getattr(clip, "clean", None) is not None for clip in loaded.values())
    method = options.method or (MUSHRA if has_reference else P835)
    if method == MUSHRA:  # a music-only clip's reference is silence: nothing to compare the conditions with
        silent = [c for c in clips if has_reference and not np.any(loaded[c].clean)]
        clips = [c for c in clips if c not in silent]
        if silent:
            print(f"nsbench listen: {len(silent)} drawn clip(s) left out: their clean reference is silent "
                  f"(a music-only clip), which MUSHRA cannot compare with; P.835 (--method p835) can rate them")
        if not clips:
            raise UserError(f"{results}: every drawn clip has a silent clean reference; use --method p835")
    if method == MUSHRA and not has_reference:
        raise UserError(f"{results}: MUSHRA needs clean references and this set has none; use --method p835")
    conditions = design.conditions_for(method, engines, has_reference, run.view.reference_engine() if baseline else "")
    parts = options.parts or design.part_count(method, len(clips), len(conditions), options.max_trials)
    audio = condition_audio(run, clips, loaded, conditions)
    return write_test(run, output or results / TEST_FOLDER, method, clips, cells, conditions, parts, audio, loaded, options)


def chosen_engines(run: FinishedRun, asked: Sequence[str]) -> list[str]:
    ran = [r["engine"] for r in run.results]
    for name in asked:
        if name not in ran:
            raise UserError(f"engine '{name}' is not in {run.folder} (it has {', '.join(ran)})")
    return list(asked) or [name for name in ran if not run.view.passes_input_through(name)]


def cell_keys(run: FinishedRun) -> list[str]:
    keys: dict[str, None] = {}
    for cell in run.results[0].get("cells", []):
        keys.update(dict.fromkeys(cell.get("cell", {})))
    return list(keys)


def first_record(run: FinishedRun, engine: str, clip: str) -> dict[str, Any] | None:
    return next((r for r in run.records.get(engine, []) if r["clip_id"] == clip), None)


def condition_audio(run: FinishedRun, clips: list[str], loaded: dict[str, Any],
                    conditions: list[Condition]) -> dict[tuple[str, int], np.ndarray]:
    """Every (clip, condition)'s whole audio; a missing output stops the build, saying which run provides it."""
    audio, missing = {}, []
    for clip_id in clips:
        clip = loaded[clip_id]
        for index, condition in enumerate(conditions):
            if condition.kind == REFERENCE:
                audio[clip_id, index] = clip.clean
            elif condition.kind == ANCHOR:
                audio[clip_id, index] = stimuli.low_pass(clip.clean, clip.sample_rate)
            elif condition.kind == INPUT:
                audio[clip_id, index] = clip.noisy
            else:
                record = first_record(run, condition.engine, clip_id) or {}
                run_id = clip_id if record.get("seed") is None else f"{clip_id}_seed{record['seed']}"
                found = run.read_output(condition.engine, run_id, clip, record.get("seed"))
                if found is None:
                    missing.append(f"{condition.engine} on {clip_id}")
                else:
                    audio[clip_id, index] = found[0]
    if missing:
        raise UserError(f"no kept output of {missing[0]} (and {len(missing) - 1} more) in the cache or --output-folder; "
                        f"this run provides them (from the cache where it can): {run.command}")
    return audio


def write_test(run: FinishedRun, folder: Path, method: str, clips: list[str], cells: dict[str, dict[str, str]],
               conditions: list[Condition], parts: int, audio: dict[tuple[str, int], np.ndarray],
               loaded: dict[str, Any], options: Options) -> Built:
    if folder.exists():
        shutil.rmtree(folder / "audio", ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    clip_ids = {clip: "c" + token() for clip in clips}
    condition_ids = ["k" + token() for _ in conditions]
    files: dict[tuple[str, int], str] = {}
    built = Built(folder, run.folder / KEY_FILE, method, len(clips), [c.name for c in conditions], parts)
    stimulus_key: dict[str, Any] = {}
    for clip in clips:
        rate = loaded[clip].sample_rate
        seconds = min(options.seconds, len(loaded[clip].noisy) / rate)
        levelled = stimuli.equalise({j: stimuli.cut(audio[clip, j], rate, seconds) for j in range(len(conditions))}, rate)
        built.lowered[clip] = max((stimuli.TARGET_LUFS - l.loudness - l.gain_db for l in levelled.values()
                                   if np.isfinite(l.loudness)), default=0.0)
        if method == MUSHRA:  # the reference played as such: the hidden one's audio, in a file of its own
            levelled[OPEN_REFERENCE] = levelled[0]
        for j, name in write_stimuli(folder, levelled, rate).items():
            files[clip, j] = name
            stimulus_key[name] = {"clip": clip_ids[clip], "condition": condition_ids[j] if j != OPEN_REFERENCE else "reference",
                                  "loudness_lufs": levelled[j].loudness, "gain_db": levelled[j].gain_db}
    split = design.split(method, len(clips), len(conditions), parts)
    trials_by_part, trial_key = [], {}
    for number, pairs in enumerate(split):
        trials = page_trials(method, number + 1, pairs, clips, clip_ids, condition_ids, files, trial_key)
        if method == P835:
            rate = loaded[clips[0]].sample_rate
            trials += screening.p835_trials(folder, rate, number, trial_key, stimulus_key)
        shuffle(trials)  # so the file's order tells nothing (the page reshuffles per listener)
        trials_by_part.append(trials)
    test = {"format": FORMAT, "test": "t" + token(), "method": method, "scales": list(design.P835_SCALES),
            "parts": trials_by_part}
    test["digest"] = digest(test)
    atomic.write_text(folder / "trials.js", "window.NSBENCH_TEST = " + json.dumps(test, indent=1) + ";\n")
    for asset in ("index.html", "listen.js", "listen.css"):
        atomic.write_bytes(folder / asset, (PAGE / asset).read_bytes())
    key = {
        "format": FORMAT, "test": test["test"], "digest": test["digest"], "method": method, "seed": options.seed,
        "results_folder": str(run.folder.resolve()), "dataset": run.dataset, "run_command": run.command,
        "parts": parts, "excerpt_seconds": options.seconds, "target_lufs": stimuli.TARGET_LUFS,
        "clips": {clip_ids[c]: {"clip_id": c, "cell": cells[c]} for c in clips},
        "conditions": {cid: {"kind": c.kind, "engine": c.engine, "name": c.name}
                       for cid, c in zip(condition_ids, conditions)},
        "trials": trial_key, "stimuli": stimulus_key,
        "scores": stimulus_scores(run, clips, clip_ids, conditions, condition_ids),
        "metrics": run.results[0].get("metric_definitions", {}),
    }
    atomic.write_text(built.key, json.dumps(key, indent=1, sort_keys=True, default=float))
    return built


def write_stimuli(folder: Path, levelled: dict[int, stimuli.Levelled], rate: int) -> dict[int, str]:
    """One clip's stimuli, each under a random name, written in a random order (the files' times tell nothing)."""
    order = list(levelled)
    shuffle(order)
    names = {}
    for j in order:
        names[j] = f"audio/{token()}.wav"
        stimuli.write(folder / names[j], levelled[j].audio, rate)
    return names


def page_trials(method: str, part: int, pairs: list[tuple[int, int]], clips: list[str], clip_ids: dict[str, str],
                condition_ids: list[str], files: dict[tuple[str, int], str], trial_key: dict[str, Any]) -> list[dict[str, Any]]:
    """The trials of one part, as the page sees them: opaque ids only, each trial's conditions in a random
    order under ids of its own (the key maps them back), so no id or position repeats what another trial shows."""
    trials = []
    if method == MUSHRA:
        for i in sorted({i for i, _ in pairs}):
            shown = list(range(len(condition_ids)))
            shuffle(shown)
            trial, own = new_trial(trial_key, part, clip_ids[clips[i]], [condition_ids[j] for j in shown])
            trials.append({"trial": trial, "clip": clip_ids[clips[i]], "reference": files[clips[i], OPEN_REFERENCE],
                           "conditions": [{"condition": mine, "audio": files[clips[i], j]} for mine, j in zip(own, shown)]})
        return trials
    for i, j in pairs:
        trial, (mine,) = new_trial(trial_key, part, clip_ids[clips[i]], [condition_ids[j]])
        trials.append({"trial": trial, "clip": clip_ids[clips[i]], "condition": mine, "audio": files[clips[i], j]})
    return trials


def new_trial(trial_key: dict[str, Any], part: int, clip: str, conditions: list[str]) -> tuple[str, list[str]]:
    """A test trial's id and its own ids for ``conditions`` (the key's ids), which its entry in the key maps back."""
    trial, own = "t" + token(), ["k" + token() for _ in conditions]
    trial_key[trial] = {"kind": "test", "part": part, "clip": clip, "conditions": dict(zip(own, conditions))}
    return trial, own


def shuffle(items: list[Any]) -> None:
    secrets.SystemRandom().shuffle(items)


def stimulus_scores(run: FinishedRun, clips: list[str], clip_ids: dict[str, str], conditions: list[Condition],
                    condition_ids: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """clip id -> condition id -> every objective score of that output (the input's: the baseline's record)."""
    scores: dict[str, dict[str, dict[str, float]]] = {}
    for clip in clips:
        for cid, condition in zip(condition_ids, conditions):
            record = first_record(run, condition.engine, clip) if condition.engine else None
            if record:
                scores.setdefault(clip_ids[clip], {})[cid] = {k: v for k, v in record.get("scores", {}).items()
                                                              if isinstance(v, (int, float)) and np.isfinite(v)}
    return scores


def digest(test: dict[str, Any]) -> str:
    """Of the trial list as the page holds it: answers carry it, so answers to another test are told apart."""
    body = {k: v for k, v in test.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
