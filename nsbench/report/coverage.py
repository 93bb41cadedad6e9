"""Which ``<engine>.json`` files a report covers.

A run writes the JSON of the engines it ran, and the folder may hold others
from earlier runs (``--engine rnnoise``, then ``--engine deepfilternet``).
report.md and report.html cover every one whose run identity matches this
run's (the same dataset and options, clips, metrics, conditions and blocks:
its numbers are comparable, row for row), marked as from an earlier run; the
others are listed under "Not in this report" with the reason, so no file in
the folder is silently left out. Each file is read as a stranger's data
(nsbench.report.read_back): one that does not match the results schema is
listed with what is wrong in it. --compare asks the same of its target's
files, but compares on the clips both runs share (nsbench.report.compare).
"""
from __future__ import annotations

import copy
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from nsbench.report import read_back
from nsbench.report.format import md, plain
from nsbench.report.model import RUN_FILE_STEMS
from nsbench.store.digests import digest

IDENTITY_KEY = "run_identity"
# Files in the folder that are not an engine's result: the run's own (the
# writer's, and the listening test's beside them), neither reported nor
# listed as left out.
NOT_ENGINE_FILES = tuple(f"{stem}.json" for stem in RUN_FILE_STEMS)


def run_identity(dataset: str, description: Mapping[str, Any], clip_ids: Sequence[str], metrics: Mapping[str, str],
                 conditions: Sequence[str], block_size: int | None, block_ms: float | None) -> dict[str, Any]:
    """What makes two runs' numbers comparable; stored in every ``<engine>.json``.
    ``metrics``: each metric's identity (name, version, code, options)."""
    return {
        "dataset": dataset,
        "dataset_options": digest(json.dumps(without_locations(description), sort_keys=True, default=str)),
        "clips": {"count": len(clip_ids), "digest": digest(*clip_ids)},
        "metrics": dict(sorted(metrics.items())),
        "conditions": list(conditions),
        "blocks": {"size": block_size, "ms": block_ms},
    }


def without_locations(description: Any) -> Any:
    """A description that holds its data's content digest, without where the
    data lies: the demo mixed in another cache folder ($NSBENCH_CACHE) is the
    same demo, and its numbers compare."""
    if not isinstance(description, Mapping) or "content_sha256" not in description:
        return description
    return {key: value for key, value in description.items() if not is_location(value)}


def is_location(value: Any) -> bool:
    """An absolute path: where a dataset's files lie (the demo's mix in the
    cache, its bundle in the install), not what they hold."""
    return isinstance(value, str) and Path(value).is_absolute()


def mismatch(stored: Mapping[str, Any] | None, current: Mapping[str, Any], descriptions: tuple[Any, Any] = ({}, {})) -> str:
    """Why a file's run identity differs from this run's; "" if it matches.
    ``descriptions``: the file's and this run's dataset descriptions, to name the options that differ."""
    setup = setup_mismatch(stored, current, descriptions)
    if setup or stored is None:
        return setup
    clips = stored.get("clips") or {}
    if clips != current["clips"]:
        return f"other clips ({clips.get('count', '?')}; this run has {current['clips']['count']})"
    return ""


def setup_mismatch(stored: Mapping[str, Any] | None, current: Mapping[str, Any], descriptions: tuple[Any, Any] = ({}, {})) -> str:
    """What differs between two run identities but the clips: the dataset and
    its options, the metrics, the conditions and the block size; "" if nothing."""
    if not stored:
        return "written by an older nsbench, which did not record what it ran on"
    if stored.get("dataset") != current["dataset"]:
        return f"another dataset ({stored.get('dataset')}; this run's is {current['dataset']})"
    if stored.get("dataset_options") != current["dataset_options"]:
        return options_reason(*(without_locations(d) for d in descriptions))
    if stored.get("metrics") != current["metrics"]:
        return metrics_reason(stored.get("metrics") or {}, current["metrics"])
    if stored.get("conditions") != current["conditions"]:
        return f"other conditions ({', '.join(stored.get('conditions') or []) or 'none'})"
    if stored.get("blocks") != current["blocks"]:
        return "other block size"
    return ""


def options_reason(stored: Any, current: Any) -> str:
    """"other dataset options (data_folder: /a there, /b now)": each described option that differs."""
    if not isinstance(stored, Mapping) or not isinstance(current, Mapping):
        return "other dataset options"
    changed = [key for key in sorted(set(stored) | set(current), key=str) if stored.get(key) != current.get(key)]
    named = "; ".join(f"{key}: {shortened(stored.get(key, 'none'))} there, {shortened(current.get(key, 'none'))} now"
                      for key in changed[:3])
    return f"other dataset options ({named})" if named else "other dataset options"


def shortened(value: Any) -> str:
    """A value for a one-line reason: a digest (long and hexadecimal) by its first characters, the rest whole."""
    text = str(value)
    return f"{text[:12]}..." if len(text) > 16 and all(c in "0123456789abcdef" for c in text) else text


def metrics_reason(stored: Mapping[str, str], current: Mapping[str, str]) -> str:
    if set(stored) != set(current):
        return f"other metrics ({', '.join(sorted(stored)) or 'none'})"
    changed = sorted(name for name in stored if stored[name] != current[name])
    return f"other versions of the metrics {', '.join(changed)}"


@dataclass
class Coverage:
    """The earlier runs' results a report adds, and the files it leaves out, by file name."""

    earlier: list[dict[str, Any]] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)


def earlier_results(folder: Path, current: Mapping[str, Any], ran: Sequence[str], stems: Mapping[str, str]) -> Coverage:
    """The folder's ``<engine>.json`` files other than this run's (``ran``,
    by engine name; ``stems``: engine name -> file stem), sorted into those
    the report covers and those it leaves out."""
    coverage = Coverage()
    written = {stems[name] for name in ran}
    for path in sorted(folder.glob("*.json")):
        if path.name in NOT_ENGINE_FILES or path.stem in written:
            continue
        try:
            result = read_back.engine_result(path)
        except read_back.NotReadable as error:
            coverage.left_out[path.name] = str(error)
            continue
        reason = mismatch(result.get(IDENTITY_KEY), current)
        if reason:
            coverage.left_out[path.name] = reason
        else:
            coverage.earlier.append(marked(result))
    return coverage


def marked(result: dict[str, Any]) -> dict[str, Any]:
    """The earlier result as the report shows it: marked with its run's time,
    and without links to a listening grid this run has replaced."""
    shown = copy.deepcopy(result)
    when = shown.get("provenance", {}).get("time_utc", "an unknown time")
    shown["from_earlier_run"] = when
    info = shown.setdefault("engine_info", {})
    info["notes"] = [f"from an earlier run ({when}), not run now", *info.get("notes", [])]
    return shown


def earlier_text(earlier: Sequence[Mapping[str, Any]]) -> str:
    """report.md's paragraph after the introduction, or ""."""
    if not earlier:
        return ""
    names = ", ".join(f"{md(r['engine'])} ({md(r['from_earlier_run'])})" for r in earlier)
    return (f"**From earlier runs:** {names}. Not run now: their `<engine>.json` in this folder was made on the same clips, "
            "with the same metrics, conditions and dataset options, so their rows stand beside this run's.")


def left_out_markdown(left_out: Mapping[str, str]) -> str:
    if not left_out:
        return ""
    items = "\n".join(f"- {code(name)}: {md(reason)}" for name, reason in left_out.items())
    return f"## Not in this report\n\nFiles in this folder from runs whose numbers do not compare with this run's:\n\n{items}"


def code(name: str) -> str:
    """A file name as code in markdown; md where a backtick or line break would end the code span."""
    return f"`{name}`" if "`" not in name and len(name.splitlines()) <= 1 else md(name)


def coverage_line(coverage: Coverage) -> str:
    """The terminal summary's one line, or ""."""
    parts = []
    if coverage.earlier:
        names = ", ".join(r["engine"] for r in coverage.earlier)
        parts.append(f"the report also holds {names}, from {'earlier runs' if len(coverage.earlier) > 1 else 'an earlier run'}")
    by_reason: dict[str, list[str]] = {}
    for name, why in coverage.left_out.items():
        by_reason.setdefault(why, []).append(name)
    parts += [f"not in the report: {', '.join(names)} ({why})" for why, names in by_reason.items()]
    return "; ".join(parts)


def earlier_html(earlier: Sequence[Mapping[str, Any]]) -> str:
    text = earlier_text(earlier)
    if not text:
        return ""
    title, _, rest = plain(text).replace("`", "").partition(":")
    return f'<p id="earlier-runs"><b>{html.escape(title)}:</b>{html.escape(rest)}</p>'


def left_out_html(left_out: Mapping[str, str]) -> str:
    if not left_out:
        return ""
    items = "".join(f"<li><code>{html.escape(name)}</code>: {html.escape(reason)}</li>" for name, reason in left_out.items())
    return ('<section id="not-in-report"><h2>Not in this report</h2><p>Files in this folder from runs whose numbers '
            f"do not compare with this run's:</p><ul>{items}</ul></section>")


def cache_counts(results: Sequence[Mapping[str, Any]]) -> tuple[int, int, list[str]]:
    """This run's clip runs served by the cache, of how many, and per engine
    ("rnnoise 8 of 8"); earlier runs' results are left out, they did not run."""
    served, total, parts = 0, 0, []
    for result in results:
        counts = result.get("from_cache")
        if result.get("from_earlier_run") or not counts:
            continue
        served, total = served + counts["outputs"], total + counts["runs"]
        if counts["outputs"]:
            parts.append(f"{result['engine']} {counts['outputs']} of {counts['runs']}")
    return served, total, parts


def cache_text(results: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on the clips the cache served (a resumed or repeated run), or ""."""
    served, total, parts = cache_counts(results)
    if not served:
        return ""
    if served == total:  # a repeated run: the engines need no list (nine of them would not fit a line)
        return f"from the cache: all {total} clip runs; timings as first run"
    return f"from the cache: {served} of {total} clip runs ({', '.join(parts)}); timings as first run"


def cache_sentence(results: Sequence[Mapping[str, Any]]) -> str:
    """cache_text as the reports' sentence, or ""."""
    text = cache_text(results)
    return f"{text[:1].upper()}{text[1:]}." if text else ""
