"""The reports place engines and metrics by their specs' fields (nsbench.report.layout),
not by name: a plugin's engine that passes its input through is listed first,
a plugin's metric with a Column gets one, in its order."""
from __future__ import annotations

from types import SimpleNamespace

from nsbench.plugins.specs import Column, EngineSpec, MetricSpec
from nsbench.report import layout


def engine(name: str, **fields) -> SimpleNamespace:
    return SimpleNamespace(spec=EngineSpec(name=name, factory=lambda options: None, description="", sample_rate=None, delay=0, **fields))


def metric(name: str, **fields) -> SimpleNamespace:
    return SimpleNamespace(spec=MetricSpec(name=name, func=lambda inputs: 0.0, unit="", higher_is_better=True, description="",
                                           ignores="", **fields))


def test_the_specs_fields_place_engines_and_metrics():
    registry = SimpleNamespace(
        engines=[engine("mine"), engine("copy", passes_input_through=True), engine("other", baseline=True)],
        metrics=[metric("late", columns={"late": Column("Late", 1, 20)}), metric("gain", headline_by_default=True,
                 columns={"gain": Column("Gain", 2, 10, plotted=False)}), metric("side", beside_headline=True)],
    )
    view = layout.read_view(registry)
    assert [r["engine"] for r in view.reference_first([{"engine": "mine"}, {"engine": "other"}, {"engine": "copy"}])] \
        == ["copy", "mine", "other"]
    assert view.reference_engine() == "copy" and not view.passes_input_through("other")  # baseline is not enough
    assert view.table_columns() == (("gain", "Gain", 2), ("late", "Late", 1))
    assert view.plotted == ("late",)
    assert view.beside_headline == ("side",)
    assert view.headline("") == "gain" and view.headline("late") == "late"
    # Nothing is kept: the installed plugins' view is their own, whatever was read before.
    installed = layout.installed_view()
    assert installed.reference_engine() == "passthrough" and installed.default_headline == "si_sdri"


def test_the_view_is_frozen_and_travels_in_the_plan():
    """What the reports read of the specs is a value of the run's plan, not a module's state."""
    import dataclasses

    import pytest

    from nsbench.session.plan import RunPlan

    assert RunPlan.__dataclass_fields__["view"].type in ("View", layout.View)
    with pytest.raises(dataclasses.FrozenInstanceError):
        layout.installed_view().columns = ()  # type: ignore[misc]
