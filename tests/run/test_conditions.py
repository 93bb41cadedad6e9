"""Conditions in a run (nsbench.run.conditions): composition, and a run with
--condition end to end (cells, JSON, report, cache, bad input)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nsbench.builtin.conditions import codecs, processing
from nsbench.cli import main
from nsbench import ConditionSpec
from nsbench.run.conditions import apply_steps, conditioned, conditioned_sources, resolve
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.records import Clip, ClipSource
from nsbench.plugins.errors import UserError

from tests.helpers.audio import make_folder_dataset
from tests.helpers.plugins import cli_with
from tests.helpers.conditions import ABSENT, RATE


@pytest.fixture(scope="module")
def registry():
    return build_registry(get_plugin_manager(load_entry_points=False))


def loaded_clip(seed: int = 1) -> Clip:
    rng = np.random.default_rng(seed)
    clean = codecs.probe_signal(RATE, seed=seed, seconds=1.0)
    noisy = (clean + 0.05 * rng.standard_normal(len(clean))).astype(np.float32)
    return Clip("c", noisy, clean, RATE, labels={"set": "x"})


def test_composed_conditions_apply_in_the_order_written(registry):
    clip = loaded_clip()
    [_, first_gain], [_, first_quantise] = (resolve([name], registry.conditions) for name in
                                            ("gain-minus-20db+quantise-8bit", "quantise-8bit+gain-minus-20db"))
    assert first_gain.name == "gain-minus-20db+quantise-8bit"
    expected = processing.quantise(processing.gain(clip.noisy, RATE, -20.0), RATE, 8)
    np.testing.assert_array_equal(apply_steps(clip, first_gain.steps)[0], expected)
    other = processing.gain(processing.quantise(clip.noisy, RATE, 8), RATE, -20.0)
    np.testing.assert_array_equal(apply_steps(clip, first_quantise.steps)[0], other)
    assert not np.array_equal(expected, other)


def test_none_is_always_first_and_is_the_dataset_clip_itself(registry):
    names = [c.name for c in resolve(["opus-16k", "limiter", "opus-16k"], registry.conditions)]
    assert names == ["none", "opus-16k", "limiter"]
    assert resolve([], registry.conditions) == []
    source = ClipSource("c", loaded_clip, {"set": "x"})
    none, opus = resolve(["opus-16k"], registry.conditions)
    plain = conditioned(source, none)
    assert plain.load is source.load and plain.clip_id == "c" and plain.labels["condition"] == "none"
    coded = conditioned(source, opus).load()
    assert coded.clip_id == "c@opus-16k" and coded.labels["condition"] == "opus-16k"
    np.testing.assert_array_equal(coded.clean, loaded_clip().clean)  # a codec leaves the reference alone
    lowpassed = conditioned(source, resolve(["lowpass-4k"], registry.conditions)[1]).load()
    assert not np.array_equal(lowpassed.clean, loaded_clip().clean)  # the band limit applies to both


def test_a_transform_that_cannot_reach_workers_is_refused():
    class LambdaCondition:
        @hookimpl
        def register_conditions(self, register):
            register(ConditionSpec(name="lambda", transform=lambda audio, rate: audio, description="unpicklable"))

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(LambdaCondition())
    with pytest.raises(UserError, match="condition 'lambda': its transform cannot be sent to worker processes"):
        resolve(["lambda"], build_registry(manager).conditions)


def separation_clip() -> Clip:
    sources = (0.1 * np.random.default_rng(0).standard_normal((3, RATE))).astype(np.float32)
    return Clip("mix", sources.sum(axis=0), sources[0], RATE, sources=sources)


def test_a_reference_condition_reaches_the_sources_and_comes_back_from_the_cache(registry, tmp_path):
    lowpass = resolve(["lowpass-4k"], registry.conditions)[1]
    [source] = conditioned_sources([ClipSource("mix", separation_clip)], [lowpass], (str(tmp_path), True, None))
    computed, cached = source.load(), source.load()
    expected = np.stack([processing.lowpass(row, RATE, 4000.0, 8) for row in separation_clip().sources])
    np.testing.assert_array_equal(computed.sources, expected)
    for name in ("noisy", "clean", "sources"):
        assert getattr(cached, name).tobytes() == getattr(computed, name).tobytes()
    assert list((tmp_path / "runs").rglob("*.output"))  # stored, so the second load came from it


def test_unknown_condition_is_one_line_with_did_you_mean_exit_2(capsys):
    assert main(["--engine", "passthrough", "--condition", "opus16k", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Unknown condition 'opus16k'. Did you mean: opus-16k?" in err[0]


def fails_on_short_clips(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    if len(audio) < 1.5 * sample_rate:
        raise ValueError("too short for this test condition")
    return audio


class ConditionsPlugin:
    """A plugin: a condition that fails on one clip, and a codec FFmpeg lacks."""

    @hookimpl
    def register_conditions(self, register):
        register(ConditionSpec(name="picky", transform=fails_on_short_clips, description="fails under 1.5 s"))
        register(codecs.codec_condition("fake-codec", ABSENT))


@pytest.fixture
def with_test_conditions():
    """The CLI with the test's conditions registered (nsbench.cli.main's ``plugins``)."""
    return cli_with(ConditionsPlugin())


def read_run(folder):
    results = {path.stem: json.loads(path.read_text()) for path in folder.glob("*.json")}
    clips = {path.name.split(".")[0]: [json.loads(line) for line in path.read_text().splitlines()] for path in folder.glob("*.clips.jsonl")}
    return results, clips, (folder / "report.md").read_text()


@pytest.mark.slow
def test_a_run_with_conditions(tmp_path, with_test_conditions, capsys):
    data = make_folder_dataset(tmp_path / "data", count=2, seconds=lambda index: 1.0 + index)
    base = ["--dataset", "folder", "--data-folder", str(data), "--engine", "webrtc", "--jobs", "1", "--quiet",
            "--no-html", "--no-plots", "--results-folder", str(tmp_path / "results")]
    conditions = ["opus-16k", "lowpass-4k", "limiter+amr-nb-12k", "picky"]
    assert with_test_conditions([*base, *(f"--condition={name}" for name in conditions)]) == 4  # every result written; the picky condition fails its short clip
    results, clips, report = read_run(tmp_path / "results" / "folder")
    names = ["none", *conditions]

    # Each condition its own cell, under the key "condition", in the JSON and the clip records.
    passthrough, webrtc = results["passthrough"], results["webrtc"]
    assert {row["cell"]["condition"] for row in passthrough["cells"]} == set(names)
    assert [row["cell"]["condition"] for row in passthrough["conditions"]] == names
    assert {record["clip_id"] for record in clips["passthrough"]} == {
        f"utt{i}{'' if name == 'none' else '@' + name}" for i in range(2) for name in names}
    # The passthrough's gain is 0 under every condition; its input score differs between them.
    for record in clips["passthrough"]:
        if not record["error"]:
            assert record["scores"]["si_sdri"] == 0.0
    assert all(row["metrics"]["si_sdri"]["mean"] == 0.0 for row in passthrough["conditions"])
    inputs = {row["cell"]["condition"]: row["metrics"]["si_sdr_input"]["mean"] for row in passthrough["conditions"]}
    assert len({round(value, 6) for value in inputs.values()}) == len(names)
    # The condition that fails on the short clip fails that clip alone, with the reason.
    failed = [record for record in clips["webrtc"] if record["error"]]
    assert [record["clip_id"] for record in failed] == ["utt0@picky"]
    assert "condition picky failed on the noisy input: ValueError: too short" in failed[0]["error"]
    # Provenance: names, parameters, FFmpeg and codec names.
    recorded = {c["name"]: c for c in webrtc["provenance"]["conditions"]}
    amr = recorded["limiter+amr-nb-12k"]["steps"][1]
    assert amr["parameters"]["bit_rate"] == 12200 and amr["ffmpeg"].startswith("8.") and "libopencore_amrnb" in amr["encoder"]
    assert recorded["limiter+amr-nb-12k"]["steps"][0]["parameters"]["target_dbfs"] == -14.0
    # The report: the worst condition per engine in its top section, a per-condition table.
    top = report.split("## Per engine")[0]
    assert "**webrtc** loses most under **" in top or "**webrtc** loses nothing against none" in top
    assert "## Per condition" in report and "| limiter+amr-nb-12k | webrtc |" in report
    assert "| set | condition | engine |" in report  # the per-cell table has condition cells

    # Cached outputs are keyed on the condition: another condition is computed, the rest comes from the cache.
    assert with_test_conditions([*base, "--condition", "opus-16k", "--condition", "opus-32k"]) == 0
    _, again, _ = read_run(tmp_path / "results" / "folder")
    from_cache = {record["clip_id"]: record["from_cache"] for record in again["webrtc"]}
    assert from_cache == {"utt0": True, "utt1": True, "utt0@opus-16k": True, "utt1@opus-16k": True,
                          "utt0@opus-32k": False, "utt1@opus-32k": False}
    assert {r["clip_id"]: r["scores"] for r in again["webrtc"] if r["clip_id"].endswith("opus-16k")} == {
        r["clip_id"]: r["scores"] for r in clips["webrtc"] if r["clip_id"].endswith("opus-16k")}

    # A codec the FFmpeg build lacks: one line naming it and the install, before any engine runs.
    capsys.readouterr()
    assert with_test_conditions([*base, "--results-folder", str(tmp_path / "other"), "--condition", "fake-codec"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "libnosuchcodec" in err[0] and "pip install av==" in err[0]
    assert not (tmp_path / "other").exists()
