"""``nsbench listen --collect FILES...``: the listeners' answers, screened,
turned into scores per condition and per cell, and set against every
objective metric of the run.

Each bad input costs one line on stderr and only what is bad: a file from
another test (its trial-list digest differs), a truncated, unreadable or
malformed file, a part the test does not have, a listener already collected
for that part (the first file is kept); a rating outside its scale, or of a
trial, clip or condition its part does not have (that rating alone is left
out); ratings given again (each counted once, one line for the file). Screening (BS.1534-3's
post-screening for MUSHRA; trapping and gold trials for P.835) excludes a
listener with the reason, shown in the results; nothing is dropped silently.
"""
from __future__ import annotations

import json
import math
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from nsbench.listen import stats
from nsbench.report import listening_section as report_section  # the section is the report's (nsbench.report.writer includes it)
from nsbench.listen.build import FORMAT, KEY_FILE
from nsbench.listen.design import MUSHRA, P835_SCALES, REFERENCE
from nsbench.report.listening_section import RESULTS_JSON, RESULTS_MD
from nsbench.plugins.errors import UserError
from nsbench.ratings import Z95, RatedItem, RatedSet, Rating
from nsbench.report import human_agreement

REFERENCE_FLOOR = 90  # BS.1534-3 post-screening: the hidden reference below this ...
REFERENCE_SHARE = 0.15  # ... in more than this share of the trials excludes the assessor


@dataclass
class Answers:
    path: Path
    listener: str
    part: int
    ratings: list[dict[str, Any]]
    excluded: str = ""  # why screening excluded this listener's part


@dataclass
class Collected:
    key: dict[str, Any]
    answers: list[Answers] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def scales(self) -> list[str]:
        return ["score"] if self.key["method"] == MUSHRA else list(P835_SCALES)

    @property
    def kept(self) -> list[Answers]:
        return [a for a in self.answers if not a.excluded]


# ----------------------------------------------------------------- reading


def find_keys(key: Path | None, results: Path | None) -> dict[str, tuple[Path, dict[str, Any]]]:
    """digest -> (path, key): the one named, or every listening-key.json under RESULTS or ./results."""
    if key is not None:
        paths = [key]
    elif results is not None:
        paths = [results / KEY_FILE]
    else:
        paths = sorted(Path("results").glob(f"*/{KEY_FILE}"))
    keys = {}
    for path in paths:
        try:
            payload = json.loads(path.read_text())
            keys[payload["digest"]] = (path, payload)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise UserError(f"{path}: not a readable listening key ({error})") from None
        if payload.get("format") != FORMAT:
            raise UserError(f"{path}: a listening key of format {shown(payload.get('format'))}, from another nsbench; "
                            f"this one reads format {FORMAT}: build the test again (nsbench listen RESULTS)")
    if not keys:
        raise UserError("no listening-key.json found: name it with --key, or give the results folder")
    return keys


def read_answers(path: Path, keys: dict[str, tuple[Path, dict[str, Any]]], problems: list[str]) -> tuple[str, Answers] | None:
    try:
        payload = json.loads(path.read_text())
    except OSError as error:
        problems.append(f"{path}: cannot read it ({error.strerror or error}); skipped")
        return None
    except ValueError as error:
        problems.append(f"{path}: not a complete answers file (truncated, or not one: {error}); skipped")
        return None
    why = answers_problem(payload, keys)
    if why:
        problems.append(f"{path}: {why}; skipped")
        return None
    return payload["digest"], Answers(path, payload["listener"], payload["part"], payload["ratings"])


def answers_problem(payload: Any, keys: dict[str, tuple[Path, dict[str, Any]]]) -> str:
    """Why ``payload`` is not a listener's answers to a part of one of ``keys``' tests, or ""."""
    if not isinstance(payload, dict) or not {"digest", "listener", "part", "ratings"} <= payload.keys():
        return "not a complete answers file (truncated, or not one: it needs digest, listener, part and ratings)"
    digest, listener, part = payload["digest"], payload["listener"], payload["part"]
    if not isinstance(digest, str) or digest not in keys:
        known = ", ".join(sorted(keys))
        return f"answers to another test (trial list {shown(digest)}; the key{'s' if len(keys) > 1 else ''} here: {known})"
    if not isinstance(listener, str) or not listener.strip():
        return f"listener {shown(listener)} is not a name"
    parts = keys[digest][1]["parts"]
    if isinstance(part, bool) or not isinstance(part, int) or not 1 <= part <= parts:
        return f"part {shown(part)} is not one of the test's parts (1 to {parts})"
    return "" if isinstance(payload["ratings"], list) else "its ratings are not a list"


def shown(value: Any) -> str:
    """A value read from a file, as a line shows it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def valid_ratings(answers: Answers, key: dict[str, Any], problems: list[str]) -> None:
    """Keeps each rating of a trial of the listener's part, of that trial's clip and one of its conditions,
    within its scale, once; each other rating costs a line (repeats, one for the file) and is not counted.
    A kept rating names the key's condition (the page knows only the trial's own ids)."""
    kept, rated, repeats = [], set(), []
    for number, rating in enumerate(answers.ratings, 1):
        why = rating_problem(rating, answers.part, key)
        if why:
            trial = shown(rating.get("trial")) if isinstance(rating, dict) else "?"
            problems.append(f"{answers.path}: rating {number} (trial {trial}): {why}; left out")
        elif (rating["trial"], rating["condition"]) in rated:
            repeats.append(number)
        else:
            rated.add((rating["trial"], rating["condition"]))
            kept.append({**rating, "condition": key["trials"][rating["trial"]]["conditions"][rating["condition"]]})
    if repeats:
        problems.append(f"{answers.path}: {len(repeats)} rating(s) repeat a trial's condition already rated "
                        f"(ratings {repeats[0]}-{repeats[-1]}); each counted once, the first given")
    answers.ratings = kept


def rating_problem(rating: Any, part: int, key: dict[str, Any]) -> str:
    """Why this rating is not one to count, or ""."""
    trial = rating.get("trial") if isinstance(rating, dict) else None
    entry = key["trials"].get(trial) if isinstance(trial, str) else None
    if entry is None:
        return "not a trial of this test"
    if entry["part"] != part:
        return f"a trial of part {entry['part']}, not of part {part}"
    if rating.get("clip") != entry["clip"]:
        return f"clip {shown(rating.get('clip'))} is not this trial's"
    condition = rating.get("condition")
    if not isinstance(condition, str) or condition not in entry["conditions"]:
        return f"condition {shown(condition)} is not one of this trial's"
    mushra = key["method"] == MUSHRA
    bad = [f"{scale} {rating.get(scale)!r}" for scale in (["score"] if mushra else P835_SCALES)
           if not in_scale(rating.get(scale), mushra)]
    return f"{', '.join(bad)} outside the scale ({'0-100' if mushra else '1-5'})" if bad else ""


def in_scale(value: Any, mushra: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    return 0 <= value <= 100 if mushra else value in (1, 2, 3, 4, 5)


def collect(files: Sequence[Path], key: Path | None = None, results: Path | None = None) -> tuple[Collected, Path]:
    keys = find_keys(key, results)
    problems: list[str] = []
    by_digest: dict[str, list[Answers]] = defaultdict(list)
    seen: dict[tuple[str, str, int], Path] = {}
    for path in files:
        read = read_answers(Path(path), keys, problems)
        if read is None:
            continue
        digest, answers = read
        first = seen.setdefault((digest, answers.listener, answers.part), answers.path)
        if first != answers.path:
            problems.append(f"{answers.path}: listener {answers.listener} (part {answers.part}) is already collected "
                            f"from {first}; skipped")
            continue
        valid_ratings(answers, keys[digest][1], problems)
        by_digest[digest].append(answers)
    if not by_digest:
        raise UserError("no answers to collect: " + (problems[-1] if problems else "no files"))
    if len(by_digest) > 1:
        raise UserError(f"answers to {len(by_digest)} different tests; collect each test's answers on their own")
    digest, answers = next(iter(by_digest.items()))
    collected = Collected(keys[digest][1], answers, problems)
    for listener in collected.answers:
        listener.excluded = screen(listener, collected.key)
    return collected, keys[digest][0].parent


# --------------------------------------------------------------- screening


def screen(answers: Answers, key: dict[str, Any]) -> str:
    """Why this listener's part is excluded, or ""."""
    if key["method"] == MUSHRA:
        hidden = {cid for cid, c in key["conditions"].items() if c["kind"] == REFERENCE}
        trials = {r["trial"] for r in answers.ratings}
        low = {r["trial"] for r in answers.ratings if r.get("condition") in hidden and r["score"] < REFERENCE_FLOOR}
        if trials and len(low) / len(trials) > REFERENCE_SHARE:
            return (f"rated the hidden reference below {REFERENCE_FLOOR} in {len(low)} of {len(trials)} trials "
                    f"({100 * len(low) / len(trials):.0f}%, more than {100 * REFERENCE_SHARE:.0f}%: BS.1534-3 post-screening)")
        return ""
    reasons = []
    for rating in answers.ratings:
        trial = key["trials"][rating["trial"]]
        if trial["kind"] == "test":
            continue
        expected = {scale: trial["expected"][scale] for scale in P835_SCALES if scale in trial["expected"]}
        off = {scale: rating[scale] for scale, value in expected.items() if abs(rating[scale] - value) > trial["tolerance"]}
        if off:
            given = ", ".join(f"{scale} {value}" for scale, value in off.items())
            asked = ", ".join(f"{scale} {value}" for scale, value in expected.items())
            within = f" within {trial['tolerance']}" if trial["tolerance"] else ""
            kind = "trapping" if trial["kind"] == "trap" else "gold"
            reasons.append(f"{kind} trial answered {given} (expected {asked}{within})")
    return "; ".join(reasons)


# ------------------------------------------------------------------ scores


def test_ratings(collected: Collected) -> list[dict[str, Any]]:
    """The kept listeners' ratings of test trials (not the screening ones), with their listener."""
    return [{**r, "listener": a.listener} for a in collected.kept for r in a.ratings
            if collected.key["trials"][r["trial"]]["kind"] == "test"]


def summary(values: Iterable[float], listeners: set[str], clips: set[str]) -> dict[str, Any]:
    values = list(values)
    mean, low, high = stats.mean_ci95(values)
    return {"mean": mean, "ci95": [low, high], "ratings": len(values), "listeners": len(listeners), "clips": len(clips)}


def condition_scores(collected: Collected, ratings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per condition, then per condition and cell: each scale's mean, interval and counts."""
    key = collected.key
    rows = []
    for cid, condition in key["conditions"].items():
        mine = [r for r in ratings if r["condition"] == cid]
        cells: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in mine:
            cells[cell_text(key["clips"][r["clip"]]["cell"])].append(r)
        rows.append({
            "condition": condition["name"], "kind": condition["kind"], "engine": condition["engine"],
            **{scale: summary((r[scale] for r in mine), {r["listener"] for r in mine}, {r["clip"] for r in mine})
               for scale in collected.scales},
            "cells": {cell: {scale: summary((r[scale] for r in members), {r["listener"] for r in members},
                                            {r["clip"] for r in members}) for scale in collected.scales}
                      for cell, members in sorted(cells.items())},
        })
    return rows


def cell_text(cell: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in cell.items()) or "all"


def stimulus_means(ratings: list[dict[str, Any]], scale: str) -> dict[tuple[str, str], float]:
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in ratings:
        values[r["clip"], r["condition"]].append(r[scale])
    return {pair: float(np.mean(v)) for pair, v in values.items()}


def agreement(collected: Collected, ratings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """scale -> metric -> {"system": ..., "stimulus": ...}: each metric against the listeners' mean,
    per condition (system level: a condition's metric mean over the rated clips) and per (clip, condition)."""
    key, out = collected.key, {}
    metrics = sorted({m for by_condition in key["scores"].values() for values in by_condition.values() for m in values})
    for scale in collected.scales:
        means = stimulus_means(ratings, scale)
        out[scale] = {}
        for metric in metrics:
            pairs = [(key["scores"][clip][cid][metric], mean) for (clip, cid), mean in sorted(means.items())
                     if metric in key["scores"].get(clip, {}).get(cid, {})]
            systems: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for (clip, cid), mean in sorted(means.items()):
                if metric in key["scores"].get(clip, {}).get(cid, {}):
                    systems[cid].append((key["scores"][clip][cid][metric], mean))
            system = [(float(np.mean([p[0] for p in v])), float(np.mean([p[1] for p in v]))) for v in systems.values()]
            out[scale][metric] = {
                "higher_is_better": key["metrics"].get(metric, {}).get("higher_is_better"),
                "system": stats.agreement([p[0] for p in system], [p[1] for p in system]),
                "stimulus": stats.agreement([p[0] for p in pairs], [p[1] for p in pairs]),
            }
    return out


def rated_set(collected: Collected, ratings: list[dict[str, Any]], folder: Path = Path(".")) -> RatedSet:
    """The collected ratings as a rated set (nsbench.ratings): one item per
    stimulus (clip x condition), each scale's mean over its ratings with their
    count, standard deviation and 95 % half-interval, so that the listening
    test's agreement comes from the same code as a public rated set's."""
    by_stimulus: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in ratings:
        by_stimulus[r["clip"], r["condition"]].append(r)
    items = []
    for (clip, cid), given in sorted(by_stimulus.items()):
        scored = {}
        for scale in collected.scales:
            values = np.array([r[scale] for r in given], dtype=np.float64)
            std = float(values.std(ddof=1)) if len(values) > 1 else math.nan
            scored[scale] = Rating(float(values.mean()), len(values), std, Z95 * std / math.sqrt(len(values)))
        items.append(RatedItem(f"{clip}/{cid}", cid, "", scored, name=f"{clip}/{cid}"))
    return RatedSet(folder, collected.key["test"], tuple(collected.scales), tuple(items))


def metric_values(collected: Collected, rated: RatedSet) -> dict[str, dict[str, float]]:
    """metric -> stimulus -> the metric's value on the condition's output of the clip (the key's scores)."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    for item in rated.items:
        clip, _, cid = item.clip_id.partition("/")
        for metric, value in collected.key["scores"].get(clip, {}).get(cid, {}).items():
            found[metric][item.clip_id] = float(value)
    return {metric: found[metric] for metric in sorted(found)}


def balance(collected: Collected) -> dict[str, Any]:
    """How often each (clip, condition) pair was rated by the kept listeners."""
    counts = Counter((r["clip"], r["condition"]) for r in test_ratings(collected))
    pairs = len(collected.key["clips"]) * len(collected.key["conditions"])
    values = [counts.get((c, k), 0) for c in collected.key["clips"] for k in collected.key["conditions"]]
    parts = Counter(a.part for a in collected.kept)
    return {"pairs": pairs, "min": min(values, default=0), "max": max(values, default=0),
            "parts_taken": {str(p): parts.get(p, 0) for p in range(1, collected.key["parts"] + 1)}}


def results_of(collected: Collected) -> dict[str, Any]:
    ratings = test_ratings(collected)
    return {
        "test": collected.key["test"], "digest": collected.key["digest"], "method": collected.key["method"],
        "dataset": collected.key.get("dataset", ""), "scales": collected.scales,
        "interval": "Student-t 95% interval of the mean over all ratings (listeners x clips), BS.1534-3 section 9.2",
        "listeners": [{"listener": a.listener, "part": a.part, "file": str(a.path), "ratings": len(a.ratings),
                       "excluded": a.excluded} for a in collected.answers],
        "problems": collected.problems,
        "balance": balance(collected),
        "conditions": condition_scores(collected, ratings),
        "agreement": agreement(collected, ratings),
        # P.1401's figures (nsbench.report.human_agreement), as on a rated set: one path for every source of ratings.
        "human": human_agreement.cell_rows(rated := rated_set(collected, ratings), metric_values(collected, rated)),
    }


def collect_command(files: Sequence[Path], key: Path | None, results: Path | None) -> int:
    collected, folder = collect(files, key, results)
    for problem in collected.problems:
        print(f"nsbench listen: {problem}", file=sys.stderr)
    if not collected.kept:
        print("nsbench listen: every listener was excluded by screening; the results list them", file=sys.stderr)
    payload = results_of(collected)
    (folder / RESULTS_JSON).write_text(json.dumps(payload, indent=1, default=float))
    text = report_section.markdown(payload)
    (folder / RESULTS_MD).write_text(text)
    report_section.include(folder)
    print(text)
    print(f"nsbench listen: results in {folder / RESULTS_JSON} and {folder / RESULTS_MD} (also in report.md / report.html)")
    return 0
