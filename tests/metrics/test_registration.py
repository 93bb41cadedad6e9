"""The optional metrics (pesq, dnsmos): registered with their requirements and
not by default; listed unavailable with their install line when missing."""
from __future__ import annotations

import dataclasses
import importlib
import sys

import pytest

from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.errors import UserError

pesq_metric = importlib.import_module("nsbench.builtin.metrics.pesq_metric")
dnsmos = importlib.import_module("nsbench.builtin.metrics.dnsmos")


NAMES = ("pesq_wb", "pesq_nb", "dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl")


def test_registered_with_requirements_and_not_default():
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    for name in NAMES:
        spec = registry.metrics.get(name).spec
        assert spec.higher_is_better and spec.needs_voice and not spec.default, name
        assert spec.unit and spec.description and spec.ignores, name
    assert registry.metrics.get("pesq_wb").spec.requires == ("pesq",)
    assert registry.metrics.get("dnsmos_bak").spec.requires == ("speechmos", "onnxruntime")
    assert "non-personalised" in registry.metrics.get("dnsmos_ovrl").spec.description


def test_a_missing_package_makes_the_metric_unavailable_with_its_install_line():
    real = build_registry(get_plugin_manager(load_entry_points=False)).metrics

    class Ghosts:
        """Copies of the real specs that also need a module that is not installed."""

        @hookimpl
        def register_metrics(self, register):
            for name in ("pesq_wb", "dnsmos_sig"):
                spec = real.get(name).spec
                register(dataclasses.replace(spec, name=f"{name}_ghost", requires=(*spec.requires, "no_such_module")))

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(Ghosts())
    metrics = build_registry(manager).metrics
    for name, install in (("pesq_wb_ghost", pesq_metric.INSTALL), ("dnsmos_sig_ghost", dnsmos.INSTALL)):
        record = metrics.get(name)
        assert not record.available and record.missing_modules == ["no_such_module"] and record.version == ""
        with pytest.raises(UserError, match=rf"metric '{name}' is unavailable: missing no_such_module\. Install: ") as info:
            metrics.require_available(name)
        assert str(info.value).endswith(f"Install: {install}")
    assert metrics.get("si_sdr").available  # nothing else is affected


# ----------------------------------------------------------------- the papers' metrics and their set

PAPER = ("ssnr", "fwsegsnr", "llr", "wss", "cd", "csig", "cbak", "covl", "lsd", "bss_sdr", "bss_sir", "bss_sar")


def test_the_paper_metrics_are_opt_in_so_the_default_run_does_not_change():
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    for name in PAPER:
        spec = registry.metrics.get(name).spec
        assert not spec.default and spec.description and spec.ignores, name
    assert [registry.metrics.get(n).spec.higher_is_better for n in ("llr", "wss", "cd", "lsd")] == [False] * 4
    assert registry.metric_names(["vbd-row", "stoi", "lsd"]) == ["pesq_wb", "csig", "cbak", "covl", "ssnr", "stoi", "lsd"]


def test_a_set_named_without_its_packages_is_one_line_naming_the_install(monkeypatch, capsys):
    """No machine here lacks pesq, so Python's own import block stands in for
    one: a None in sys.modules makes find_spec fail as for a missing package."""
    from nsbench.cli import main

    monkeypatch.setitem(sys.modules, "pesq", None)
    assert main(["--metric", "vbd-row", "--engine", "passthrough", "--limit", "1", "--quiet"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == ("nsbench: error: metric set 'vbd-row' needs pesq_wb, csig, cbak, covl, unavailable: missing pesq. "
                    f"Install: {pesq_metric.INSTALL}")


def test_a_set_may_not_take_a_metrics_name_and_needs_a_title_per_metric():
    from nsbench import MetricSetSpec

    for spec, message in ((MetricSetSpec("stoi", ("stoi",), "a set named like a metric"), "the name of a metric"),
                          (MetricSetSpec("pair", ("stoi", "si_sdr"), "d", columns=("STOI",)), "2 metrics but 1 column titles")):
        class Plugin:
            @hookimpl
            def register_metric_sets(self, register):
                register(spec)

        manager = get_plugin_manager(load_entry_points=False)
        manager.register(Plugin())
        with pytest.raises(UserError, match=message):
            build_registry(manager)
