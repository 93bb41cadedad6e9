"""The dns2020-blind adapter (a set without a clean reference) on fixtures in its
exact published layout (tests/helpers/noref_layouts.py)."""
from __future__ import annotations

import collections
import json

import pytest

from nsbench.builtin.datasets import dns2020_blind
from nsbench.cli import main
from nsbench.plugins.errors import UserError

from tests.helpers.noref_layouts import make_folder, shared_names


BLIND_NAMES = ["noreverb_fileid_0.wav", "noreverb_fileid_10.wav", "noreverb_fileid_2.wav",
               "reverb_fileid_0.wav", "realrec_fileid_299.wav"]


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
