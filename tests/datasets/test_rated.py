"""The rated-set layout (nsbench.ratings, datasets/rated.py) and the
p835-reference adapter's workbook reader (datasets/p835_reference.py), on
fixtures written in the published layout and on the real folder where
../shared has it."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench import UserError
from nsbench.ratings import RatedSet, Rating, pooled, read
from nsbench.builtin.datasets import p835_reference, rated
from tests.helpers.paths import REPO_ROOT

SHARED = REPO_ROOT.parent.parent / "shared" / "ratings" / "p835-reference-conditions"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/ratings/p835-reference-conditions")


def tone(path: Path, rate: int = 16000, seconds: float = 1.0, lag: int = 0) -> None:
    t = np.arange(int(rate * seconds)) / rate
    signal = (0.3 * np.sin(2 * np.pi * 220 * t) * np.random.default_rng(1).normal(size=len(t))).astype(np.float32)
    soundfile.write(path, np.r_[np.zeros(lag, np.float32), signal][: len(signal)], rate)


def write_set(folder: Path, table: str, files=("a.wav", "b.wav", "src.wav")) -> Path:
    folder.mkdir(exist_ok=True)
    for name in files:
        tone(folder / name)
    (folder / "ratings.csv").write_text(table)
    return folder


def test_a_good_table_reads_whole(tmp_path):
    folder = write_set(tmp_path / "set", "file,condition,reference,mos,mos_votes,mos_std\na.wav,c1,src.wav,3.5,10,0.8\n"
                                         "b.wav,c1,src.wav,2.5,10,0.6\n")
    rated_set = read(folder)
    assert rated_set.dimensions == ("mos",) and rated_set.cell == "set"
    assert rated_set.items[0] .ratings["mos"] == Rating(3.5, 10, 0.8, math.nan)
    assert [s.clip_id for s in rated.sources_of(rated_set)] == ["set/a", "set/b"]


def test_a_bad_table_gives_one_line_per_problem(tmp_path):
    folder = write_set(tmp_path / "set", "file,sig,sig_votes\na.wav,3,10\nnothere.wav,3,10\na.wav,3,10\nb.wav,6,10\nb.wav,4,2.5\n")
    with pytest.raises(UserError) as raised:
        read(folder)
    lines = str(raised.value).split("\n")
    assert len(lines) == 4  # one per problem; the table is not scored at all
    assert "line 3: file 'nothere.wav' is not a file" in lines[0]
    assert "sig '6' is off the sig scale (1 to 5)" in lines[1]
    assert "sig_votes '2.5' is not a count" in lines[2]
    assert "file a.wav given twice" in lines[3]
    assert all(line.startswith("nsbench: error: ") for line in lines[1:])


def test_a_path_out_of_the_folder_is_refused(tmp_path):
    tone(tmp_path / "outside.wav")
    folder = write_set(tmp_path / "set", "file,mos\n../outside.wav,3\n")
    with pytest.raises(UserError, match="is not a file under"):
        read(folder)


def test_the_reference_is_aligned_and_the_lag_noted(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    tone(folder / "src.wav")
    tone(folder / "late.wav", lag=275)
    clip = rated.load_rated("late", str(folder / "late.wav"), str(folder / "src.wav"), {})
    assert "the rated file lags it by 275 samples at 16000 Hz" in clip.notes[-1]
    np.testing.assert_array_equal(clip.clean[275:1000], clip.noisy[275:1000])


def test_pooled_condition_is_every_vote_mean_and_std():
    votes = [np.array([1, 2, 3, 4.0]), np.array([2, 2, 5.0])]
    ratings = [Rating(v.mean(), len(v), v.std(ddof=1), 0) for v in votes]
    every = np.concatenate(votes)
    found = pooled(ratings)
    assert found.mean == pytest.approx(every.mean()) and found.std == pytest.approx(every.std(ddof=1))
    assert found.ci95 == pytest.approx(1.96 * every.std(ddof=1) / math.sqrt(7))


# ------------------------------------------------------------------ the workbook, in its layout

FILE_HEADER = ["file_url", "short_file_name", "condition_num", "n votes", "MOS_BAK", "std_bak", "95%CI_bak",
               "MOS_SIG", "std_sig", "95%CI_sig", "MOS_OVRL", "std_ovrl", "95%CI_ovrl"]
CONDITION_HEADER = ["Condition Name", "SNR (dB)", "MNRU (QdB)", "n", "MOS_BAK", "MOS_SIG", "MOS_OVRL", "std_bak", "std_sig",
                    "std_ovrl", "95%CI_bak", "95%CI_sig", "95%CI_ovrl"]


def write_published(root: Path) -> None:
    """Two conditions x two talkers of the wide-band set, as microsoft/P.808 lays them out."""
    openpyxl = pytest.importorskip("openpyxl")
    (root / "degraded_WB_16KHz").mkdir(parents=True)
    (root / "source" / "NSD").mkdir(parents=True)
    book = openpyxl.Workbook()
    book.active.title = "description"
    files = book.create_sheet("16KHzWB-results per file")
    files.append(FILE_HEADER)
    for number, (condition, talker) in enumerate([(0, "f1"), (0, "m1"), (1, "f1"), (1, "m1")]):
        name = f"c{condition}_{talker}.wav"
        tone(root / "degraded_WB_16KHz" / name, 48000 if condition == 0 else 16000)
        files.append([f"https://p835ref.s3.amazonaws.com/{name}", name, condition, 10 + number,
                      4.0 - condition, 0.5, 0.3, 4.5 - condition, 0.4, 0.2, 4.2 - condition, 0.6, 0.35])
    for talker in ("f1", "m1"):
        (root / "source" / "NSD" / f"{talker}.wav").write_bytes((root / "degraded_WB_16KHz" / f"c0_{talker}.wav").read_bytes())
    conditions = book.create_sheet("16KHzWB-results per condit")
    conditions.append([*CONDITION_HEADER, None, None, "Predicted MOS_OVRL from SIG and BAK (accoirdomg to [1])", None, None, None, "diff"])
    conditions.append(["c0", "refrence", None, 21, 4.0, 4.5, 4.2, 0.5, 0.4, 0.6, 0.2, 0.17, 0.25, None, None, 4.1, None, None, None, 0.1])
    conditions.append(["c1", 40, 8, 25, 3.0, 3.5, 3.2, 0.5, 0.4, 0.6, 0.2, 0.16, 0.24, None, None, 3.1, None, "correlation", 0.98, 0.1])
    conditions.append([None] * 20)
    conditions.append([None] * 15 + ["1. Yi Hu and Philipos C. Loizou 2007 "])
    book.save(root / p835_reference.WORKBOOK)


def test_the_workbook_adapter_reads_the_published_layout(tmp_path):
    write_published(tmp_path)
    (wb,) = p835_reference.published_sets(tmp_path)
    assert wb.cell == "wb" and wb.dimensions == ("sig", "bak", "ovrl")
    assert [item.clip_id for item in wb.items] == ["c0_f1", "c0_m1", "c1_f1", "c1_m1"]
    first = wb.items[2]
    assert first.file == "degraded_WB_16KHz/c1_f1.wav" and first.reference == "source/NSD/f1.wav"
    assert first.ratings["bak"] == Rating(3.0, 12, 0.5, 0.3)
    assert set(wb.conditions()) == {"c0", "c1"}  # the notes below the table are not conditions
    assert wb.conditions()["c1"]["sig"] == Rating(3.5, 25, 0.4, 0.16)
    sources = p835_reference.clips({"data_folder": str(tmp_path)})
    clip = sources[0].load()
    assert clip.sample_rate == 48000 and "lags it by 0 samples" in clip.notes[-1]


def test_a_missing_sheet_or_file_is_named(tmp_path):
    write_published(tmp_path)
    (tmp_path / "degraded_WB_16KHz" / "c1_m1.wav").unlink()
    with pytest.raises(UserError, match="1 file.*c1_m1.wav"):
        p835_reference.published_sets(tmp_path)
    with pytest.raises(UserError, match="expects microsoft/P.808's p835_reference_conditions/ layout"):
        p835_reference.published_sets(tmp_path / "source")


@pytest.mark.skipif(not (SHARED / p835_reference.WORKBOOK).is_file(), reason="no ../shared/ratings here")
def test_the_real_workbook_and_the_bundled_set_agree():
    (wb,) = p835_reference.published_sets(SHARED)
    assert len(wb.items) == 78 and len(wb.conditions()) == 13
    bundled = read(p835_reference.BUNDLED, "wb")
    assert [(i.clip_id, i.condition, dict(i.ratings)) for i in bundled.items] == sorted(
        [(i.clip_id, i.condition, dict(i.ratings)) for i in wb.items], key=lambda t: (int(t[1][1:]), t[0]))
    # The per-condition sheet is the files' votes pooled (what the bundled set computes).
    pooled_here = bundled.conditions()
    for condition, by_dim in wb.conditions().items():
        for dim, rating in by_dim.items():
            assert pooled_here[condition][dim].mean == pytest.approx(rating.mean, abs=1e-12)
            assert pooled_here[condition][dim].ci95 == pytest.approx(rating.ci95, abs=1e-12)
    for item in bundled.items:  # the FLAC holds the published samples
        ours, _ = soundfile.read(p835_reference.BUNDLED / item.file, dtype="int16")
        theirs, _ = soundfile.read(SHARED / "degraded_WB_16KHz" / f"{item.clip_id}.wav", dtype="int16")
        np.testing.assert_array_equal(ours, theirs)


def test_the_bundled_set_fits_in_ten_megabytes():
    assert sum(p.stat().st_size for p in p835_reference.BUNDLED.iterdir()) < 10e6


def test_a_rated_run_scores_the_rated_files_and_marks_named_engines_not_rated(tmp_path, monkeypatch, capsys):
    """--dataset rated end to end on six files: the passthrough's scores against the ratings,
    speex run too and named as not rated; SI-SDR only, so it takes a second or two."""
    import json

    from nsbench.cli import main

    folder = tmp_path / "set"
    folder.mkdir()
    rng = np.random.default_rng(4)
    clean = (0.3 * rng.normal(size=16000)).astype(np.float32)
    soundfile.write(folder / "src.wav", clean, 16000)
    lines = ["file,condition,reference,mos,mos_votes,mos_std,mos_ci95"]
    for number, noise in enumerate([0.01, 0.05, 0.1, 0.2, 0.4, 0.8]):
        soundfile.write(folder / f"n{number}.wav", np.clip(clean + noise * rng.normal(size=16000), -1, 1).astype(np.float32), 16000)
        lines.append(f"n{number}.wav,c{number // 2},src.wav,{4.5 - 0.6 * number},8,0.7,0.49")
    (folder / "ratings.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache"))
    code = main(["--dataset", "rated", "--data-folder", str(folder), "--engine", "speex", "--metric", "si_sdr",
                 "--results-folder", str(tmp_path / "results"), "--no-plots", "--no-html"])
    printed = capsys.readouterr().out
    assert code == 0 and "not rated (outputs nobody rated, left out of the agreement): speex" in printed
    (run,) = [p for p in (tmp_path / "results").iterdir() if p.is_dir() and not p.is_symlink()]
    payload = json.loads((run / "human-agreement.json").read_text())
    assert payload["rated_engine"] == "passthrough" and payload["not_rated"] == ["speex"]
    file_row = next(r for r in payload["human"] if r["level"] == "file")
    assert file_row["n"] == 6 and file_row["spearman"] == pytest.approx(1.0)  # less noise, higher SI-SDR and rating
    assert next(r for r in payload["human"] if r["level"] == "condition")["n"] == 3
