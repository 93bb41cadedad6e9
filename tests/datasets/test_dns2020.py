"""The dns2020 adapter on a fixture in its exact published layout (150 real
noisy file names, tests/helpers/dns_layouts.py), with and without --remix."""
from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench.builtin.datasets import dns2020
from nsbench.builtin.datasets import dns2020_remix as remix
from nsbench.cli import main
from nsbench.plugins.errors import ClipError, UserError

from tests.helpers.dns_layouts import NOISY_NAMES, PICOVOICE_PATTERN, RATE, file_id, file_snr, make_dns, speechlike, write_int16


@pytest.fixture(scope="module")
def dns_root(tmp_path_factory) -> Path:
    return make_dns(tmp_path_factory.mktemp("DNS-Challenge") / "synthetic" / "no_reverb")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("NSBENCH_CACHE", str(folder))
    return folder


def test_the_names_file_holds_150_distinct_real_names():
    assert len(NOISY_NAMES) == 150 and len({file_id(n) for n in NOISY_NAMES}) == 150
    assert all(PICOVOICE_PATTERN.fullmatch(n) for n in NOISY_NAMES)


def test_all_150_pairs_by_file_id_with_picovoice_item_names(dns_root):
    sources = dns2020.clips({"data_folder": str(dns_root)})
    expected = {f"{m.group(2)}_{m.group(1)}" for m in map(PICOVOICE_PATTERN.fullmatch, NOISY_NAMES)}
    assert len(sources) == 150 and {s.clip_id for s in sources} == expected
    # Awkward stems: YouTube ids with dashes and underscores, digits, uploader names.
    ids = {s.clip_id for s in sources}
    assert {"268_traffic_248091_3", "0_3Wjw0nadnM4", "149_oDyn0_Ti63Q"} <= ids
    for stem in ("-ozcHS8vKhU", "s8-7-XXSGvQ", "uOZZEV1IcDI-copy_machine_426874_7",
                 "clatter_noise_431472__debsound__retro-bicycle-minsk-aist-20-ride-loop-rear-wheel_0"):
        assert sum(i.endswith(f"_{stem}") for i in ids) == 1, stem
    # Sorted by numeric file id, and every clip loads its own clean file.
    assert [int(s.labels["fileid"]) for s in sources] == sorted(int(file_id(n)) for n in NOISY_NAMES)
    for source in sources:
        clip = source.load()
        ident = int(source.labels["fileid"])
        expected_clean = soundfile.read(dns_root / "clean" / f"clean_fileid_{ident}.wav", dtype="float32")[0]
        np.testing.assert_array_equal(clip.clean, expected_clean)
        assert Path(clip.source_path).name.endswith(f"_fileid_{ident}.wav")
        assert clip.sample_rate == RATE and not clip.notes


def test_snr_label_comes_from_the_name(dns_root):
    sources = dns2020.clips({"data_folder": str(dns_root)})
    by_id = {s.labels["fileid"]: s.labels for s in sources}
    for name in NOISY_NAMES:
        assert by_id[file_id(name)]["snr_db"] == str(file_snr(name))
    assert by_id["268"] == {"snr_db": "0", "fileid": "268", "noise": "traffic", "noise_stem": "traffic_248091_3"}
    assert collections.Counter(s.labels["snr_db"] for s in sources)["6"] == 14


def test_noise_labels_are_categories_or_youtube(dns_root):
    labels = collections.Counter(s.labels["noise"] for s in dns2020.clips({"data_folder": str(dns_root)}))
    assert labels == {
        "youtube": 30, "vacuum": 12, "birds": 12, "bus": 11, "baby": 10, "wind": 10, "babble": 9,
        "washer": 9, "barking": 6, "air_conditioner": 4, "traffic": 4, "water": 4, "breath": 4,
        "chair": 3, "door": 3, "footsteps": 3, "fan_out": 3, "clatter_noise": 3, "car": 2,
        "train": 2, "squeaky": 2, "typing": 1, "copy_machine": 1, "drinking_water": 1, "dryer_output": 1,
    }


@pytest.mark.parametrize(
    "stem, label",
    [("DMTAv9mw_x8", "youtube"), ("Unt_WsHPhfA", "youtube"), ("-ozcHS8vKhU", "youtube"),
     ("babble_188218_15", "babble"), ("air_conditioner_151977_3", "air_conditioner"),
     ("uOZZEV1IcDI-copy_machine_426874_7", "copy_machine"),
     ("clatter_noise_166453__zabuhailo__metalworking-hammer-5_5", "clatter_noise"),
     ("not a known shape", "unknown")],
)
def test_noise_label_rules(stem, label):
    assert dns2020.noise_label(stem) == label


def test_unpaired_files_are_listed(tmp_path):
    root = make_dns(tmp_path / "no_reverb", NOISY_NAMES[:5])
    (root / "clean" / f"clean_fileid_{file_id(NOISY_NAMES[0])}.wav").unlink()
    write_int16(root / "clean" / "clean_fileid_9999.wav", np.zeros(RATE))
    write_int16(root / "noisy" / "stray.wav", np.zeros(RATE))
    with pytest.raises(UserError, match=r"3 files under .* do not pair by file id") as error:
        dns2020.clips({"data_folder": str(root)})
    message = str(error.value)
    assert f"noisy/{NOISY_NAMES[0]} (no clean/clean_fileid_{file_id(NOISY_NAMES[0])}.wav)" in message
    assert "clean/clean_fileid_9999.wav (no noisy file with fileid_9999)" in message
    assert "noisy/stray.wav (no fileid_<ID>.wav at the end)" in message


def test_missing_or_empty_clean_folder_says_what_was_expected_and_found(tmp_path):
    root = tmp_path / "no_reverb"
    (root / "noisy").mkdir(parents=True)
    (root / "README.md").write_text("x")
    with pytest.raises(UserError, match=r"expects clean/ and noisy/ under .*no_reverb.*no clean/ there, found: README\.md, noisy"):
        dns2020.clips({"data_folder": str(root)})
    (root / "clean").mkdir()
    (root / "clean" / "notes.txt").write_text("x")
    with pytest.raises(UserError, match=r"no clean_fileid_\*\.wav under .*no_reverb/clean; found: notes\.txt"):
        dns2020.clips({"data_folder": str(root)})


def test_the_parent_folder_gets_a_hint(dns_root):
    with pytest.raises(UserError, match=r"found: no_reverb; did you mean --data-folder .*synthetic/no_reverb\?"):
        dns2020.clips({"data_folder": str(dns_root.parent)})


def test_a_root_path_containing_clean_works(tmp_path):
    root = make_dns(tmp_path / "clean_data" / "no_reverb", NOISY_NAMES[:4])
    sources = dns2020.clips({"data_folder": str(root)})
    assert len(sources) == 4
    clip = sources[0].load()
    assert "/noisy/" in clip.source_path and not np.array_equal(clip.noisy, clip.clean)


def count_remix_calls(monkeypatch) -> list[float]:
    calls: list[float] = []
    real = remix.remix

    def counting(clean, noisy, snr_db):
        calls.append(snr_db)
        return real(clean, noisy, snr_db)

    monkeypatch.setattr(remix, "remix", counting)
    return calls


def test_remixed_clips_one_per_snr_with_the_snr_label(tmp_path, cache):
    root = make_dns(tmp_path / "no_reverb", NOISY_NAMES[:3])
    sources = dns2020.clips({"data_folder": str(root), "remix_snr_db": [0.0, 10.0]})
    assert [s.labels["snr_db"] for s in sources] == ["0", "10"] * 3
    first = min(NOISY_NAMES[:3], key=lambda name: int(file_id(name)))  # clips come in file id order
    assert sources[0].clip_id == f"{file_id(first)}_{PICOVOICE_PATTERN.fullmatch(first).group(1)}_remixed_0db"
    assert sources[1].clip_id == sources[0].clip_id.replace("_remixed_0db", "_remixed_10db")
    assert sources[0].labels["file_snr_db"] == str(file_snr(first))
    for source in sources:
        clip = source.load()
        target = float(source.labels["snr_db"])
        measured = 10 * np.log10(remix.peak_frame_power(clip.clean) / remix.peak_frame_power(clip.noisy - clip.clean))
        assert measured == pytest.approx(target, abs=0.05)  # 16-bit quantisation only
        # The remix is a 16-bit file, as Picovoice writes it.
        assert soundfile.info(clip.source_path).subtype == "PCM_16"
        assert Path(clip.source_path).parent == cache / "remix"
        assert not clip.notes  # nothing clipped at these SNRs


def test_a_clipped_remix_is_noted_and_clipped_like_the_16_bit_write(tmp_path, cache):
    root = tmp_path / "no_reverb"
    clean = 0.9 * np.sign(speechlike(2, RATE))  # loud: at -10 dB the remix exceeds full scale
    write_int16(root / "clean" / "clean_fileid_7.wav", clean)
    write_int16(root / "noisy" / "clnsp1_bus_1_0_snr5_tl-20_fileid_7.wav", clean + 0.1 * np.random.default_rng(0).standard_normal(RATE))
    [source] = dns2020.clips({"data_folder": str(root), "remix_snr_db": [-10.0]})
    clip = source.load()
    assert clip.noisy.max() == np.float32(32767 / 32768) and clip.noisy.min() == -1.0
    assert any(re.fullmatch(r"the remix at -10 dB reaches full scale on \d+ samples .*", note) for note in clip.notes)


def test_the_cache_is_reused_and_keyed_by_content(tmp_path, cache, monkeypatch):
    """Counts calls of dns2020_remix.remix (monkeypatched): the second load
    must read the cached file, not remix again."""
    root = make_dns(tmp_path / "no_reverb", NOISY_NAMES[:1])
    calls = count_remix_calls(monkeypatch)
    [source] = dns2020.clips({"data_folder": str(root), "remix_snr_db": [5.0]})
    first = source.load()
    path = Path(first.source_path)
    mtime = path.stat().st_mtime_ns
    second = source.load()
    assert calls == [5.0] and second.source_path == first.source_path and path.stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(first.noisy, second.noisy)
    assert not list(path.parent.glob(".remix-*"))  # no temporary file left behind
    # A changed input file is a new key, so a new remix.
    noisy_path = root / "noisy" / NOISY_NAMES[0]
    audio = soundfile.read(noisy_path)[0]
    write_int16(noisy_path, audio * 0.5)
    third = source.load()
    assert calls == [5.0, 5.0] and third.source_path != first.source_path
    # Another SNR is another key as well.
    assert remix.remix_key(b"c", b"n", 5.0) != remix.remix_key(b"c", b"n", 6.0)
    assert remix.remix_key(b"c", b"n", 5) == remix.remix_key(b"c", b"n", 5.0)


def test_a_pair_that_cannot_be_remixed_fails_that_clip(tmp_path, cache):
    root = tmp_path / "no_reverb"
    clean = speechlike(1, RATE)
    write_int16(root / "clean" / "clean_fileid_1.wav", clean)
    write_int16(root / "noisy" / "clnsp1_bus_1_0_snr5_tl-20_fileid_1.wav", clean)  # no noise at all
    [source] = dns2020.clips({"data_folder": str(root), "remix_snr_db": [0.0]})
    with pytest.raises(ClipError, match="cannot remix .*fileid_1.wav at 0 dB: noisy equals clean"):
        source.load()


def test_describe_names_the_folder_count_listing_and_remix(dns_root):
    plain = dns2020.describe({"data_folder": str(dns_root)})
    remixed = dns2020.describe({"data_folder": str(dns_root), "remix_snr_db": [0.0, 5.0]})
    assert plain["pairs"] == 150 and re.fullmatch(r"[0-9a-f]{64}", plain["listing_sha256"])
    assert "remix" not in plain and remixed["remix"]["snr_db"] == [0.0, 5.0]
    assert remixed["listing_sha256"] == plain["listing_sha256"]


def test_cli_remix_gives_one_row_per_snr(tmp_path, cache):
    root = make_dns(tmp_path / "no_reverb", NOISY_NAMES[:4], seconds=1.0)
    results = tmp_path / "results"
    argv = ["--dataset", "dns2020", "--data-folder", str(root), "--remix-snr-db", "0", "10",
            "--engine", "passthrough", "--metric", "stoi", "--metric", "si_sdr",
            "--results-folder", str(results), "--quiet"]
    assert main(argv) == 0
    result = json.loads((results / "dns2020" / "passthrough.json").read_text())
    assert result["clips"] == 8 and result["failures"] == 0
    assert [(c["cell"], c["clips"]) for c in result["cells"]] == [({"snr_db": "0"}, 4), ({"snr_db": "10"}, 4)]
    low, high = (c["metrics"]["stoi"]["mean"] for c in result["cells"])
    assert low < high < 1
    assert result["dataset_description"]["remix"]["snr_db"] == [0.0, 10.0]
    rows = [line for line in (results / "dns2020" / "report.md").read_text().splitlines()
            if re.match(r"\|\s*(0|10)\s*\|\s*passthrough\s*\|", line)]
    assert len(rows) == 2


def test_cli_missing_clean_folder_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "no_reverb" / "noisy").mkdir(parents=True)
    argv = ["--dataset", "dns2020", "--data-folder", str(tmp_path / "no_reverb"), "--quiet",
            "--results-folder", str(tmp_path / "results")]
    assert main(argv) == 2
    assert re.fullmatch(r"nsbench: error: dns2020 expects clean/ and noisy/ .*\n", capsys.readouterr().err)
