"""What did not work in a run: the failed clips in the reports, and the exit code.

A run writes every result it can, then exits with the gravest code that
applies: a signal's (130, 143: raised, not returned), then 2 (a user error,
before anything ran), then 3 (--compare found a regression), then 4 (a clip
failed, or an engine asked for by name could not run), else 0. So a script
that checks only for 0 sees every run that left something out.
"""
from __future__ import annotations

import html
import re
from typing import Any, Mapping, Sequence

from nsbench.report.format import md

EXIT_INCOMPLETE = 4
# Clips named per reason in the reports; the JSON names them all.
CLIPS_NAMED = 10


CLIP_PLACEHOLDER = "<clip>"


def failure_groups(result: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(reason, clips) of one engine's failed clips, the reason most clips share
    first. Reasons that differ only by the clip's own name (its path: "cannot
    read .../empty_a.wav: the file is empty") are one, with the name made
    ``<clip>``; a reason of one clip is shown as it is."""
    by_reason: dict[str, list[tuple[str, str]]] = {}
    for failed in result.get("failed_clips", []):
        clip, error = str(failed.get("clip_id")), str(failed.get("error"))
        by_reason.setdefault(generic(error, clip), []).append((clip, error))
    groups = [(reason if len(members) > 1 else members[0][1], [clip for clip, _ in members]) for reason, members in by_reason.items()]
    return sorted(groups, key=lambda group: -len(group[1]))


def generic(error: str, clip: str) -> str:
    """The reason with the clip's name, where it stands as a whole word, made ``<clip>``."""
    return re.sub(rf"(?<![\w-]){re.escape(clip)}(?![\w-])", CLIP_PLACEHOLDER, error) if clip else error


def named_clips(clips: Sequence[str]) -> str:
    shown = ", ".join(clips[:CLIPS_NAMED])
    more = f" and {len(clips) - CLIPS_NAMED} more" if len(clips) > CLIPS_NAMED else ""
    return f"{len(clips)} clip{'s' if len(clips) != 1 else ''} ({shown}{more})"


def failure_lines(results: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """(engine, clips, reason) per engine and reason, in the results' order."""
    return [(result["engine"], named_clips(clips), reason) for result in results for reason, clips in failure_groups(result)]


def failures_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """report.md's "Failed clips" section, or "" when every clip ran."""
    lines = failure_lines(results)
    if not lines:
        return ""
    items = "\n".join(f"- **{md(engine)}**, {md(clips)}: {md(reason)}" for engine, clips, reason in lines)
    return f"## Failed clips\n\nThese have no scores; every other number leaves them out.\n\n{items}"


def failures_html(results: Sequence[Mapping[str, Any]]) -> str:
    """report.html's "Failed clips" section, or ""."""
    lines = failure_lines(results)
    if not lines:
        return ""
    items = "".join(f"<li><b>{html.escape(engine)}</b>, {html.escape(clips)}: {html.escape(reason)}</li>"
                    for engine, clips, reason in lines)
    return f'<section id="failed-clips"><h2>Failed clips</h2><p>These have no scores; every other number leaves them out.</p><ul>{items}</ul></section>'


def exit_code(results: Sequence[Mapping[str, Any]], not_run: Mapping[str, str], named: Sequence[str], code: int) -> int:
    """``code`` (the writer's: 0, or 3 for a regression) unless it is 0 and
    something was left out: a failed clip, or an engine asked for by name
    (``named``) that did not run."""
    if code:
        return code
    failed = any(result.get("failures") for result in results)
    missing = any(name in not_run for name in named)
    return EXIT_INCOMPLETE if failed or missing else 0


def incomplete_line(results: Sequence[Mapping[str, Any]], not_run: Mapping[str, str], named: Sequence[str]) -> str:
    """The terminal's one line on why the run exits 4, or ""."""
    parts = [f"{result['engine']} failed on {result['failures']} clip{'s' if result['failures'] != 1 else ''}"
             for result in results if result.get("failures")]
    parts += [f"{name} did not run" for name in named if name in not_run]
    return f"exit code {EXIT_INCOMPLETE}: " + "; ".join(parts) + " (reasons in report.md)" if parts else ""
