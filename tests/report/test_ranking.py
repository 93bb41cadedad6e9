"""The URGENT ranking rule (nsbench.ranking) on hand-made tables whose
ranks are worked out by hand in each test, and the bootstrap of the ranks
(nsbench.report.rank_bootstrap) on seeded per-clip scores."""
from __future__ import annotations

import numpy as np
import pytest

from nsbench import UserError, rank_table
from nsbench.report.rank_bootstrap import bootstrap_ranks
from nsbench.ranking import ranks


def by_system(result):
    return {row["system"]: row for row in result["systems"]}


def test_dense_and_min_ties_along_the_last_axis():
    values = np.array([[3.0, 2.0, 2.0, 1.0], [-np.inf, 5.0, -np.inf, 0.0]])
    assert ranks(values).tolist() == [[1, 2, 2, 3], [3, 1, 3, 2]]
    assert ranks(values, "min").tolist() == [[1, 2, 2, 4], [3, 1, 3, 2]]


# URGENT 2025's worked shape: two categories; lsd lower is better.
MEANS = {
    "noisy": {"dnsmos": 2.10, "pesq": 1.50, "lsd": 4.0},
    "a": {"dnsmos": 3.05, "pesq": 2.40, "lsd": 2.0},
    "b": {"dnsmos": 3.05, "pesq": 2.50, "lsd": 3.0},
    "c": {"dnsmos": 2.90, "pesq": 2.50, "lsd": 1.0},
}
DIRECTIONS = {"dnsmos": "higher", "pesq": "higher", "lsd": "lower"}
CATEGORIES = {"dnsmos": "non-intrusive", "pesq": "intrusive", "lsd": "intrusive"}


def test_the_rule_by_hand_with_dense_ties():
    result = rank_table(MEANS, DIRECTIONS, CATEGORIES)
    rows = by_system(result)
    # dnsmos: a, b tie at 1 (dense), c 2, noisy 3; pesq: b, c 1, a 2, noisy 3; lsd: c 1, a 2, b 3, noisy 4
    assert rows["a"]["metric_ranks"] == {"dnsmos": 1, "pesq": 2, "lsd": 2}
    assert rows["c"]["metric_ranks"] == {"dnsmos": 2, "pesq": 1, "lsd": 1}
    assert rows["c"]["category_ranks"] == {"non-intrusive": 2.0, "intrusive": 1.0}
    assert rows["b"]["category_ranks"] == {"non-intrusive": 1.0, "intrusive": 2.0}
    # overall: a (1 + 2) / 2 = 1.5, b 1.5, c 1.5, noisy 3.25: three share rank 1, noisy is 2
    assert [rows[s]["overall_score"] for s in ("a", "b", "c", "noisy")] == [1.5, 1.5, 1.5, 3.25]
    assert [rows[s]["overall_rank"] for s in ("a", "b", "c", "noisy")] == [1, 1, 1, 2]
    assert [row["system"] for row in result["systems"]] == ["a", "b", "c", "noisy"]
    assert result["settings"]["categories"] == {"non-intrusive": ["dnsmos"], "intrusive": ["pesq", "lsd"]}


def test_min_ties_skip_the_ranks_a_tie_takes():
    rows = by_system(rank_table(MEANS, DIRECTIONS, CATEGORIES, ties="min"))
    # dnsmos: a, b 1, c 3, noisy 4; pesq: b, c 1, a 3, noisy 4
    assert rows["c"]["metric_ranks"]["dnsmos"] == 3
    assert rows["a"]["metric_ranks"]["pesq"] == 3
    assert rows["noisy"]["metric_ranks"] == {"dnsmos": 4, "pesq": 4, "lsd": 4}
    assert rows["noisy"]["overall_rank"] == 4  # after three tied at 1


def test_rounding_before_ranking_makes_a_tie():
    means = {"x": {"m": 3.004}, "y": {"m": 3.001}, "z": {"m": 2.0}}
    exact = by_system(rank_table(means, {"m": "higher"}, {"m": "q"}))
    rounded = by_system(rank_table(means, {"m": "higher"}, {"m": "q"}, decimals=2))
    assert [exact[s]["overall_rank"] for s in "xyz"] == [1, 2, 3]
    assert [rounded[s]["overall_rank"] for s in "xyz"] == [1, 1, 2]


def test_a_missing_value_ranks_last_and_is_named():
    means = {"x": {"m": 1.0, "n": 5.0}, "y": {"m": 2.0}, "z": {"m": 3.0, "n": float("nan")}}
    rows = by_system(rank_table(means, {"m": "lower", "n": "higher"}, {"m": "c", "n": "c"}))
    assert rows["x"]["metric_ranks"] == {"m": 1, "n": 1}
    assert rows["y"]["metric_ranks"]["n"] == 2 and rows["z"]["metric_ranks"]["n"] == 2  # tied last
    assert rows["y"]["missing"] == ["n"] and "missing" not in rows["x"]


def test_a_metric_no_system_has_is_left_out():
    means = {"x": {"m": 1.0}, "y": {"m": 2.0}}
    result = rank_table(means, {"m": "higher", "gone": "higher"}, {"m": "c", "gone": "d"})
    assert result["settings"]["categories"] == {"c": ["m"]}
    assert by_system(result)["y"]["overall_rank"] == 1


def test_a_category_of_one_metric_weighs_as_much_as_a_category_of_three():
    means = {"x": {"a": 3, "b": 3, "c": 3, "w": 0.5}, "y": {"a": 2, "b": 2, "c": 2, "w": 0.1}}
    categories = {"a": "intrusive", "b": "intrusive", "c": "intrusive", "w": "downstream"}
    directions = {"a": "higher", "b": "higher", "c": "higher", "w": "lower"}
    rows = by_system(rank_table(means, directions, categories))
    # x wins three metrics, y the one: one category each, so 1.5 both and a tie
    assert rows["x"]["overall_score"] == rows["y"]["overall_score"] == 1.5
    assert rows["x"]["overall_rank"] == rows["y"]["overall_rank"] == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"ties": "average"}, "ties 'average'"),
    ({"decimals": -1}, "decimals -1"),
])
def test_bad_settings_say_what(kwargs, message):
    with pytest.raises(UserError, match=message):
        rank_table(MEANS, DIRECTIONS, CATEGORIES, **kwargs)


def test_a_bad_direction_says_which_metric():
    with pytest.raises(UserError, match="direction of pesq is 'up'"):
        rank_table(MEANS, {**DIRECTIONS, "pesq": "up"}, CATEGORIES)


# ---------------------------------------------------------------- the bootstrap

HIGHER = np.array([True, True, False])
CATEGORY_OF = np.array([0, 1, 1])


def clip_scores(clips: int, gaps=(0.0, 0.1, 0.2, 0.3), seed: int = 3) -> np.ndarray:
    """(clips, systems, 3 metrics): system i better by gaps[i] on every metric, noise 1."""
    rng = np.random.default_rng(seed)
    skill = np.array(gaps)[None, :, None] * np.where(HIGHER, 1, -1)
    return rng.normal(0, 1, (clips, 1, 3)) + skill + rng.normal(0, 1, (clips, len(gaps), 3))


def test_intervals_shrink_with_more_clips_and_hold_the_full_data_rank():
    few = bootstrap_ranks(clip_scores(40), HIGHER, CATEGORY_OF, 2, resamples=300)
    many = bootstrap_ranks(clip_scores(4000), HIGHER, CATEGORY_OF, 2, resamples=300)
    width = lambda found: (found.overall[:, 1] - found.overall[:, 0]).sum()
    assert width(many) < width(few)
    assert many.overall.tolist() == [[4, 4], [3, 3], [2, 2], [1, 1]]  # gaps of 0.1 over 4000 clips: certain
    for found in (few, many):
        assert np.all(found.overall[:, 0] <= found.overall[:, 1])
        assert np.all(found.categories[..., 0] <= found.categories[..., 1])


def test_a_known_winner_is_rank_1_in_1_1_with_p_best_1():
    found = bootstrap_ranks(clip_scores(200, gaps=(0.0, 0.1, 3.0)), HIGHER, CATEGORY_OF, 2, resamples=200)
    assert found.overall[2].tolist() == [1, 1]
    assert found.p_best.tolist() == pytest.approx([0.0, 0.0, 1.0], abs=1e-12)


def test_p_best_shares_ties_and_sums_to_one():
    scores = clip_scores(50, gaps=(0.0, 0.5, 0.5))
    scores[:, 2] = scores[:, 1]  # two identical systems tie in every resample
    found = bootstrap_ranks(scores, HIGHER, CATEGORY_OF, 2, resamples=200)
    assert found.p_best.sum() == pytest.approx(1.0, abs=1e-12)
    assert found.p_best[1] == pytest.approx(found.p_best[2], abs=1e-12)
    assert found.p_best[1] > 0.3


def test_the_bootstrap_is_seeded_and_paired():
    scores = clip_scores(100)
    first = bootstrap_ranks(scores, HIGHER, CATEGORY_OF, 2, resamples=100, seed=7)
    again = bootstrap_ranks(scores, HIGHER, CATEGORY_OF, 2, resamples=100, seed=7)
    assert first.p_best.tolist() == again.p_best.tolist()
    # Paired: a system better than another on every clip by a hair is always ranked above it.
    paired = np.repeat(np.random.default_rng(0).normal(0, 5, (100, 1, 3)), 2, axis=1)
    paired[:, 1] += 1e-3 * np.where(HIGHER, 1, -1)
    found = bootstrap_ranks(paired, HIGHER, CATEGORY_OF, 2, resamples=100)
    assert found.overall.tolist() == [[2, 2], [1, 1]]


def test_missing_clips_are_skipped_in_each_resample():
    scores = clip_scores(300, gaps=(0.0, 2.0))
    scores[::3, 1, :] = np.nan  # a third of the better system's clips failed
    found = bootstrap_ranks(scores, HIGHER, CATEGORY_OF, 2, resamples=100)
    assert found.overall.tolist() == [[2, 2], [1, 1]]
