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


# --------------------------------------------------------------------------- the papers' row


def test_list_datasets_suggests_the_papers_row_for_voicebank(capsys):
    assert main(["--list", "datasets", "--verbose"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("voicebank "))
    assert "the papers' row: --metric vbd-row" in line


def make_voicebank_of_speech(root, seconds: float = 2.0):
    """VoiceBank-DEMAND's published layout (48 kHz int16, log) holding the demo
    bundle's real readers at the log's SNRs: PESQ needs speech to find utterances."""
    import soxr

    from nsbench.adapters import mix_at_snr
    from tests.helpers.paper_cases import recording

    speech = ("speech/ls5778_F_12761-0000.flac", "speech/ls196_M_122150-0000.flac", "speech/ls4137_F_11701-0000.flac",
              "speech/ls78_M_368-0000.flac")
    for index, (name, (_, snr)) in enumerate(VB_LOG.items()):
        clean = recording(speech[index], int(seconds * 16000))
        noisy, _ = mix_at_snr(clean, recording("noise/cafe_restaurant_ambience.flac", len(clean)), float(snr))
        for folder, audio in (("clean_testset_wav", clean), ("noisy_testset_wav", noisy)):
            write_int16(root / folder / f"{name}.wav", soxr.resample(audio, 16000, VB_RATE, quality="HQ"), VB_RATE)
    (root / "logfiles").mkdir()
    (root / "logfiles" / "log_testset.txt").write_text("".join(f"{n} {noise} {snr}\n" for n, (noise, snr) in VB_LOG.items()))
    return root


@pytest.mark.slow
def test_the_papers_row_on_voicebank_prints_and_writes_the_latex_table(tmp_path, capsys):
    pytest.importorskip("pesq")
    root = make_voicebank_of_speech(tmp_path / "VoiceBank-DEMAND")
    results = tmp_path / "results"
    argv = ["--dataset", "voicebank", "--data-folder", str(root), "--engine", "speex", "--metric", "vbd-row",
            "--results-folder", str(results), "--no-html", "--no-plots", "--jobs", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "vbd-row (the papers' row;" in printed and "Noisy (input)" in printed
    folder = results / "voicebank"
    means = {engine: json.loads((folder / f"{engine}.json").read_text())["metrics"] for engine in ("passthrough", "speex")}
    row = ("pesq_wb", "csig", "cbak", "covl", "ssnr", "stoi")
    assert all(means[engine][name]["n"] == 4 for engine in means for name in row)
    lines = (folder / "paper-table.tex").read_text().splitlines()
    start = lines.index(r"\begin{tabular}{lcccccc}")
    assert lines[start + 2] == r"System & PESQ & CSIG & CBAK & COVL & SSNR & STOI \\"
    for offset, (label, engine) in enumerate((("Noisy (input)", "passthrough"), ("speex", "speex"))):
        cells = " & ".join(f"{means[engine][name]['mean']:.2f}" for name in row)
        assert lines[start + 4 + offset] == f"{label} & {cells} \\\\"
    assert r"\multicolumn{7}{l}{\footnotesize csig, cbak, covl, ssnr: composite\_flavour vbd} \\" in lines
    report = (folder / "report.md").read_text()
    assert "## Paper table: vbd-row" in report and report.index("## Paper table") < report.index("## Checks")
    # The flavour keys the cache and the results: float is another run, with its own numbers.
    assert main([*argv, "--composite-flavour", "float", "--quiet"]) == 0
    result = json.loads((results / "voicebank" / "speex.json").read_text())
    assert result["provenance"]["metric_options"]["csig"]["composite_flavour"] == "float"
    assert result["metrics"]["pesq_wb"]["mean"] == means["speex"]["pesq_wb"]["mean"]
    assert result["metrics"]["csig"]["mean"] != pytest.approx(means["speex"]["csig"]["mean"], abs=1e-3)
    assert "composite\\_flavour float" in (results / "voicebank" / "paper-table.tex").read_text()
