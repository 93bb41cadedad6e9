"""The fuss adapter on a fixture in FUSS's published layout."""
from __future__ import annotations

import numpy as np
import pytest

from nsbench.audio.files import read_audio
from nsbench.builtin.datasets import fuss
from nsbench.cli import main
from nsbench.plugins.errors import UserError

from tests.helpers.dataset_layouts import cell, fuss_options, make_fuss, results, source_names


def test_fuss_clips_recompute_the_mixture_and_pad_to_four_sources(fuss_root, cache, capsys):
    sources = fuss.clips(fuss_options(fuss_root))
    assert [(s.clip_id, s.labels["sources"]) for s in sources] == [
        ("example0000", "1"), ("example0001", "2"), ("example0002", "3"), ("example0003", "4"), ("example0004", "2"),
    ]
    assert "skipped 1 example whose sources are all silent, as the FUSS evaluation does: example0005" in capsys.readouterr().err
    clip = sources[2].load()
    folder = fuss_root / "eval" / "example0002_sources"
    expected = [read_audio(folder / name)[0] for name in source_names(3)]
    # Zero-padded to the 160000 samples evaluate_lib.py reads, and noted.
    assert clip.sources.shape == (4, 160000) and clip.is_separation
    for row, audio in zip(clip.sources, expected):
        np.testing.assert_array_equal(row[:8000], audio)
        assert not np.any(row[8000:])
    assert "background0_sound.wav has 8000 samples: zero-padded to 160000, as evaluate_lib.py reads it" in clip.notes
    assert not np.any(clip.sources[3]) and not np.any(clip.clean)
    np.testing.assert_array_equal(clip.noisy, clip.sources.sum(axis=0))
    assert clip.source_path == str(fuss_root / "eval" / "example0002.wav")


def test_fuss_activity_is_cached(fuss_root, cache, monkeypatch):
    first = [s.labels for s in fuss.clips(fuss_options(fuss_root))]
    monkeypatch.setattr(fuss, "file_rms", lambda path: pytest.fail("read again"))
    assert [s.labels for s in fuss.clips(fuss_options(fuss_root))] == first


@pytest.mark.parametrize("entry", ["../../etc/passwd", "eval/../../secret.wav", "/etc/passwd", "~/x.wav"])
def test_fuss_list_paths_cannot_leave_the_data_folder(tmp_path, cache, entry):
    root = make_fuss(tmp_path / "ssdata_reverb")
    listing = root / "eval_example_list.txt"
    listing.write_text(listing.read_text() + f"eval/example9999.wav\t{entry}\n")
    with pytest.raises(UserError, match=rf"eval_example_list\.txt:7: path '{entry}' leaves the data folder"):
        fuss.clips(fuss_options(root))


def test_fuss_layout_errors(tmp_path, cache):
    (tmp_path / "fuss" / "eval").mkdir(parents=True)
    with pytest.raises(UserError, match=r"fuss expects eval_example_list\.txt in .*; found: eval"):
        fuss.clips(fuss_options(tmp_path / "fuss"))
    root = make_fuss(tmp_path / "ssdata_reverb")
    (root / "eval" / "example0001_sources" / "foreground0_sound.wav").unlink()
    with pytest.raises(UserError, match=r"1 source files listed in eval_example_list\.txt are missing under .*: "
                                        r"eval/example0001_sources/foreground0_sound\.wav"):
        fuss.clips(fuss_options(root))
    listing = root / "eval_example_list.txt"
    listing.write_text("eval/example0000.wav " + "eval/example0000_sources/background0_sound.wav\n")
    with pytest.raises(UserError, match=r":1: expected a mixture and 1-4 source paths separated by tabs, found 1 fields"):
        fuss.clips(fuss_options(root))


def test_fuss_end_to_end_mixture_copy_baseline(fuss_root, tmp_path, cache):
    argv = ["--dataset", "fuss", "--data-folder", str(fuss_root), "--engine", "passthrough",
            "--results-folder", str(tmp_path / "r"), "--quiet",
            "--metric", "fuss_sisnr", "--metric", "fuss_sisnri", "--metric", "fuss_under_separated",
            "--metric", "fuss_over_separated", "--metric", "fuss_scored_pairs", "--metric", "si_sdr"]
    assert main(argv) == 0
    summary, rows = results(tmp_path / "r" / "fuss", "passthrough")
    assert summary["clips"] == 5 and summary["failures"] == 0
    one = cell(summary, sources="1")["metrics"]
    # One source: the mixture is that source; SI-SNR hits the eps ceiling of +80 dB.
    assert one["fuss_sisnr"]["mean"] == pytest.approx(80.0, abs=1e-6)
    for count in ("2", "3", "4"):
        metrics = cell(summary, sources=count)["metrics"]
        assert metrics["fuss_sisnri"]["mean"] == pytest.approx(0.0, abs=1e-9)  # the mixture itself
        assert metrics["fuss_under_separated"]["mean"] == 0.0
        # The mono output copied to 4 slots: 4 active estimates.
        assert metrics["fuss_over_separated"]["mean"] == (0.0 if count == "4" else 1.0)
        assert metrics["fuss_scored_pairs"]["mean"] == float(count)
    assert all("si_sdr" not in row["scores"] and "si_sdr" not in row["undefined"] for row in rows)
    pooled = cell(summary, sources="2-4")
    assert pooled["pooled"] and pooled["clips"] == sum(cell(summary, sources=c)["clips"] for c in ("2", "3", "4"))
    assert summary["worst_cell"]["metric"] == "fuss_sisnri"
    report = (tmp_path / "r" / "fuss" / "report.md").read_text()
    assert "| 2-4 | passthrough |" in report and "fuss_sisnri" in report.split("## Per cell")[1].splitlines()[2]
