"""The dns2020-real and dns2020-blind adapters (sets without a clean reference)
on fixtures in their exact published layouts.

The full fixtures use the real file names from ../shared/dns2020_real_names.txt
and ../shared/dns2020_blind_names.txt (skipped without ../shared); a smaller
fixture of names written here, the awkward ones among them, runs everywhere.
Every file holds real 16 kHz audio: a harmonic, amplitude-modulated tone with
noise, written as 16-bit WAV as the set is.
"""
from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench.builtin.datasets import dns2020_blind, dns2020_real
from nsbench.cli import main
from nsbench.plugins.types import UserError

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
RATE = 16000
# Real names from the set, the awkward ones: YouTube ids starting with "-" or
# holding "_" and "-", a category word inside an id, Microsoft names with "-".
REAL_NAMES = [
    "audioset_realrec_car_-_8fjPTviLo.wav",
    "audioset_realrec_airconditioner_2TE3LoA2OUQ.wav",
    "audioset_realrec_babycry_door_x-_1.wav",  # a category word inside the id: the first one counts
    "ms_realrec_headset_Headphone-cafeteria-spk3-1.wav",
    "ms_realrec_speakerphone_car_noise-2.wav",
]
BLIND_NAMES = ["noreverb_fileid_0.wav", "noreverb_fileid_10.wav", "noreverb_fileid_2.wav",
               "reverb_fileid_0.wav", "realrec_fileid_299.wav"]


def shared_names(name: str) -> list[str]:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"needs ../shared/{name}")
    return path.read_text().split()


def recording(seed: int, seconds: float = 0.25) -> np.ndarray:
    """A voice-like tone in noise, different per file."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    f0 = 100 + 80 * rng.random()
    tone = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 6))
    return 0.1 * tone * (0.55 + 0.45 * np.sin(2 * np.pi * 3 * t)) + 0.02 * rng.standard_normal(len(t))


def make_folder(root: Path, names: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for seed, name in enumerate(names):
        soundfile.write(str(root / name), recording(seed), RATE, subtype="PCM_16")
    return root


# --------------------------------------------------------------------------- dns2020-real


def test_real_names_written_here_parse_to_their_cells(tmp_path):
    root = make_folder(tmp_path / "real_recordings", REAL_NAMES)
    sources = dns2020_real.clips({"data_folder": str(root)})
    cells = {s.clip_id: (s.labels["source"], s.labels["category"]) for s in sources}
    assert cells == {
        "audioset_realrec_car_-_8fjPTviLo": ("audioset", "car"),
        "audioset_realrec_airconditioner_2TE3LoA2OUQ": ("audioset", "airconditioner"),
        "audioset_realrec_babycry_door_x-_1": ("audioset", "babycry"),
        "ms_realrec_headset_Headphone-cafeteria-spk3-1": ("ms", "headset"),
        "ms_realrec_speakerphone_car_noise-2": ("ms", "speakerphone"),
    }
    assert all(not s.has_reference for s in sources)
    clip = sources[0].load()
    assert clip.clean is None and clip.sample_rate == RATE
    written = soundfile.read(str(root / f"{sources[0].clip_id}.wav"), dtype="float32")[0]
    np.testing.assert_array_equal(clip.noisy, written)


def test_all_300_real_names_parse_with_the_published_counts(tmp_path):
    names = shared_names("dns2020_real_names.txt")
    root = make_folder(tmp_path / "DNS-Challenge" / "datasets" / "test_set" / "real_recordings", names)
    sources = dns2020_real.clips({"data_folder": str(root)})
    assert len(sources) == 300 and len({s.clip_id for s in sources}) == 300
    counts = collections.Counter(s.labels["category"] for s in sources)
    assert counts == {"printer": 27, "car": 26, "barking": 21, "door": 20, "munching": 18, "airconditioner": 13,
                      "typing": 9, "babycry": 7, "breathing": 5, "clatter": 4, "headset": 57, "speakerphone": 93}
    assert collections.Counter(s.labels["source"] for s in sources) == {"audioset": 150, "ms": 150}
    # Each category under its own source only.
    for source in sources:
        assert source.labels["category"] in dns2020_real.CATEGORIES[source.labels["source"]]
    description = dns2020_real.describe({"data_folder": str(root)})
    assert description["files"] == 300 and description["references"] == "none"


@pytest.mark.parametrize("name", [
    "audioset_realrec_vacuum_abc.wav",       # unknown category
    "ms_realrec_car_abc.wav",                # a category of the other source
    "youtube_realrec_car_abc.wav",           # unknown source
    "audioset_realrec_car.wav",              # no id
])
def test_an_unknown_real_name_is_one_clear_error(tmp_path, name):
    root = make_folder(tmp_path / "real_recordings", [REAL_NAMES[0], name])
    with pytest.raises(UserError, match=rf"1 files under .* are not named as DNS-Challenge .*real_recordings.*: {name}$"):
        dns2020_real.clips({"data_folder": str(root)})
    with pytest.raises(ValueError, match="known category"):
        dns2020_real.parse_name(name)


def test_a_folder_without_wav_files_says_what_it_found(tmp_path):
    (tmp_path / "real_recordings").mkdir()
    (tmp_path / "real_recordings" / "README.md").write_text("x")
    with pytest.raises(UserError, match=r"dns2020-real expects the .wav files of .* found: README.md"):
        dns2020_real.clips({"data_folder": str(tmp_path / "real_recordings")})


# --------------------------------------------------------------------------- dns2020-blind


def test_blind_names_written_here_parse_in_numeric_order(tmp_path):
    root = make_folder(tmp_path / "blind_test_set", BLIND_NAMES)
    sources = dns2020_blind.clips({"data_folder": str(root)})
    assert [s.clip_id for s in sources] == ["noreverb_fileid_0", "noreverb_fileid_2", "noreverb_fileid_10",
                                            "realrec_fileid_299", "reverb_fileid_0"]
    assert [s.labels["condition"] for s in sources] == ["noreverb"] * 3 + ["realrec", "reverb"]
    assert all(not s.has_reference and s.load().clean is None for s in sources)


def test_all_600_blind_names_parse_with_the_published_counts(tmp_path):
    names = shared_names("dns2020_blind_names.txt")
    root = make_folder(tmp_path / "DNS-Challenge" / "datasets" / "blind_test_set", names)
    sources = dns2020_blind.clips({"data_folder": str(root)})
    assert len(sources) == 600
    assert collections.Counter(s.labels["condition"] for s in sources) == {"noreverb": 150, "reverb": 150, "realrec": 300}
    for condition, count in (("noreverb", 150), ("reverb", 150), ("realrec", 300)):
        ids = sorted(int(s.labels["fileid"]) for s in sources if s.labels["condition"] == condition)
        assert ids == list(range(count))


@pytest.mark.parametrize("name", ["clean_fileid_0.wav", "reverb_fileid_x.wav", "noreverb_fileid_1.flac.wav", "realrec_0.wav"])
def test_an_unknown_blind_name_is_one_clear_error(tmp_path, name):
    root = make_folder(tmp_path / "blind_test_set", [BLIND_NAMES[0], name])
    with pytest.raises(UserError, match=rf"1 files under .* are not named as DNS-Challenge datasets/blind_test_set .*: {name}$"):
        dns2020_blind.clips({"data_folder": str(root)})


def test_cli_blind_run_has_cells_per_condition_and_no_intrusive_metric(tmp_path, monkeypatch):
    monkeypatch.setenv("NSBENCH_CACHE", str(tmp_path / "cache"))
    root = make_folder(tmp_path / "blind_test_set", BLIND_NAMES)
    argv = ["--dataset", "dns2020-blind", "--data-folder", str(root), "--engine", "passthrough", "--quiet",
            "--no-plots", "--no-html", "--results-folder", str(tmp_path / "results"), "--metric", "rtf_cpu"]
    assert main(argv) == 0
    result = json.loads((tmp_path / "results" / "dns2020-blind" / "passthrough.json").read_text())
    assert sorted(cell["cell"]["condition"] for cell in result["cells"]) == ["noreverb", "realrec", "reverb"]
    assert result["failures"] == 0 and result["reference_use"]["clips_without_reference"] == 5
