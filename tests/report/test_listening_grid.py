"""Which clips the listening grid chooses (nsbench.report.listening_grid)."""
from __future__ import annotations

from nsbench.report import listening_grid
from nsbench.plugins.records import ClipRecord


def record(engine: str, clip: str, value: float | None, noise: str = "white", flags: tuple[str, ...] = ()) -> ClipRecord:
    scores = {} if value is None else {"si_sdri": value}
    return ClipRecord(engine=engine, clip_id=clip, labels={"noise": noise}, scores=scores, flags=list(flags))


def grid_inputs(values: dict[str, dict[str, float]], flags: dict[tuple[str, str], tuple[str, ...]] = {}):
    """Records and results as a run makes them: ``values[engine][clip]``; babble for clips named b*."""
    records = {
        engine: [record(engine, clip, value, "babble" if clip.startswith("b") else "white", flags.get((engine, clip), ()))
                 for clip, value in by_clip.items()]
        for engine, by_clip in values.items()
    }
    results = []
    for engine, engine_records in records.items():
        cells = {}
        for r in engine_records:
            cells.setdefault(r.labels["noise"], []).append(r.scores["si_sdri"])
        worst = min(cells, key=lambda cell: sum(cells[cell]) / len(cells[cell]))
        raised = {}
        for r in engine_records:
            for name in r.flags:
                raised.setdefault(name, {"clips": [], "description": name})["clips"].append(r.run_id)
        results.append({"engine": engine, "worst_cell": {"cell": {"noise": worst}}, "flags": raised})
    return results, records


def test_the_grid_holds_each_engines_worst_its_worst_cell_flags_and_typical_clips(view):
    base = {**{f"w{i}": float(i) for i in range(6)}, "b0": -1.0, "b1": -0.5, "b2": 0.0, "b3": 0.2}
    clips = list(base)
    values = {
        "passthrough": {clip: 0.0 for clip in clips},
        "alpha": {**base, "w3": -9.0},  # worst overall: w3; worst cell: babble (mean -0.33), where b0 is lowest
        "beta": {**base, "w5": -4.0},  # worst: w5
    }
    results, records = grid_inputs(values, flags={("beta", "b3"): ("silent",)})
    chosen = listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=True, view=view)
    assert chosen["w3"] == ["worst of alpha"]
    assert chosen["w5"] == ["worst of beta"]
    assert chosen["b0"] == ["worst in alpha's worst cell (noise=babble)", "worst in beta's worst cell (noise=babble)"]
    assert chosen["b3"] == ["beta: silent"]
    typical = [clip for clip, why in chosen.items() if why == ["typical (near the median over engines)"]]
    assert len(typical) == listening_grid.TYPICAL_ROWS
    assert list(chosen)[:4] == ["w3", "w5", "b0", "b3"]  # the order of interest, worst first
    # The passthrough is no one's "worst" (every clip is 0 for it).
    assert not any("passthrough" in why for reasons in chosen.values() for why in reasons)


def test_the_grid_is_bounded_and_has_at_least_four_rows_where_the_set_has_them(view):
    many = {f"c{i:02d}": float(i) for i in range(40)}
    engines = {f"e{k}": {clip: value + (-50 if clip == f"c{k + 10:02d}" else 0) for clip, value in many.items()} for k in range(12)}
    results, records = grid_inputs(engines)
    chosen = listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=True, limit=10, view=view)
    assert len(chosen) == 10 and sum(why == ["typical (near the median over engines)"] for why in chosen.values()) == 2
    few = {"e": {"c0": 1.0, "c1": 2.0, "c2": 3.0, "c3": 4.0, "c4": 5.0, "c5": 6.0}}
    results, records = grid_inputs(few)
    assert len(listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=True, view=view)) >= listening_grid.MIN_ROWS


def test_lower_is_better_headlines_pick_the_highest_as_worst(view):
    values = {"e": {"w0": 1.0, "w1": 9.0, "w2": 5.0, "w3": 4.0, "w4": 3.0}}
    results, records = grid_inputs(values)
    chosen = listening_grid.choose_clips(results, records, "si_sdri", higher_is_better=False, view=view)
    assert chosen["w1"][0] == "worst of e"
