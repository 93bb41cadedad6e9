"""Count messages say "1 file", never "1 files" (issue 22)."""
from __future__ import annotations

import numpy as np
import pytest

from nsbench.audio.files import full_scale_note, non_finite
from nsbench.builtin.datasets import folder, voicebank
from nsbench.report.compare import comparison_summary
from nsbench.text import plural
from nsbench.plugins.errors import UserError

from tests.helpers.audio import make_folder_dataset, write_wav


def test_plural():
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert plural(2, "match", "matches") == "2 matches"


def test_one_file_in_only_one_of_noisy_and_clean(tmp_path):
    data = make_folder_dataset(tmp_path / "d", count=2)
    (data / "clean" / "utt1.wav").unlink()
    with pytest.raises(UserError, match=r"^1 file in only one of noisy/ and clean/ under .*: utt1\.wav \(--allow-unpaired scores noisy files without a reference\)$"):
        folder.pairs(data)


def test_one_voicebank_file_without_its_partner(tmp_path):
    tone = np.zeros(1600, np.float32)
    for role in (voicebank.CLEAN_DIR, voicebank.NOISY_DIR):
        write_wav(tmp_path / role / "p232_001.wav", tone, 16000)
    write_wav(tmp_path / voicebank.NOISY_DIR / "p232_002.wav", tone, 16000)
    with pytest.raises(UserError, match=r"^1 file under .* has no partner of the same name"):
        voicebank.pairs(tmp_path)


def test_one_sample_counts():
    audio = np.zeros(100, np.float32)
    audio[4] = 1.5
    assert full_scale_note("noisy", audio).startswith("noisy goes beyond it (|x| > 1) on 1 sample: ")
    audio[4] = np.nan
    assert non_finite(audio) == "1 NaN or Inf sample (the first at sample 4)"


def test_one_value_compared():
    comparison = {"regressions": 1, "rows": [{"status": "worse"}], "engines_compared": ["speex"]}
    text = comparison_summary(comparison)
    assert "1 value worse than stored" in text and "1 value compared for speex" in text
