"""The real-time factors (nsbench.builtin.metrics.realtime)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from nsbench.plugins.errors import MetricUndefined

from tests.helpers.metric_signals import SR, inputs

realtime = importlib.import_module("nsbench.builtin.metrics.realtime")


def test_realtime_divides():
    x = inputs(np.zeros(4 * SR), np.zeros(4 * SR), np.zeros(4 * SR), cpu_seconds=0.5, wall_seconds=1.0)
    assert realtime.rtf_cpu_metric(x) == 0.125
    assert realtime.rtf_wall_metric(x) == 0.25
    with pytest.raises(MetricUndefined, match="not measured"):
        realtime.rtf_cpu_metric(inputs(np.zeros(SR), np.zeros(SR), np.zeros(SR)))
