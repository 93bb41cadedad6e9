"""report.html's kept outputs (nsbench.report.output_spill): what the grid reads
back is what it read when each output was a 16-bit WAV file of its own."""
from __future__ import annotations

import numpy as np

from nsbench.report import listening_grid
from nsbench.report.output_spill import OutputSpill

RATE = 16000


def as_a_wav_file_gave(audio: np.ndarray, rate: int, folder) -> tuple[np.ndarray, int]:
    """The path before the spill: a 16-bit WAV file per output, read back."""
    path = folder / "output.wav"
    listening_grid.listening_copy(audio, rate, path)
    return listening_grid.read_excerpt(path)


def test_each_output_reads_back_bit_for_bit_as_its_wav_file_did(tmp_path):
    rng = np.random.default_rng(7)
    outputs = {
        ("alpha", "clip-1"): (rng.standard_normal(RATE) * 0.3).astype(np.float32),
        ("alpha", "clip-2"): (rng.standard_normal(RATE // 2) * 2.0).astype(np.float32),  # beyond full scale: clipped
        ("beta", "clip-1"): rng.standard_normal(RATE).astype(np.float64) * 0.5,  # float64, as an engine may return
        ("beta", "clip-2_seed3"): (rng.standard_normal((2, RATE)) * 0.2).astype(np.float32),  # two sources
        ("gamma", "long"): (rng.standard_normal(int((listening_grid.LISTEN_SECONDS + 1) * 8000)) * 0.1).astype(np.float32),
    }
    spill = OutputSpill()
    for (engine, run), audio in outputs.items():
        spill.keep(engine, run, audio, 8000 if engine == "gamma" else RATE)
    for (engine, run), audio in reversed(list(outputs.items())):  # any order, the last written included
        rate = 8000 if engine == "gamma" else RATE
        expected, expected_rate = as_a_wav_file_gave(audio, rate, tmp_path)
        got, got_rate = spill.read(engine, run)
        assert got_rate == expected_rate == rate
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert np.array_equal(got, expected)
    assert spill.read("gamma", "long")[0].shape == (int(listening_grid.LISTEN_SECONDS * 8000),)  # the excerpt only
    assert np.abs(spill.read("alpha", "clip-2")[0]).max() <= 1.0


def test_an_output_not_kept_reads_as_none_and_close_removes_the_files():
    spill = OutputSpill()
    spill.keep("alpha", "clip-1", np.zeros(RATE, dtype=np.float32), RATE)
    assert spill.read("alpha", "clip-9") is None  # the walk reaches the end of the file
    assert spill.read("beta", "clip-1") is None  # an engine with nothing kept
    assert spill.read("alpha", "clip-1")[0].shape == (RATE,)
    folder = spill.folder
    assert len(list(folder.iterdir())) == 1  # one file per engine, not one per output
    spill.close()
    assert not folder.exists()
    assert spill.read("alpha", "clip-1") is None


def test_engine_names_that_are_no_file_names_are_kept_apart():
    spill = OutputSpill()
    names = ["command:python3 model.py --in {input} --out {output}", "python:pkg.mod:name", "a/b"]
    for index, name in enumerate(names):
        spill.keep(name, "clip", np.full(RATE, 0.01 * (index + 1), dtype=np.float32), RATE)
    levels = [float(spill.read(name, "clip")[0][0]) for name in names]
    assert levels == sorted(levels) and len(set(levels)) == 3
    spill.close()
