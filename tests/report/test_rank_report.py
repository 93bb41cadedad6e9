"""The plots' colours, the heat map's centre on a 1-5 score, and a run's
ranking from its records (nsbench.report.run_ranking), on hand-made records."""
from __future__ import annotations

import numpy as np

from nsbench.plugins.records import ClipRecord
from nsbench.plugins.specs import MetricSpec
from nsbench.report.html_report import heat_cell
from nsbench.report.plots import PALETTE
from nsbench.report.record_table import Pools, RecordTable
from nsbench.report.run_ranking import run_ranking


def cie76_lab(hexes):
    rgb = np.array([[int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)] for h in hexes])
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = linear @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    f = np.cbrt(np.maximum(xyz / np.array([0.95047, 1.0, 1.08883]), 0.008856))
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


def test_sixteen_engines_get_sixteen_clearly_different_colours():
    lab = cie76_lab(PALETTE)
    distances = np.sqrt(((lab[:, None] - lab[None]) ** 2).sum(-1))
    assert len(PALETTE) == 16
    assert distances[~np.eye(16, dtype=bool)].min() > 20  # CIE76: 2.3 is just noticeable


def test_the_heat_map_is_white_at_the_passthrough_s_value_not_at_zero():
    # DNSMOS OVRL 2.9 where the passthrough has 2.9: white, not deep blue.
    assert "rgb(255, 255, 255)" in heat_cell(2.9, 0.5, True, centre=2.9)
    assert "rgb(33, 102, 172)" in heat_cell(3.4, 0.5, True, centre=2.9)
    assert "rgb(178, 24, 43)" in heat_cell(2.4, 0.5, True, centre=2.9)


def spec(name, higher, category):
    return MetricSpec(name=name, func=lambda inputs: 0.0, unit="", higher_is_better=higher, description="", ignores="",
                      category=category)


def table(pools, engine, values):
    records = RecordTable(pools)
    for clip, (a, b) in enumerate(values):
        records.append(ClipRecord(engine=engine, clip_id=f"c{clip}", labels={}, scores={"good": a, "bad": b},
                                  duration=1.0, cpu_seconds=0.1, wall_seconds=0.1))
    return records


def result(engine, oracle=False):
    return {"engine": engine, "engine_info": {"oracle": oracle}}


def test_a_run_ranks_engines_and_the_input_never_the_oracle(view):
    rng = np.random.default_rng(0)
    pools = Pools()
    noise = rng.normal(0, 0.1, (60, 2))
    records = {
        "passthrough": table(pools, "passthrough", noise + [0.0, 1.0]),
        "strong": table(pools, "strong", noise + [2.0, 0.0]),
        "weak": table(pools, "weak", noise + [1.0, 0.5]),
        "oracle": table(pools, "oracle", noise + [9.0, -9.0]),
    }
    results = [result("passthrough"), result("strong"), result("weak"), result("oracle", oracle=True)]
    metrics = [spec("good", True, "a"), spec("bad", False, "b")]
    ranking = run_ranking(results, records, metrics, "good", resamples=200, view=view)
    rows = {row["system"]: row for row in ranking["systems"]}
    assert [row["system"] for row in ranking["systems"]] == ["strong", "weak", "passthrough"]
    assert rows["strong"]["overall_interval"] == [1, 1] and rows["strong"]["p_best"] == 1.0
    assert [o["system"] for o in ranking["oracles"]] == ["oracle"]
    assert ranking["settings"]["categories"] == {"a": ["good"], "b": ["bad"]}
    assert sum(row["p_best"] for row in ranking["systems"]) == 1.0
    # The user's categories replace the metrics' own: ranked on "bad" alone.
    alone = run_ranking(results, records, metrics, "good", {"bad": "mine"}, resamples=50, view=view)
    assert alone["settings"]["categories"] == {"mine": ["bad"]}


def test_one_system_is_not_a_ranking(view):
    pools = Pools()
    records = {"passthrough": table(pools, "passthrough", [(0.0, 1.0)] * 5)}
    assert run_ranking([result("passthrough")], records, [spec("good", True, "a")], "good", view=view) is None


def test_compare_names_an_engine_whose_rank_changed_and_whether_its_interval_holds_the_old_one(tmp_path):
    import json

    from nsbench.report.run_ranking import change_lines, rank_changes, stored_ranking

    settings = {"ties": "dense", "decimals": None, "categories": {"a": ["good"]}}
    (tmp_path / "ranking.json").write_text(json.dumps({"systems": [
        {"system": "x", "overall_rank": 1}, {"system": "y", "overall_rank": 2}, {"system": 3, "overall_rank": "bad"}],
        "settings": settings}))
    stored = stored_ranking(str(tmp_path))
    assert [row["system"] for row in stored["systems"]] == ["x", "y"]  # a malformed row is left out, not trusted
    now = {"systems": [{"system": "y", "overall_rank": 1, "overall_interval": [1, 1]},
                       {"system": "x", "overall_rank": 2, "overall_interval": [1, 2]}], "settings": settings}
    lines = change_lines(rank_changes(now, stored))
    assert lines == ["rank: y 2 -> 1", "rank: x 1 -> 2 (within its interval: not a clear change)"]
    (tmp_path / "empty").mkdir()
    assert stored_ranking(str(tmp_path / "empty")) is None
    (tmp_path / "ranking.json").write_text('{"systems": [], "settings": "not a mapping"}')
    assert rank_changes(now, stored_ranking(str(tmp_path))) == []


def test_a_partial_set_runs_what_is_here_and_names_the_rest(capsys):
    from nsbench import MetricSetSpec, UserError
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry

    registry = build_registry(get_plugin_manager())
    spec = MetricSetSpec(name="some", metrics=("stoi", "nisqa"), description="", partial=True)
    assert registry.partial_members(spec) == ("stoi",)
    assert "not available here: nisqa" in capsys.readouterr().err
    import pytest

    with pytest.raises(UserError, match="none of its metrics is available here"):
        registry.partial_members(MetricSetSpec(name="none", metrics=("nisqa",), description="", partial=True))
    assert set(registry.set_members("urgent")) <= {"dnsmos_ovrl", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "pesq_wb",
                                                    "estoi", "bss_sdr", "lsd", "wer"}
