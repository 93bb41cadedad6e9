"""Every score of every engine and metric on a demo subset equals the golden
table computed before the metric stage was sped up (issue 13), within the
tolerance per engine and metric that tests/helpers/golden_scores.py states and
justifies (issue 22).

The fast STOI/ESTOI, the shared reference features and the ESTOI noise taken
from one stream run the same floating-point operations in the same order as
before (tests/metrics/test_intelligibility.py checks them step by step against pystoi's own),
so on one machine the table is met to the last bit; across machines numpy,
OpenBLAS, onnxruntime and the engines' libraries choose their kernels by CPU,
hence the tolerances. An engine of the table that is not installed here is
left out; one that is, and is not in the table, is not checked.

To stay within the suite's time, the test takes three of the table's clips (a
noisy one, a music-only one, a clean-voice one) and leaves out DNSMOS, which
costs about a second per clip and engine and shares nothing with the metric
stage's changes; ``python tests/helpers/golden_scores.py`` recomputes the whole table.
"""
from __future__ import annotations

import copy
import json

import pytest

from tests.helpers import golden_scores

CLIP_INDICES = (0, 24, 25)  # white_snr-5_0, music-only_0, clean-voice_0
# DNSMOS and the speech-gated levels were added after the table was made (issue 24);
# tests/metrics/test_noref_panel.py holds them to their references. So were the
# papers' metrics (issue 39): tests/metrics/test_paper_metrics.py holds them to theirs.
LEFT_OUT = ("dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl", "dnsmos_p808", "vad_voice_level_db", "vad_attenuation_db",
            "ssnr", "fwsegsnr", "llr", "wss", "cd", "csig", "cbak", "covl", "lsd", "bss_sdr", "bss_sir", "bss_sar")


def load_golden() -> dict:
    golden = json.loads(golden_scores.GOLDEN_PATH.read_text())
    assert golden["dataset"] == golden_scores.DATASET
    return golden


@pytest.mark.slow
def test_every_score_is_the_golden_tables_within_its_tolerance():
    golden = load_golden()
    now = golden_scores.compute(CLIP_INDICES, LEFT_OUT)
    compared, found = 0, []
    for engine, clips in now["engines"].items():
        if engine not in golden["engines"]:
            continue
        for clip_id, record in clips.items():
            expected = golden["engines"][engine][clip_id]
            for part in ("scores", "undefined"):
                expected[part] = {name: value for name, value in expected[part].items() if name not in LEFT_OUT}
            found += golden_scores.mismatches(engine, clip_id, expected, record)
        compared += 1
    assert not found, "\n".join(found)
    assert compared >= 6  # the engines without optional packages at least


@pytest.mark.parametrize("engine, metric", [
    ("passthrough", "si_sdr"), ("speex", "stoi"), ("deepfilternet", "pesq_wb"),
    ("rnnoise", "si_sdri"), ("rnnoise", "dnsmos_ovrl"), ("nsnet2", "dnsmos_sig"),
])
def test_a_stored_value_moved_by_ten_tolerances_fails_and_by_half_of_one_passes(engine, metric):
    golden = load_golden()
    clip_id = "white_snr-5_0"
    expected = golden["engines"][engine][clip_id]
    wanted = expected["scores"][metric]
    allowed = golden_scores.tolerance(engine, metric, wanted)
    for factor, fails in ((10, True), (-10, True), (0.5, False), (-0.5, False)):
        moved = copy.deepcopy(expected)
        moved["scores"][metric] = wanted + factor * allowed
        found = golden_scores.mismatches(engine, clip_id, expected, moved)
        assert bool(found) == fails, (factor, found)
        if fails:
            assert len(found) == 1 and metric in found[0], found
    assert golden_scores.mismatches(engine, clip_id, expected, copy.deepcopy(expected)) == []


def test_the_tolerances_are_the_ones_the_module_states():
    """Pins the arithmetic of golden_scores.tolerance to its comments: a
    numpy-only engine gets 1e-9 relative plus 1e-9, rnnoise's si_sdri ten
    times the 4.6e-4 dB seen, deepfilternet's stoi ten times 1.9e-8."""
    assert golden_scores.tolerance("passthrough", "si_sdr", -5.0) == pytest.approx(6e-9, rel=1e-12)
    assert golden_scores.tolerance("rnnoise", "si_sdri", 10.9) == pytest.approx(4.6e-3, rel=1e-12)
    assert golden_scores.tolerance("deepfilternet", "stoi", 0.8) == pytest.approx(1.9e-7, rel=1e-12)
    assert golden_scores.tolerance("passthrough", "dnsmos_ovrl", 1.3) == pytest.approx(4.7e-6, rel=1e-12)


def test_a_changed_reason_or_a_missing_metric_fails():
    golden = load_golden()
    expected = golden["engines"]["rnnoise"]["music-only_0"]
    moved = copy.deepcopy(expected)
    moved["undefined"]["stoi"] = "another reason"
    assert any("undefined" in line for line in golden_scores.mismatches("rnnoise", "music-only_0", expected, moved))
    moved = copy.deepcopy(expected)
    moved["scores"].pop(next(iter(moved["scores"])))
    assert any("metrics" in line for line in golden_scores.mismatches("rnnoise", "music-only_0", expected, moved))
    moved = copy.deepcopy(expected)
    name = next(iter(moved["scores"]))
    moved["scores"][name] = float("nan")
    assert golden_scores.mismatches("rnnoise", "music-only_0", expected, moved)
