"""The paper metrics against their reference code's own values.

tests/programs/make_paper_metrics_expected.py ran CMGAN's compute_metrics.py,
pysepm's qualityMeasures.py, URGENT 2025's lsd_metric and fast_bss_eval on
the audio of tests/helpers/paper_cases.py (the repository's recordings mixed
at VoiceBank-DEMAND's SNRs, as they are and through Speex and WebRTC) and
stored the values with the commits it used. Every value here is within 1e-6
relative of the reference's (measured: 5e-11 for LLR, ~1e-13 or exact for the
rest), except where the reference has none: a clean voice that starts in
digital silence leaves frames without an LPC model, the references' LLR is
NaN there, and their CSIG and COVL read 1.0 (Python's and MATLAB's
``max(1, NaN)``); nsbench's LLR is then the mean over the frames that have a
value (metrics/loizou.py, ``trimmed_mean``).
"""
from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from nsbench.plugins.records import MetricInputs

from tests.helpers.paper_cases import RATE, cases
from tests.helpers.paths import TESTS_DATA

pytest.importorskip("pesq")
pytest.importorskip("fast_bss_eval")
composite = importlib.import_module("nsbench.builtin.metrics.composite")
pesq_metric = importlib.import_module("nsbench.builtin.metrics.pesq_metric")
spectral_distance = importlib.import_module("nsbench.builtin.metrics.spectral_distance")
bss_eval = importlib.import_module("nsbench.builtin.metrics.bss_eval")

RELATIVE = 1e-6  # the target; measured agreement is far closer (module doc)
EXPECTED = json.loads((TESTS_DATA / "paper_metrics_expected.json").read_text())
SCRIPT_METRICS = ("pesq_wb", "csig", "cbak", "covl", "ssnr", "llr", "wss")


def script_values(case) -> dict[str, dict[str, float]]:
    """The script's metrics in both flavours; PESQ is computed once, as a run does."""
    inputs = MetricInputs(output=case.output, clean=case.clean, noisy=case.noisy, sample_rate=RATE)
    pesq = pesq_metric.pesq_wb_metric(inputs)
    found = {}
    for flavour in ("vbd", "float"):
        parts = composite.script_parts(inputs, flavour)
        found[flavour] = {name: composite.composite(name, parts, pesq) for name in ("csig", "cbak", "covl")}
        found[flavour].update(pesq_wb=pesq, **{name: parts[name] for name in ("ssnr", "llr", "wss")})
    flavoured = MetricInputs(output=case.output, clean=case.clean, noisy=case.noisy, sample_rate=RATE, options={"flavour": "float"})
    assert composite.composite_metric("csig", flavoured) == found["float"]["csig"]  # what the metric itself returns
    return found


def other_values(case, with_bss: bool) -> dict[str, float]:
    inputs = MetricInputs(output=case.output, clean=case.clean, noisy=case.noisy, sample_rate=RATE)
    values = {"fwsegsnr": composite.fwsegsnr_metric(inputs), "cd": composite.cd_metric(inputs),
              "lsd": spectral_distance.lsd_metric(inputs)}
    if with_bss:  # 0.1 s a case: on every third
        values.update({name: bss_eval.bss_metric(name, inputs) for name in ("bss_sdr", "bss_sir", "bss_sar")})
    return values


@pytest.fixture(scope="module")
def computed() -> list[tuple[dict, dict[str, dict[str, float]]]]:
    """(the stored entry, nsbench's values by flavour and "other") per case,
    with one BLAS thread, as a run scores."""
    stored = {entry["case"]: entry for entry in EXPECTED["cases"]}
    found = []
    with threadpool_limits(1):
        for index, case in enumerate(cases()):
            entry = stored[case.name]
            assert entry["sha256"] == case.digest(), f"{case.name}: the audio changed since the references ran; rerun the script"
            found.append((entry, {**script_values(case), "other": other_values(case, with_bss=index % 3 == 0)}))
    return found


def relative(ours: float, reference: float) -> float:
    return abs(ours - reference) / max(abs(reference), 1e-12)


def test_every_case_of_the_helper_has_stored_values_made_with_named_commits():
    assert sorted(entry["case"] for entry in EXPECTED["cases"]) == [case.name for case in cases()]
    assert set(EXPECTED["commits"]) == {"schmiph2/pysepm", "ruizhecao96/CMGAN", "urgent-challenge/urgent2025_challenge"}
    assert all(len(commit) == 40 for commit in EXPECTED["commits"].values())


@pytest.mark.parametrize("flavour", ["vbd", "float"])
def test_the_composite_and_its_parts_equal_cmgans_script(computed, flavour):
    compared = 0
    for entry, ours in computed:
        reference = entry["values"][f"cmgan_{flavour}"]
        for name in SCRIPT_METRICS:
            if reference["llr"] is None and name in ("llr", "csig", "covl"):
                continue  # the reference has no LLR: below
            assert relative(ours[flavour][name], reference[name]) < RELATIVE, (entry["case"], name, ours[flavour][name], reference[name])
            compared += 1
    assert compared >= 90


def test_where_the_references_llr_is_nan_theirs_csig_is_the_floor_and_ours_a_score(computed):
    padded = [(entry, ours) for entry, ours in computed if entry["values"]["cmgan_vbd"]["llr"] is None]
    assert len(padded) == 3  # the mixture whose clean voice starts in digital silence, and its two outputs
    for entry, ours in padded:
        assert entry["values"]["cmgan_vbd"]["csig"] == entry["values"]["cmgan_vbd"]["covl"] == 1.0
        assert 0 < ours["vbd"]["llr"] < 3 and ours["vbd"]["csig"] > 1.5


def test_the_flavours_differ_only_through_wss(computed):
    for entry, ours in computed:
        assert ours["float"]["llr"] == pytest.approx(ours["vbd"]["llr"], rel=1e-9)
        assert ours["float"]["ssnr"] == pytest.approx(ours["vbd"]["ssnr"], rel=1e-9)
        assert ours["float"]["pesq_wb"] == ours["vbd"]["pesq_wb"]
        assert ours["float"]["wss"] < ours["vbd"]["wss"]  # band energies at the floor agree: smaller slopes


def test_fwsegsnr_and_cd_equal_pysepm(computed):
    for entry, ours in computed:
        for name in ("fwsegsnr", "cd"):
            assert relative(ours["other"][name], entry["values"]["pysepm"][name]) < RELATIVE, (entry["case"], name)


def test_pysepms_composite_is_the_vbd_flavour_where_its_llr_has_no_silent_frame(computed):
    """pysepm adds 2.2e-16 to the samples and maps a frame's non-positive or
    NaN ratio to 1000 or inf: on real voices that changes nothing measurable."""
    for entry, ours in computed:
        if entry["values"]["cmgan_vbd"]["llr"] is None:
            continue
        pysepm = entry["values"]["pysepm"]
        for name in ("csig", "cbak", "covl", "ssnr", "wss"):
            assert relative(ours["vbd"][name], pysepm[name]) < RELATIVE, (entry["case"], name)
        assert relative(ours["vbd"]["llr"], pysepm["llr_composite"]) < RELATIVE


def test_lsd_equals_urgents_and_its_float32_reading_within_1e_5(computed):
    for entry, ours in computed:
        urgent = entry["values"]["urgent"]
        assert relative(ours["other"]["lsd"], urgent["lsd"]) < RELATIVE, entry["case"]
        # URGENT reads float32 files, so librosa's STFT runs in single precision there.
        assert relative(ours["other"]["lsd"], urgent["lsd_float32"]) < 1e-5, entry["case"]


def test_bss_eval_equals_fast_bss_evals_own_call(computed):
    sources = ["fast_bss_eval"] + (["fast_bss_eval_numpy1"] if "fast_bss_eval_numpy1" in EXPECTED["cases"][0]["values"] else [])
    for entry, ours in computed:
        if "bss_sdr" not in ours["other"]:
            continue
        for source in sources:
            for name in ("bss_sdr", "bss_sir", "bss_sar"):
                assert relative(ours["other"][name], entry["values"][source][name]) < RELATIVE, (entry["case"], source, name)


def test_the_references_own_further_checks_agreed_when_the_script_ran():
    """What the script found on CMGAN's 25 VoiceBank-DEMAND pairs (its log has 6
    decimals) and on pysepm's examples against Loizou's MATLAB values."""
    samples = EXPECTED["checks"]["cmgan_audio_samples"]
    assert samples["pairs"] == 25 and samples["columns"][:5] == ["pesq_wb", "csig", "cbak", "covl", "ssnr"]
    assert max(samples["max_abs_nsbench_minus_log"][:5]) < 6e-7
    for pair in EXPECTED["checks"]["pysepm_results_mat"].values():
        for name, values in pair.items():
            tolerance = 1e-6 if name in ("pesq_wb", "csig", "cbak", "covl") else 1e-9  # MATLAB's PESQ, not the pesq package
            assert relative(values["nsbench"], values["matlab"]) < tolerance, name


def test_the_composites_pesq_is_pesq_wbs_score_computed_once():
    case = cases()[0]
    inputs = MetricInputs(output=case.output, clean=case.clean, noisy=case.noisy, sample_rate=RATE)
    composite.composite_metric("csig", inputs)
    composite.composite_metric("cbak", inputs)
    first = dict(inputs._derived)
    assert pesq_metric.pesq_wb_metric(inputs) == first[next(k for k in first if k[1] == "wide_band_outcome")]
    assert sum(key[1] == "wide_band_outcome" for key in inputs._derived) == 1 and inputs._derived.keys() == first.keys()
    assert sum(key[1] == "script_parts" for key in first) == 1  # segSNR, LLR and WSS once for both


def test_a_48_khz_clip_is_scored_at_16_khz_and_8_khz_at_its_own_rate():
    soxr = pytest.importorskip("soxr")
    case = cases()[0]
    high = {name: soxr.resample(getattr(case, name), RATE, 48000, quality="HQ").astype(np.float32) for name in ("clean", "output")}
    back = {name: soxr.resample(high[name], 48000, RATE, quality="HQ").astype(np.float32) for name in high}
    at_48k = MetricInputs(output=high["output"], clean=high["clean"], noisy=high["output"], sample_rate=48000)
    at_16k = MetricInputs(output=back["output"], clean=back["clean"], noisy=back["output"], sample_rate=RATE)
    for name in ("csig", "cbak", "covl"):
        assert composite.composite_metric(name, at_48k) == composite.composite_metric(name, at_16k)
    low = {name: soxr.resample(getattr(case, name), RATE, 8000, quality="HQ").astype(np.float32) for name in ("clean", "output")}
    at_8k = MetricInputs(output=low["output"], clean=low["clean"], noisy=low["output"], sample_rate=8000)
    assert math.isfinite(composite.part_metric("llr", at_8k)) and math.isfinite(composite.cd_metric(at_8k))
    with pytest.raises(composite.MetricUndefined, match="wide-band PESQ needs 16000 Hz"):
        composite.composite_metric("csig", at_8k)


def test_in_a_run_the_row_scores_pesq_once_though_the_composite_has_options():
    """The run binds each metric to its options on a copy of the inputs
    (nsbench.plugins.metric_options); the copies share the output's derived values."""
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.metric_options import bind_options, metric_context
    from nsbench.plugins.registry import build_registry

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    specs = [registry.metrics.get(name).spec for name in ("pesq_wb", "csig", "cbak", "covl", "ssnr")]
    bound, options = bind_options(specs, lambda metric: {"composite_flavour": "float"}, metric_context(registry))
    assert options["csig"]["flavour"] == "float" and "pesq_wb" not in options
    case = cases()[0]
    inputs = MetricInputs(output=case.output, clean=case.clean, noisy=case.noisy, sample_rate=RATE)
    values = {spec.name: spec.func(inputs) for spec in bound}
    computed = [key[1] for key in inputs._derived]
    assert sorted(computed) == ["script_parts", "wide_band_outcome"]  # each once, for all five
    assert values["csig"] == composite.composite("csig", composite.script_parts(inputs, "float"), values["pesq_wb"])
