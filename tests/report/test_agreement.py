"""The no-reference panel's agreement with the intrusive metrics
(nsbench.report.agreement): Spearman against scipy.stats.spearmanr, the pairing,
orientation, oracles and sign disagreements on hand-made records, and the
section in report.md, report.html and agreement.json of a real run."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from nsbench.report import agreement
from nsbench.plugins.records import ClipRecord
from nsbench.plugins.specs import MetricSpec

from tests.helpers.lazy import LazyModule

scipy_stats = LazyModule("scipy.stats", skip_if_missing=True)


@pytest.mark.parametrize("seed", range(8))
def test_spearman_equals_scipy_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    a = rng.standard_normal(n)
    b = 0.5 * a + rng.standard_normal(n)
    if seed % 2:  # ties on both sides
        a, b = np.round(a), np.round(2 * b) / 2
    expected = scipy_stats.spearmanr(a, b).statistic
    assert agreement.spearman(a, b) == pytest.approx(expected, abs=1e-12)


def test_average_ranks_equal_scipy_rankdata():
    values = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0])
    np.testing.assert_array_equal(agreement.average_ranks(values), scipy_stats.rankdata(values))


def test_spearman_of_a_constant_or_short_sample_is_nan():
    assert math.isnan(agreement.spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(agreement.spearman([1.0], [2.0]))
    assert agreement.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert agreement.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    with pytest.raises(ValueError, match="one length"):
        agreement.spearman([1, 2], [1, 2, 3])


def spec(name: str, needs_reference: bool, higher_is_better: bool = True, needs_voice: bool = True) -> MetricSpec:
    return MetricSpec(name=name, func=lambda inputs: 0.0, unit="", higher_is_better=higher_is_better, description="",
                      ignores="", needs_reference=needs_reference, needs_voice=needs_voice)


def records(engine: str, judge: list[float], intrusive: list[float], wer: list[float] | None = None) -> list[ClipRecord]:
    rows = []
    for index, (a, b) in enumerate(zip(judge, intrusive)):
        scores = {"mos": a, "gain": b, "rtf": 0.1}
        if wer is not None:
            scores["wer"] = wer[index]
        rows.append(ClipRecord(engine=engine, clip_id=f"c{index}", labels={}, scores=scores))
    return rows


METRICS = [spec("mos", False), spec("gain", True), spec("wer", True, higher_is_better=False), spec("rtf", False, False, needs_voice=False)]


def test_pairs_ranks_orientation_oracles_and_sign_disagreements():
    runs = {
        "passthrough": records("passthrough", [2.0, 2.0, 2.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]),
        # better on both
        "good": records("good", [3.0, 3.2, 3.1], [5.0, 6.0, 4.0], [0.2, 0.3, 0.1]),
        # the judge likes it, the intrusive metric does not: a sign disagreement
        "muffler": records("muffler", [2.5, 2.6, 2.4], [-1.0, -2.0, -3.0], [0.7, 0.8, 0.9]),
        "best": records("best", [4.0, 4.1, 3.9], [9.0, 8.0, 10.0], [0.05, 0.0, 0.1]),
        # an oracle that would break the ranking if it counted
        "oracle-x": records("oracle-x", [1.0, 1.0, 1.0], [30.0, 30.0, 30.0], [0.0, 0.0, 0.0]),
    }
    found = agreement.panel_agreement(runs, METRICS, oracles=["oracle-x"], baseline="passthrough")
    assert found["oracles_left_out"] == ["oracle-x"] and found["baseline"] == "passthrough"
    # rtf judges no audio: no pair; mos against each intrusive metric.
    by_pair = {(row["no_reference"], row["intrusive"]): row for row in found["pairs"]}
    assert set(by_pair) == {("mos", "gain"), ("mos", "wer")}
    gain = by_pair["mos", "gain"]
    # Means over engines: mos 2.0, 3.1, 2.5, 4.0; gain 0, 5, -2, 9: ranks 1 3 2 4 and 2 3 1 4.
    assert gain["engines"] == 4
    assert gain["engines_rho"] == pytest.approx(scipy_stats.spearmanr([2.0, 3.1, 2.5, 4.0], [0, 5, -2, 9]).statistic)
    clips_mos = [2.0] * 3 + [3.0, 3.2, 3.1] + [2.5, 2.6, 2.4] + [4.0, 4.1, 3.9]
    clips_gain = [0.0] * 3 + [5.0, 6.0, 4.0] + [-1.0, -2.0, -3.0] + [9.0, 8.0, 10.0]
    assert gain["clip_pairs"] == 12
    assert gain["clips_rho"] == pytest.approx(scipy_stats.spearmanr(clips_mos, clips_gain).statistic)
    assert [item["engine"] for item in gain["disagree_in_sign"]] == ["muffler"]
    assert gain["disagree_in_sign"][0]["mos"] == pytest.approx(0.5) and gain["disagree_in_sign"][0]["gain"] == pytest.approx(-2.0)
    # WER is lower-is-better: the reverse order is agreement, so the figure is positive.
    wer = by_pair["mos", "wer"]
    raw = scipy_stats.spearmanr([2.0, 3.1, 2.5, 4.0], [0.5, 0.2, 0.8, 0.05]).statistic
    assert raw < 0 and wer["engines_rho"] == pytest.approx(-raw)
    assert [item["engine"] for item in wer["disagree_in_sign"]] == ["muffler"]
    assert wer["disagree_in_sign"][0]["wer"] == pytest.approx(-0.3)  # oriented: worse is negative


def test_two_engines_give_no_rank_correlation_and_no_pair_gives_nothing():
    runs = {"passthrough": records("passthrough", [2.0, 2.1, 2.2], [0.0, 0.1, 0.2]),
            "good": records("good", [3.0, 3.2, 3.1], [5.0, 6.0, 4.0])}
    [row] = agreement.panel_agreement(runs, METRICS)["pairs"]  # no wer in these records: one pair
    assert math.isnan(row["engines_rho"]) and row["engines"] == 2
    assert "n/a (2 engines)" in agreement.agreement_markdown(agreement.panel_agreement(runs, METRICS))
    assert agreement.panel_agreement(runs, [spec("gain", True)]) == {}
    assert agreement.agreement_markdown({}) == ""


@pytest.mark.slow
def test_a_run_with_dnsmos_and_intrusive_metrics_reports_their_agreement(tmp_path, monkeypatch):
    pytest.importorskip("speechmos")
    from nsbench.cli import main
    from tests.run.test_no_reference import write_set

    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache"))
    names = ["a.wav", "b.wav", "c.wav"]
    root = write_set(tmp_path / "mine", names, clean_names=names)
    results = tmp_path / "results"
    # --jobs 1: one DNSMOS session in this process for all 12 clips, not one per worker in each
    # engine's pool; DNSMOS in workers is tests/run/test_no_reference.py's noisy-only run.
    argv = ["--dataset", "folder", "--data-folder", str(root), "--results-folder", str(results), "--quiet", "--no-plots",
            "--engine", "speex", "--engine", "webrtc", "--engine", "oracle-irm",
            "--metric", "dnsmos_ovrl", "--metric", "si_sdri", "--metric", "stoi", "--jobs", "1"]
    assert main(argv) == 0
    folder = results / "folder"
    found = json.loads((folder / "agreement.json").read_text())
    assert found["oracles_left_out"] == ["oracle-irm"]
    pairs = {(row["no_reference"], row["intrusive"]): row for row in found["pairs"]}
    assert set(pairs) == {("dnsmos_ovrl", "si_sdri"), ("dnsmos_ovrl", "stoi")}
    # Recompute the rank correlation over the three engines from the clip lines.
    lines = {engine: [json.loads(line) for line in (folder / f"{engine}.clips.jsonl").read_text().splitlines()]
             for engine in ("passthrough", "speex", "webrtc")}
    means = {engine: [np.mean([line["scores"][m] for line in rows]) for m in ("dnsmos_ovrl", "stoi")]
             for engine, rows in lines.items()}
    expected = scipy_stats.spearmanr(*zip(*means.values())).statistic
    assert pairs["dnsmos_ovrl", "stoi"]["engines"] == 3
    assert pairs["dnsmos_ovrl", "stoi"]["engines_rho"] == pytest.approx(expected, abs=1e-9)
    assert pairs["dnsmos_ovrl", "stoi"]["clip_pairs"] == 9
    report = (folder / "report.md").read_text()
    assert "## How far the no-reference metrics agree" in report and "(3 engines)" in report
    assert "How far the no-reference metrics agree" in (folder / "report.html").read_text()
