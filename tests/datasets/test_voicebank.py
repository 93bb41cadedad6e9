"""The voicebank adapter on a fixture in its exact published layout."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nsbench.builtin.datasets import voicebank
from nsbench.cli import main
from nsbench.plugins.errors import UserError

from tests.helpers.dns_layouts import VB_LOG, VB_RATE, make_voicebank, write_int16


def test_voicebank_cells_from_the_log_and_16k_by_default(tmp_path):
    root = make_voicebank(tmp_path / "VoiceBank-DEMAND")
    sources = voicebank.clips({"data_folder": str(root)})
    assert [s.clip_id for s in sources] == sorted(VB_LOG)
    assert {s.clip_id: (s.labels["noise"], s.labels["snr_db"]) for s in sources} == VB_LOG
    clip = sources[0].load()
    assert clip.sample_rate == 16000 and len(clip.noisy) == len(clip.clean) == 8000
    assert "noisy resampled from 48000 Hz to 16000 Hz" in clip.notes


def test_voicebank_at_48k_on_request(tmp_path):
    root = make_voicebank(tmp_path / "vb")
    clip = voicebank.clips({"data_folder": str(root), "voicebank_rate": 48000})[0].load()
    assert clip.sample_rate == 48000 and len(clip.noisy) == 24000 and not clip.notes


def test_voicebank_without_log_is_one_cell(tmp_path):
    root = make_voicebank(tmp_path / "vb", with_log=False)
    assert {(s.labels["noise"], s.labels["snr_db"]) for s in voicebank.clips({"data_folder": str(root)})} == {("all", "all")}


def test_voicebank_errors_say_what_was_expected_and_found(tmp_path):
    root = make_voicebank(tmp_path / "vb")
    (root / "noisy_testset_wav" / "p232_002.wav").unlink()
    write_int16(root / "noisy_testset_wav" / "p999_001.wav", np.zeros(100), VB_RATE)
    with pytest.raises(UserError, match=r"2 files under .* no partner .*clean_testset_wav/p232_002\.wav, noisy_testset_wav/p999_001\.wav"):
        voicebank.clips({"data_folder": str(root)})
    renamed = tmp_path / "other"
    (tmp_path / "vb").rename(renamed)
    (renamed / "noisy_testset_wav").rename(renamed / "noisy_testset_wav_16k")
    with pytest.raises(UserError, match=r"expects clean_testset_wav/ and noisy_testset_wav/ .* no noisy_testset_wav/ there, found: clean_testset_wav, logfiles, noisy_testset_wav_16k"):
        voicebank.clips({"data_folder": str(renamed)})


def test_voicebank_malformed_log_line_is_named(tmp_path):
    root = make_voicebank(tmp_path / "vb")
    (root / "logfiles" / "log_testset.txt").write_text("p232_001 living 2.5\np232_002 bus\n")
    with pytest.raises(UserError, match=r"log_testset\.txt:2: expected '<fileid> <noise> <snr>', found 'p232_002 bus'"):
        voicebank.clips({"data_folder": str(root)})


def test_voicebank_cli_run_has_noise_and_snr_cells(tmp_path):
    root = make_voicebank(tmp_path / "vb", seconds=1.0)
    results = tmp_path / "results"
    argv = ["--dataset", "voicebank", "--data-folder", str(root), "--engine", "passthrough",
            "--metric", "si_sdr", "--results-folder", str(results), "--quiet"]
    assert main(argv) == 0
    result = json.loads((results / "voicebank" / "passthrough.json").read_text())
    assert [c["cell"] for c in result["cells"]] == [
        {"noise": "bus", "snr_db": "7.5"}, {"noise": "cafe", "snr_db": "17.5"}, {"noise": "living", "snr_db": "2.5"},
    ]
    assert result["dataset_description"]["sample_rate"] == 16000 and result["dataset_description"]["pairs"] == 4
