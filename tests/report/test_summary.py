"""Aggregation on hand-computed numbers: per cell, worst cell, seeds, bootstrap."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nsbench.report.summary import bootstrap_median_ci, describe, summarise
from nsbench.plugins.records import ClipRecord
from nsbench.plugins.specs import MetricSpec


def metric(name: str = "si_sdri", higher: bool = True) -> MetricSpec:
    return MetricSpec(name=name, func=lambda inputs: 0.0, unit="dB", higher_is_better=higher, description="", ignores="")


def record(clip: str, value: float | None, cell: str = "a", seed: int | None = None) -> ClipRecord:
    outcome = {"error": "broken"} if value is None else {"scores": {"si_sdri": value}}
    return ClipRecord(engine="e", clip_id=clip, labels={"cell": cell}, seed=seed, duration=1.0, cpu_seconds=0.1, wall_seconds=0.2,
                      **outcome)


def test_describe_mean_median_mad():
    assert describe([1.0, 2.0, 4.0, 10.0]) == {"n": 4, "mean": 4.25, "median": 3.0, "mad": 1.5}


def test_cells_worst_cell_and_failures():
    records = [record("x1", 1.0, "a"), record("x2", 3.0, "a"), record("y1", -2.0, "b"), record("y2", None, "b")]
    summary = summarise(records, [metric()], ["cell"])
    cells = {row["cell"]["cell"]: row for row in summary["cells"]}
    assert cells["a"]["metrics"]["si_sdri"]["mean"] == 2.0
    assert cells["b"]["clips"] == 2 and cells["b"]["failures"] == 1 and cells["b"]["metrics"]["si_sdri"]["n"] == 1
    assert summary["worst_cell"] == {"metric": "si_sdri", "cell": {"cell": "b"}, "mean": -2.0}
    assert summary["failed_clips"] == [{"clip_id": "y2", "error": "broken"}]
    assert summary["rtf"] == pytest.approx(0.1) and summary["rtf_wall"] == pytest.approx(0.2)


def test_seeds_mean_per_clip_then_median_and_mad_over_clips():
    # Seed card aggregation: per clip mean over seeds, then median/MAD over clips.
    values = {"c1": [1.0, 3.0], "c2": [10.0, 20.0], "c3": [4.0, 4.0]}
    records = [record(clip, v, seed=s) for clip, vs in values.items() for s, v in enumerate(vs)]
    stats = summarise(records, [metric()], ["cell"])["metrics"]["si_sdri"]
    # Clip means: 2, 15, 4 -> median 4, MAD median(|2-4|, |15-4|, |4-4|) = 2.
    assert (stats["n"], stats["median"], stats["mad"]) == (3, 4.0, 2.0)
    assert stats["mean"] == pytest.approx(7.0)
    pooled = stats["pooled"]
    # Pooled rows 1, 3, 10, 20, 4, 4 -> median 4, MAD median(3, 1, 6, 16, 0, 0) = 2.
    assert (pooled["n"], pooled["median"], pooled["mad"]) == (6, 4.0, 2.0)
    low, high = pooled["median_ci95"]
    assert low <= 4.0 <= high


def test_bootstrap_ci_of_the_median_covers_the_true_median_about_95_percent():
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(200):
        sample = rng.normal(5.0, 2.0, size=60)
        low, high = bootstrap_median_ci(sample)
        covered += low <= 5.0 <= high
    assert 0.88 <= covered / 200 <= 0.99


def test_pooled_cells_and_the_headline_metric():
    records = [record("a", 1.0, "1"), record("b", 2.0, "2"), record("c", 6.0, "3"), record("d", -8.0, "x")]
    summary = summarise(records, [metric()], ["cell"], headline="si_sdri", pooled_cells={"2-3": ("2", "3")})
    pooled = summary["cells"][-1]
    assert pooled["cell"] == {"cell": "2-3"} and pooled["pooled"] and pooled["clips"] == 2
    assert pooled["metrics"]["si_sdri"]["mean"] == 4.0
    assert summary["worst_cell"]["cell"] == {"cell": "x"}
    # A pooled row is never the worst cell, even when it is the lowest.
    low = summarise([record("a", 5.0, "1"), record("b", -1.0, "2"), record("c", -3.0, "3")], [metric()], ["cell"],
                    pooled_cells={"2-3": ("2", "3")})
    assert low["worst_cell"]["cell"] == {"cell": "3"}


def test_bootstrap_draws_resample_i_from_randomstate_i():
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    medians = sorted(np.median(np.asarray(values)[np.random.RandomState(i).randint(0, 8, 8)]) for i in range(1000))
    assert bootstrap_median_ci(values) == [np.percentile(medians, 2.5), np.percentile(medians, 97.5)]


def test_bootstrap_ci_of_the_mean_covers_the_true_mean_about_95_percent():
    from nsbench.report.summary import bootstrap_ci

    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(200):
        sample = rng.normal(5.0, 2.0, size=60)
        low, high = bootstrap_ci(sample, np.mean)
        covered += low <= 5.0 <= high
    assert 0.88 <= covered / 200 <= 0.99


def test_every_stats_block_has_its_tails_and_seeded_intervals():
    records = [record(f"c{i}", float(i)) for i in range(20)]
    stats = summarise(records, [metric()], ["cell"])["metrics"]["si_sdri"]
    assert stats["p5"] == pytest.approx(np.percentile(range(20), 5)) and stats["p95"] == pytest.approx(np.percentile(range(20), 95))
    low, high = stats["mean_ci95"]
    assert low < 9.5 < high and stats["median_ci95"][0] < 9.5 < stats["median_ci95"][1]
    assert summarise(records, [metric()], ["cell"])["metrics"]["si_sdri"] == stats  # deterministic


def paired(ours, theirs, higher=True):
    from nsbench.report.baselines import compare_with_baselines

    engine = [record(f"c{i}", v, cell="a" if i < 3 else "b") for i, v in enumerate(ours)]
    baseline = [dataclasses.replace(record(f"c{i}", v, cell="a" if i < 3 else "b"), engine="passthrough") for i, v in enumerate(theirs)]
    return compare_with_baselines({"passthrough": baseline, "e": engine}, [metric(higher=higher)], ["cell"], ["passthrough"])["e"]["passthrough"]["si_sdri"]


def test_identical_engines_are_not_distinguishable():
    values = list(np.random.default_rng(3).normal(0, 3, 20))
    result = paired(values, values)
    assert result["all"]["verdict"] == "not distinguishable" and result["all"]["p_value"] == 1.0
    assert [cell["verdict"] for cell in result["cells"]] == ["not distinguishable"] * 2


def test_a_consistent_difference_is_better_or_worse_by_direction_and_small_cells_never_rank():
    base = list(np.random.default_rng(4).normal(0, 3, 20))
    better = [v + 1.0 + 0.1 * i for i, v in enumerate(base)]
    result = paired(better, base)
    assert result["all"]["verdict"] == "better" and result["all"]["n"] == 20 and result["all"]["p_value"] < 0.001
    # Three clips in cell "a": Wilcoxon cannot reach 5% with fewer than 6 pairs.
    assert result["cells"][0]["n"] == 3 and result["cells"][0]["verdict"] == "not distinguishable"
    assert result["cells"][1]["verdict"] == "better"
    assert paired(better, base, higher=False)["all"]["verdict"] == "worse"
    # Noise around zero: not distinguishable.
    jitter = [v + d for v, d in zip(base, np.random.default_rng(5).normal(0, 0.01, 20))]
    assert paired(jitter, base)["all"]["verdict"] == "not distinguishable"


def test_a_single_clip_has_no_confidence_interval():
    # Every resample of one value is that value: a [v, v] interval would claim certainty.
    stats = summarise([record("only", 2.5)], [metric()], ["cell"])["metrics"]["si_sdri"]
    assert np.isnan(stats["mean_ci95"]).all() and np.isnan(stats["median_ci95"]).all()
    assert stats["p5"] == stats["p95"] == 2.5
    two = summarise([record("a", 1.0), record("b", 3.0)], [metric()], ["cell"])["metrics"]["si_sdri"]
    assert two["mean_ci95"] == [1.0, 3.0]


def test_the_reported_intervals_cover_the_true_mean_and_median_about_95_percent():
    # The intervals in the JSON and the tables come from uncertainty(), not bootstrap_ci: test those.
    from nsbench.report.summary import uncertainty

    rng = np.random.default_rng(6)
    covered = np.zeros(2)
    for _ in range(300):
        block = uncertainty({"m": list(rng.normal(5.0, 2.0, size=30))})["m"]
        covered += [block["mean_ci95"][0] <= 5.0 <= block["mean_ci95"][1], block["median_ci95"][0] <= 5.0 <= block["median_ci95"][1]]
    assert all(0.88 <= share <= 0.99 for share in covered / 300), covered / 300


def pooled_record(clip: str, pairs: list[float], sources: str, condition: str, seed: int | None = None) -> ClipRecord:
    """A clip of a metric pooled over pairs, recorded as the run loop records it."""
    return ClipRecord(engine="e", clip_id=clip, labels={"sources": sources, "condition": condition}, seed=seed,
                      scores={"pairs_metric": float(np.mean(pairs)), "plain": float(len(pairs))},
                      pooled={"pairs_metric": {"count": len(pairs), "variance": float(np.var(pairs))}})


def test_a_pooled_metric_pools_items_within_every_cell_key_and_seeds_pool_their_items():
    from nsbench.plugins.specs import Pooling

    pooled_metric = MetricSpec(name="pairs_metric", func=lambda inputs: 0.0, unit="dB", higher_is_better=True, description="",
                               ignores="", pooling=Pooling(items="pairs", description="pooled over pairs"))
    clips = {  # clip -> (pairs, sources, condition)
        "a": ([1.0, 2.0], "2", "clean"), "b": ([10.0, 11.0, 12.0], "3", "clean"), "c": ([4.0], "2", "clean"),
        "d": ([-5.0, -6.0], "2", "mp3"), "e": ([7.0, 8.0, 9.0, 30.0], "4", "mp3"),
    }
    records = [pooled_record(clip, pairs, sources, condition) for clip, (pairs, sources, condition) in clips.items()]
    summary = summarise(records, [pooled_metric, metric("plain")], ["sources", "condition"], headline="pairs_metric",
                        pooled_cells={"2-4": ("2", "3", "4")})
    rows = {tuple(row["cell"].values()): row for row in summary["cells"]}
    # Each pooled row stays within its condition: never across.
    assert [key for key in rows if key[0] == "2-4"] == [("2-4", "clean"), ("2-4", "mp3")]
    for condition in ("clean", "mp3"):
        items = [v for pairs, _, c in clips.values() if c == condition for v in pairs]
        stats = rows[("2-4", condition)]["metrics"]["pairs_metric"]
        assert stats["mean"] == pytest.approx(np.mean(items), abs=1e-12) and stats["std"] == pytest.approx(np.std(items), abs=1e-12)
        assert stats["pairs"] == len(items) and stats["n"] == sum(c == condition for _, _, c in clips.values())
        assert stats["clip_mean"] == pytest.approx(np.mean([np.mean(p) for p, _, c in clips.values() if c == condition]))
        # A metric without a Pooling: the plain mean over clips.
        plain = rows[("2-4", condition)]["metrics"]["plain"]
        assert plain["mean"] == pytest.approx(np.mean([len(p) for p, _, c in clips.values() if c == condition])) and "std" not in plain
    two_clean = rows[("2", "clean")]["metrics"]["pairs_metric"]
    assert two_clean["mean"] == pytest.approx(7 / 3) and two_clean["clip_mean"] == pytest.approx(2.75)
    # Seeds: every (clip, seed) row's items pool; the clip still counts once in n.
    seeded = [pooled_record("a", [1.0, 2.0], "2", "clean", seed=0), pooled_record("a", [3.0], "2", "clean", seed=1)]
    stats = summarise(seeded, [pooled_metric], ["sources"])["metrics"]["pairs_metric"]
    assert (stats["n"], stats["pairs"], stats["mean"]) == (1, 3, pytest.approx(2.0))
    assert stats["std"] == pytest.approx(np.std([1.0, 2.0, 3.0]))
