"""The dns2020 and voicebank adapters on fixtures in their exact published layouts,
and Picovoice's remixer (nsbench.remix) against hand computations.

The DNS fixture uses the 150 real noisy file names of the DNS 2020 synthetic
no_reverb test set (tests/data/dns2020_noisy_names.txt), with short audio.
"""
from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench import remix
from nsbench.builtin.datasets import dns2020, voicebank
from nsbench.cli import main
from nsbench.plugins.types import ClipError, UserError

NAMES_FILE = Path(__file__).resolve().parents[1] / "data" / "dns2020_noisy_names.txt"
NOISY_NAMES = NAMES_FILE.read_text().split()
PICOVOICE_PATTERN = re.compile(r"clnsp\d+_(.+)_snr\d+_tl-\d+_fileid_(\d+)\.wav")
RATE = 16000
VB_RATE = 48000


def speechlike(seed: int, samples: int, rate: int = RATE) -> np.ndarray:
    """A harmonic tone, amplitude-modulated, so frames differ in power."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / rate
    f0 = 100 + 20 * rng.random()
    tone = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6))
    return 0.1 * tone * (0.55 + 0.45 * np.sin(2 * np.pi * 3 * t))


def write_int16(path: Path, audio: np.ndarray, rate: int = RATE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio, rate, subtype="PCM_16")


def file_id(name: str) -> str:
    return re.search(r"fileid_(\d+)\.wav$", name).group(1)


def file_snr(name: str) -> int:
    return int(re.search(r"_snr(\d+)_", name).group(1))


def make_dns(root: Path, names: list[str] = NOISY_NAMES, seconds: float = 0.5) -> Path:
    """clean/clean_fileid_<ID>.wav and noisy/<name>, int16 16 kHz, noise at the
    SNR the name states (over the whole clip)."""
    samples = int(seconds * RATE)
    for name in names:
        ident = int(file_id(name))
        clean = speechlike(ident, samples)
        noise = np.random.default_rng(1000 + ident).standard_normal(samples)
        noise *= np.sqrt(np.sum(clean**2) / np.sum(noise**2) / 10 ** (file_snr(name) / 10))
        write_int16(root / "clean" / f"clean_fileid_{ident}.wav", clean)
        write_int16(root / "noisy" / name, clean + noise)
    return root


@pytest.fixture(scope="module")
def dns_root(tmp_path_factory) -> Path:
    return make_dns(tmp_path_factory.mktemp("DNS-Challenge") / "synthetic" / "no_reverb")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("NSBENCH_CACHE", str(folder))
    return folder


# --------------------------------------------------------------------------- DNS pairing and labels


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


# --------------------------------------------------------------------------- the remixer


def test_peak_frame_power_drops_the_trailing_partial_frame_as_picovoice_does():
    # 1200 samples: frames 0-511 and 512-1023 count; 1024-1199 (176 samples) is
    # dropped by Picovoice's `pcm.size // 512`. The tail is the loudest part, so
    # counting or zero-padding it would change the answer.
    x = np.concatenate([np.full(512, 0.1), np.full(512, 0.2), np.full(176, 1.0)])
    assert remix.peak_frame_power(x) == pytest.approx(512 * 0.2**2)  # 20.48, not 176
    assert remix.peak_frame_power(x[::-1]) == pytest.approx(max(176 * 1.0 + 336 * 0.04, 512 * 0.04))
    with pytest.raises(ValueError, match="shorter than one 512-sample"):
        remix.peak_frame_power(np.ones(511))


def test_remix_scales_the_noise_by_hand_computed_gain():
    clean = np.concatenate([np.full(512, 0.1), np.full(512, 0.2), np.full(176, 1.0)])
    noise = np.concatenate([np.full(512, 0.05), np.zeros(512), np.full(176, 0.9)])
    # power(clean) = 20.48, power(noise) = 512 * 0.0025 = 1.28 (tail ignored):
    # at 0 dB the gain is sqrt(20.48 / 1.28) = 4; at 20 dB, 0.4.
    np.testing.assert_allclose(remix.remix(clean, clean + noise, 0.0), clean + 4 * noise)
    np.testing.assert_allclose(remix.remix(clean, clean + noise, 20.0), clean + 0.4 * noise)


@pytest.mark.parametrize("snr_db", [-10.0, 0.0, 7.5, 30.0])
def test_remix_snr_equals_the_target_by_peak_frame_power(snr_db):
    rng = np.random.default_rng(3)
    clean = speechlike(5, 5000)
    noisy = clean + 0.3 * rng.standard_normal(5000) * np.linspace(0.2, 1, 5000)
    mixed = remix.remix(clean, noisy, snr_db)
    measured = 10 * np.log10(remix.peak_frame_power(clean) / remix.peak_frame_power(mixed - clean))
    assert measured == pytest.approx(snr_db, abs=1e-9)


def test_remix_refuses_what_has_no_snr():
    clean = speechlike(1, 2048)
    with pytest.raises(ValueError, match="no noise"):
        remix.remix(clean, clean, 0.0)
    with pytest.raises(ValueError, match="silent"):
        remix.remix(np.zeros(2048), clean, 0.0)
    with pytest.raises(ValueError, match="equal length"):
        remix.remix(clean, clean[:-1], 0.0)


def test_to_pcm16_floors_and_clips_like_libsndfile():
    values = np.array([0.7, 0.5, -0.3, 1.5, 2.5, -2.5, 40000, -40000, 32767.2, -32768.0]) / 32768
    np.testing.assert_array_equal(remix.to_pcm16(values), [0, 0, -1, 1, 2, -3, 32767, -32768, 32767, -32768])


def test_to_pcm16_matches_what_soundfile_writes(tmp_path):
    version = tuple(int(p) for p in re.findall(r"\d+", soundfile.__libsndfile_version__)[:3])
    if version > (1, 2, 2):
        pytest.skip("libsndfile after 1.2.2 rounds to nearest; Picovoice's results predate it")
    audio = np.random.default_rng(0).uniform(-1.2, 1.2, 50000)
    soundfile.write(str(tmp_path / "x.wav"), audio, RATE)  # Picovoice's call: default subtype PCM_16
    np.testing.assert_array_equal(soundfile.read(str(tmp_path / "x.wav"), dtype="int16")[0], remix.to_pcm16(audio))


# --------------------------------------------------------------------------- remixed clips and the cache


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
    """Counts calls of nsbench.remix.remix (monkeypatched): the second load
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


# --------------------------------------------------------------------------- the CLI, end to end


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


# --------------------------------------------------------------------------- VoiceBank-DEMAND

VB_LOG = {"p232_001": ("living", "2.5"), "p232_002": ("bus", "7.5"), "p257_001": ("living", "2.5"), "p257_434": ("cafe", "17.5")}


def make_voicebank(root: Path, with_log: bool = True, seconds: float = 0.5) -> Path:
    for index, name in enumerate(VB_LOG):
        clean = speechlike(index, int(seconds * VB_RATE), VB_RATE)
        noise = 0.01 * np.random.default_rng(index).standard_normal(len(clean))
        write_int16(root / "clean_testset_wav" / f"{name}.wav", clean, VB_RATE)
        write_int16(root / "noisy_testset_wav" / f"{name}.wav", clean + noise, VB_RATE)
    if with_log:
        log = "".join(f"{name} {noise} {snr}\n" for name, (noise, snr) in VB_LOG.items())
        (root / "logfiles").mkdir()
        (root / "logfiles" / "log_testset.txt").write_text(log)
    return root


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
