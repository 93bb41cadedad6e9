"""The dns2020-real adapter (a set without a clean reference) on fixtures in its
exact published layout (tests/helpers/noref_layouts.py)."""
from __future__ import annotations

import collections

import numpy as np
import pytest
import soundfile

from nsbench.builtin.datasets import dns2020_real
from nsbench.plugins.errors import UserError

from tests.helpers.noref_layouts import RATE, make_folder, shared_names


# Real names from the set, the awkward ones: YouTube ids starting with "-" or
# holding "_" and "-", a category word inside an id, Microsoft names with "-".
REAL_NAMES = [
    "audioset_realrec_car_-_8fjPTviLo.wav",
    "audioset_realrec_airconditioner_2TE3LoA2OUQ.wav",
    "audioset_realrec_babycry_door_x-_1.wav",  # a category word inside the id: the first one counts
    "ms_realrec_headset_Headphone-cafeteria-spk3-1.wav",
    "ms_realrec_speakerphone_car_noise-2.wav",
]


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
