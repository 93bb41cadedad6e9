"""The biodenoising adapter on a fixture in its published layout."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from nsbench.audio.files import read_audio
from nsbench.builtin.datasets import biodenoising
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.errors import UserError

from tests.helpers.plugins import cli_with
from tests.helpers.dataset_layouts import SNR_ITEMS, bio_options, cell, results, write_bio_set


def test_biodenoising_pairs_by_relative_path_under_a_root_containing_clean(bio_parent):
    for folder in (bio_parent, bio_parent / biodenoising.ROOT_NAME):  # the parent or the set itself
        sources = biodenoising.clips(bio_options(folder))
        assert sorted(s.clip_id for s in sources) == sorted(Path(n).stem for n in SNR_ITEMS)
        assert all(s.labels == {"set": "16000", "snr_db": "as recorded"} for s in sources)
    clip = next(s for s in sources if s.clip_id == "cleaner_warbler_02").load()
    base = bio_parent / biodenoising.ROOT_NAME / "16000"
    # The pairing earthspecies' evaluate.py does would look for a file that does not exist:
    assert not Path(str(base / "clean" / "cleaner_warbler_02.wav").replace("clean", "noisy")).exists()
    np.testing.assert_array_equal(clip.clean, read_audio(base / "clean" / "cleaner_warbler_02.wav")[0])
    np.testing.assert_array_equal(clip.noisy, read_audio(base / "noisy" / "cleaner_warbler_02.wav")[0])
    np.testing.assert_array_equal(clip.noise, read_audio(base / "noise" / "cleaner_warbler_02.wav")[0])
    assert clip.source_path == str(base / "noisy" / "cleaner_warbler_02.wav") and "clean datasets" in clip.source_path


def test_biodenoising_snr_experiments_label_their_snr(bio_parent):
    sources = biodenoising.clips(bio_options(bio_parent, biodenoising_snr_experiments=True))
    assert [(s.clip_id, s.labels["snr_db"]) for s in sources] == [
        (f"snr{snr}/gibbon_01", snr) for snr in ("-5", "0", "5", "10")
    ]
    assert sources[0].labels["set"] == "16000_snr_experiments/-5"


def test_biodenoising_unpaired_files_are_listed(tmp_path):
    folder = tmp_path / biodenoising.ROOT_NAME / "16000"
    write_bio_set(folder, {"a.wav": (0.1, 0.1), "b.wav": (0.1, 0.1)}, 16000, 0.1)
    (folder / "noisy" / "b.wav").unlink()
    (folder / "noisy" / "stray.wav").write_bytes((folder / "noisy" / "a.wav").read_bytes())
    with pytest.raises(UserError, match=r"2 files under .* have no partner at the same path: clean/b\.wav, noisy/stray\.wav"):
        biodenoising.clips(bio_options(tmp_path))


def test_biodenoising_json_list_must_match_the_folder(tmp_path):
    folder = tmp_path / biodenoising.ROOT_NAME / "16000"
    write_bio_set(folder, {"a.wav": (0.1, 0.1), "b.wav": (0.1, 0.1)}, 16000, 0.1)
    for role in ("clean", "noisy", "noise"):
        (folder / role / "b.wav").unlink()
    with pytest.raises(UserError, match=r"clean\.json and .*/clean/ disagree on 1 file: b\.wav \(listed, not in clean/\)"):
        biodenoising.clips(bio_options(tmp_path))


def test_biodenoising_layout_mismatch_says_what_was_expected_and_found(tmp_path):
    (tmp_path / "wrong").mkdir()
    (tmp_path / "wrong" / "audio").mkdir()
    with pytest.raises(UserError, match=r"biodenoising expects biodenoising_validation/16000/\{clean,noisy,noise\}/ .* holds: audio"):
        biodenoising.clips(bio_options(tmp_path / "wrong"))
    (tmp_path / "only" / "16000" / "noisy").mkdir(parents=True)
    with pytest.raises(UserError, match=r"expects .*/16000/\{clean,noisy,noise\}/; no clean/ there, found: noisy"):
        biodenoising.clips(bio_options(tmp_path / "only"))


def test_biodenoising_48k_folder(tmp_path):
    write_bio_set(tmp_path / biodenoising.ROOT_NAME / "48000", {"owl.wav": (0.1, 0.05)}, 48000, 0.1)
    clip = biodenoising.clips(bio_options(tmp_path, biodenoising_rate=48000))[0].load()
    assert clip.sample_rate == 48000 and len(clip.noisy) == 4800 and clip.notes == ()


class OracleSeededPlugin:
    """A generative-model stand-in whose residual noise depends on its seed:
    output = clean + 2**-seed * (noisy - clean). With clean orthogonal to the
    noise, SI-SDR = input SNR + 20 log10(2) * seed exactly."""

    @hookimpl
    def register_engines(self, register):
        from nsbench.plugins.specs import EngineSpec

        class Halving:
            sample_rate, delay = 16000, 0

            def __init__(self, seed):
                self.gain = 2.0 ** -seed

            def process(self, audio, clean):
                return (clean + self.gain * (audio - clean)).astype(np.float32)

            def close(self):
                pass

        register(EngineSpec(name="halving", factory=lambda options: Halving(options["seed"]), description="test",
                            sample_rate=16000, delay=0, oracle=True, seeded=True))


def test_biodenoising_seed_aggregation_end_to_end(bio_parent, tmp_path):
    run_cli = cli_with(OracleSeededPlugin())
    argv = ["--dataset", "biodenoising", "--data-folder", str(bio_parent), "--engine", "halving", "--seeds", "0-2",
            "--metric", "si_sdr", "--metric", "si_sdri", "--results-folder", str(tmp_path / "r"), "--quiet"]
    assert run_cli(argv) == 0
    summary, rows = results(tmp_path / "r" / "biodenoising", "halving")
    step = 20 * math.log10(2)  # 6.0206 dB per halving
    snr = {"robin_0001": 0.0, "cleaner_warbler_02": 5.0, "humpback_03": 20.0}
    assert len(rows) == 9
    for row in rows:
        assert row["scores"]["si_sdr"] == pytest.approx(snr[row["clip_id"]] + step * row["seed"], abs=1e-4)
    # Seed card: per clip the mean over seeds (snr + 6.02), then median and MAD over clips.
    stats = summary["metrics"]["si_sdr"]
    assert stats["n"] == 3 and summary["clips"] == 3 and summary["runs"] == 9
    assert stats["median"] == pytest.approx(5 + step, abs=1e-4)  # per-clip means 6.02, 11.02, 26.02
    assert stats["mad"] == pytest.approx(5.0, abs=1e-4)  # |6.02 - 11.02|, 0, |26.02 - 11.02| -> 5
    assert stats["mean"] == pytest.approx(25 / 3 + step, abs=1e-4)
    # results.py: every clip x seed row pooled: 0, 5, 6.02, 11.02, 12.04, 17.04, 20, 26.02, 32.04.
    pooled = stats["pooled"]
    assert pooled["n"] == 9
    assert pooled["median"] == pytest.approx(2 * step, abs=1e-4)
    # Deviations from 12.04: 0, 1.02, 5, 6.02, 7.04, 7.96, 12.04, 13.98, 20; their median is |5 - 12.04|.
    assert pooled["mad"] == pytest.approx(2 * step - 5, abs=1e-4)
    low, high = pooled["median_ci95"]
    assert 0 <= low <= pooled["median"] <= high <= 4 * step + 8
    assert stats == cell(summary, snr_db="as recorded")["metrics"]["si_sdr"]
    assert summary["metrics"]["si_sdri"]["median"] == pytest.approx(step, abs=1e-4)
    baseline, _ = results(tmp_path / "r" / "biodenoising", "passthrough")
    assert baseline["runs"] == 3 and baseline["metrics"]["si_sdr"]["median"] == pytest.approx(5.0, abs=1e-4)
