"""The reports' paragraph on a set whose clips lack a clean reference, from
the ``reference_use`` every ``<engine>.json`` holds (made by the run's plan,
nsbench.run.no_reference.reference_use): report.md, report.html and the
terminal print it alike.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence


def reference_text(use: Mapping[str, Any] | None) -> str:
    """One paragraph for the reports, or "" on a set where every clip has a reference."""
    if not use or not use.get("clips_without_reference"):
        return ""
    missing, clips = use["clips_without_reference"], use["clips"]
    scope = "No clip has a clean reference." if missing == clips else f"{missing} of {clips} clips have no clean reference."
    used = ", ".join(use["metrics_without_reference"]) or "none"
    text = (f"{scope} Metrics this set could use there "
            f"(they judge the output alone, or against the input): {used}.")
    if use["metrics_needing_reference"]:
        where = "on the clips that have one" if missing < clips else "nowhere"
        text += (f" Metrics that need the reference, scored {where} (skipped, not failed, elsewhere): "
                 f"{', '.join(use['metrics_needing_reference'])}.")
    return text + " Checks without a reference: identity and silence against the input; lag: not checked."


def results_text(results: Sequence[Mapping[str, Any]]) -> str:
    """reference_text of a run's results (every engine's JSON holds the same ``reference_use``)."""
    return reference_text(next((r["reference_use"] for r in results if r.get("reference_use")), None))


def intrusive_scored(results: Sequence[Mapping[str, Any]]) -> bool:
    """Whether some clip had a reference, so the intrusive metrics (SI-SDR) ran: the
    reports explain them only then."""
    use = next((r["reference_use"] for r in results if r.get("reference_use")), None)
    return not use or use.get("clips_without_reference", 0) < use.get("clips", 0)
