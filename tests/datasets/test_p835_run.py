"""``benchmark.py --dataset p835-reference`` end to end, offline, on the
bundled set: the agreement table printed, human-agreement.json in the schema
of issue 41, report.md and report.html with the section and the scatters.

Lean by design (about 30 s on two cores): the first 26 clips (c0 to c4: the
sources, and MNRU at four Q values, so every dimension varies), DNSMOS P.835
and SI-SDR only. One run, shared by the assertions."""
from __future__ import annotations

import json

import pytest
from scipy import stats as scipy_stats

from nsbench.cli import main

pytestmark = pytest.mark.slow
ROW_KEYS = {"cell", "metric", "dimension", "level", "n", "pearson", "pearson_mapped", "spearman", "kendall", "rmse",
            "rmse_star", "outlier_ratio", "intervals"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("p835")
    capture = pytest.MonkeyPatch()
    capture.setenv("NSBENCH_CACHE", str(folder / "cache"))
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--dataset", "p835-reference", "--limit", "26", "--results-folder", str(folder / "results"),
                     "--metric", "dnsmos_sig", "--metric", "dnsmos_bak", "--metric", "dnsmos_ovrl", "--metric", "si_sdr"])
    capture.undo()
    (latest,) = [p for p in (folder / "results").iterdir() if p.is_dir() and not p.is_symlink()]
    return code, out.getvalue(), latest


def test_it_prints_the_agreement_table(run):
    code, printed, _ = run
    assert code == 0
    assert "agreement with the listeners (ITU-T P.1401" in printed
    assert "set=wb  dnsmos_bak   bak" in printed
    assert "references aligned: 275 samples at 16000 Hz (17.2 ms) on 20 files" in printed


def test_human_agreement_json_has_every_figure(run):
    _, _, folder = run
    payload = json.loads((folder / "human-agreement.json").read_text())
    rows = payload["human"]
    assert len(rows) == 4 * 3 * 2  # metrics x dimensions x levels
    assert all(ROW_KEYS <= row.keys() for row in rows)
    bak = next(r for r in rows if (r["metric"], r["dimension"], r["level"]) == ("dnsmos_bak", "bak", "file"))
    assert bak["n"] == 26 and len(bak["points"]["metric"]) == 26
    assert bak["spearman"] == pytest.approx(scipy_stats.spearmanr(bak["points"]["metric"], bak["points"]["rating"])[0], abs=1e-12)
    assert bak["spearman"] > 0  # DNSMOS BAK tracks the listeners' BAK, here too
    low, high = bak["intervals"]["spearman"]
    assert low < bak["spearman"] < high
    assert next(r for r in rows if r["level"] == "condition")["n"] == 5
    assert payload["rated_engine"] == "passthrough" and payload["not_rated"] == []


def test_reports_hold_the_section_and_scatters(run):
    _, _, folder = run
    assert "## Agreement with the listeners (ITU-T P.1401)" in (folder / "report.md").read_text()
    assert 'id="human-agreement"' in (folder / "report.html").read_text()
    assert (folder / "human-agreement-set-wb-file.png").stat().st_size > 1000
