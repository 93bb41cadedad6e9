"""Real-time factor: processing time over audio duration.

The run loop measures the times over the same boundary for every engine (model
loading excluded, resampling included): CPU time is user+sys of the process and
its children (psutil), wall time is perf_counter. These metrics only divide.
Below 1 the engine keeps up with real time on this machine.
"""
from __future__ import annotations

import math
from typing import Callable

from nsbench import ENHANCEMENT, SEPARATION, MetricInputs, MetricSpec, MetricUndefined, hookimpl
from nsbench import Column


def real_time_factor(seconds: float, duration: float) -> float:
    """Processing seconds per second of audio (Picovoice's RTF, REFERENCE section 1).

    Raises MetricUndefined when the time was not measured (NaN) or the clip is empty.
    """
    if math.isnan(seconds):
        raise MetricUndefined("processing time was not measured")
    if duration <= 0.0:
        raise MetricUndefined("empty clip: no duration to divide by")
    return float(seconds) / float(duration)


def rtf_cpu_metric(inputs: MetricInputs) -> float:
    return real_time_factor(inputs.cpu_seconds, inputs.duration)


def rtf_wall_metric(inputs: MetricInputs) -> float:
    return real_time_factor(inputs.wall_seconds, inputs.duration)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    register(MetricSpec(
        name="rtf_cpu",
        func=rtf_cpu_metric,
        unit="x realtime",
        higher_is_better=False,
        description=(
            "CPU seconds (user+sys of the process and its children) per second of audio; "
            "model loading excluded, resampling included"
        ),
        ignores="quality; waiting (sleep, I/O) and how many cores: every thread's CPU adds up",
        needs_voice=False,
        needs_reference=False,  # timings alone
        tasks=(ENHANCEMENT, SEPARATION),
        columns={"rtf_cpu": Column("RTF", 3, 100, plotted=False)},
    ))
    register(MetricSpec(
        name="rtf_wall",
        func=rtf_wall_metric,
        unit="x realtime",
        higher_is_better=False,
        description=(
            "Wall-clock seconds per second of audio (perf_counter around the engine call); "
            "model loading excluded, resampling included"
        ),
        ignores="quality; total CPU spent: a multithreaded engine looks cheaper, a busy machine slower",
        needs_voice=False,
        needs_reference=False,  # timings alone
        tasks=(ENHANCEMENT, SEPARATION),
    ))
