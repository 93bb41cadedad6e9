"""STOI and ESTOI (nsbench.builtin.metrics.intelligibility) against pystoi: its
values, constants and steps, bit for bit, in any alignment, thread count and process."""
from __future__ import annotations

import importlib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from nsbench.plugins.errors import MetricUndefined

from tests.helpers.metric_signals import SR, inputs, rng, speechlike

intelligibility = importlib.import_module("nsbench.builtin.metrics.intelligibility")


@pytest.mark.parametrize("extended", [False, True])
def test_stoi_equals_pystoi(extended):
    """To the last bits pystoi itself leaves to chance: its random state (seeded
    as ours) and its BLAS threads (one, as the harness scores)."""
    pystoi = pytest.importorskip("pystoi")
    from threadpoolctl import threadpool_limits

    clean = speechlike(2.0, 20)
    output = clean + 0.1 * speechlike(2.0, 21)
    np.random.seed(0)
    with threadpool_limits(limits=1):
        expected = pystoi.stoi(clean.astype(np.float64), output.astype(np.float64), SR, extended=extended)
    assert intelligibility.stoi(clean, output, SR, extended=extended) == pytest.approx(expected, abs=1e-12)
    metric = intelligibility.estoi_metric if extended else intelligibility.stoi_metric
    assert metric(inputs(output, clean, output)) == pytest.approx(expected, abs=1e-12)
    assert 0.3 < expected < 1.0


def gated_speechlike() -> tuple[np.ndarray, np.ndarray]:
    """A clean clip and an output that falls to digital silence for a second: there
    pystoi's ESTOI hangs on numpy's global random state and on BLAS's summation order."""
    clean = speechlike(4.0, 23)
    output = clean + 0.3 * speechlike(4.0, 24)
    output[SR: 2 * SR] = 0.0
    return clean, output


def at_offset(array: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``array`` that starts ``offset`` bytes past a 64-byte boundary."""
    buffer = np.empty(array.nbytes + 128, dtype=np.uint8)
    start = -buffer.ctypes.data % 64 + offset
    copy = buffer[start: start + array.nbytes].view(array.dtype)
    copy[:] = array
    return copy


def test_stoi_and_estoi_are_bit_identical_whatever_the_alignment_threads_and_random_state():
    pytest.importorskip("pystoi")
    from threadpoolctl import threadpool_limits

    clean, output = gated_speechlike()
    for extended, metric in ((False, intelligibility.stoi_metric), (True, intelligibility.estoi_metric)):
        values = []
        for offset in (0, 4, 8, 16, 32, 48):
            for threads in (1, 2):
                np.random.standard_normal(1 + offset)  # moves numpy's global generator
                with threadpool_limits(limits=threads):
                    c32, o32 = at_offset(clean, offset), at_offset(output, offset)
                    values.append(metric(inputs(o32, c32, o32)))  # float32, as the runner passes
                    c64, o64 = at_offset(clean.astype(np.float64), offset), at_offset(output.astype(np.float64), offset)
                    values.append(intelligibility.stoi(c64, o64, SR, extended=extended))
        assert values == [values[0]] * len(values), (extended, sorted(set(values)))


def test_stoi_and_estoi_in_a_fresh_process_equal_the_values_here(tmp_path):
    pytest.importorskip("pystoi")
    clean, output = gated_speechlike()
    np.save(tmp_path / "clean.npy", clean)
    np.save(tmp_path / "output.npy", output)
    here = [repr(intelligibility.stoi(clean, output, SR, extended=extended)) for extended in (False, True)]
    code = (
        "import importlib, numpy as np\n"
        "m = importlib.import_module('nsbench.builtin.metrics.intelligibility')\n"
        f"clean, output = np.load({str(tmp_path / 'clean.npy')!r}), np.load({str(tmp_path / 'output.npy')!r})\n"
        f"for extended in (False, True): print(repr(m.stoi(clean, output, {SR}, extended=extended)))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == here


def test_stoi_too_short_is_undefined():
    pytest.importorskip("pystoi")
    clean = speechlike(0.25, 22)  # about 19 frames at 10 kHz
    for extended in (False, True):
        with pytest.raises(MetricUndefined, match="30 frames"):
            intelligibility.stoi(clean, clean, SR, extended=extended)


def long_speechlike(seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """A clean clip with passages pystoi drops as silent, and an output that falls
    to digital silence for a second (where ESTOI's EPS-level noise is all a band
    row holds, so a misplaced draw of it moves the score by ~1e-4)."""
    clean = speechlike(seconds, 25)
    output = clean + 0.3 * speechlike(seconds, 26)
    clean[3 * SR: 5 * SR] *= 1e-3  # 60 dB down: dropped
    clean[11 * SR: 11 * SR + SR // 3] = 0.0
    output[7 * SR: 8 * SR] = 0.0
    return clean, output


@pytest.mark.parametrize("block_frames", [30, 523])
@pytest.mark.parametrize("extended", [False, True])
def test_long_clips_scored_block_by_block_equal_the_whole_clip_steps(monkeypatch, extended, block_frames):
    """Clips over WHOLE_CLIP_SAMPLES at 10 kHz go block by block; forced here on 20 s,
    with blocks of one segment (30 frames) and of 523 frames. The frames, band
    energies, segments and ESTOI's noise are the whole-clip steps' bits; only the
    order of the final sum differs, by a few 1e-16."""
    pytest.importorskip("pystoi")
    clean, output = long_speechlike(20.0)
    whole = intelligibility.stoi(clean, output, SR, extended=extended)
    monkeypatch.setattr(intelligibility, "WHOLE_CLIP_SAMPLES", 0)
    monkeypatch.setattr(intelligibility, "BLOCK_FRAMES", block_frames)
    blockwise = intelligibility.stoi(clean, output, SR, extended=extended)
    assert blockwise == pytest.approx(whole, rel=0, abs=1e-13)
    assert intelligibility.stoi(clean, output, SR, extended=extended) == blockwise  # deterministic
    assert 0.3 < blockwise < 1.0


def test_long_clips_block_by_block_keep_memory_bounded(monkeypatch):
    """pystoi's steps hold the whole clip's STFT and segments: ~40x the float32
    audio. Block by block the peak is the 10 kHz float64 copies and resampling."""
    pytest.importorskip("pystoi")
    import tracemalloc

    clean, output = long_speechlike(60.0)
    monkeypatch.setattr(intelligibility, "WHOLE_CLIP_SAMPLES", 0)
    monkeypatch.setattr(intelligibility, "BLOCK_FRAMES", 256)
    for extended in (False, True):
        tracemalloc.start()
        try:
            intelligibility.stoi(clean, output, SR, extended=extended)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8 * clean.nbytes, (extended, peak / clean.nbytes)


def test_long_clips_too_few_frames_after_silence_removal_are_undefined(monkeypatch):
    pytest.importorskip("pystoi")
    clean = speechlike(10.0, 27)
    clean[SR // 5:] *= 1e-3  # under 30 frames left
    monkeypatch.setattr(intelligibility, "WHOLE_CLIP_SAMPLES", 0)
    monkeypatch.setattr(intelligibility, "BLOCK_FRAMES", 64)
    for extended in (False, True):
        with pytest.raises(MetricUndefined, match="30 frames"):
            intelligibility.stoi(clean, clean, SR, extended=extended)


def pystoi_reference(clean: np.ndarray, output: np.ndarray, rate: int, extended: bool) -> float:
    """pystoi.stoi itself, with the random state and BLAS threads the module
    docstring names (seeded as ours; one thread, as the harness scores)."""
    import pystoi
    from threadpoolctl import threadpool_limits

    np.random.seed(0)
    with threadpool_limits(limits=1):
        return pystoi.stoi(clean.astype(np.float64), output.astype(np.float64), rate, extended=extended)


@pytest.mark.parametrize("rate", [8000, 16000, 44100, 48000])
@pytest.mark.parametrize("extended", [False, True])
def test_fast_stoi_equals_pystoi_on_generated_clips(rate, extended):
    """Vectorised frames, STFT and ESTOI noise against pystoi's loops: within
    1e-12 (the module docstring's bound), at pystoi's rate and resampled."""
    pytest.importorskip("pystoi")
    t = np.arange(int(3.0 * rate)) / rate
    clean = (0.1 * (0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)) * rng(30).standard_normal(t.size)).astype(np.float32)
    clean[: rate // 3] *= 1e-3  # a quiet lead-in: dropped as silent frames
    output = (0.7 * clean + 0.05 * rng(31).standard_normal(t.size)).astype(np.float32)
    expected = pystoi_reference(clean, output, rate, extended)
    assert intelligibility.stoi(clean, output, rate, extended=extended) == pytest.approx(expected, rel=0, abs=1e-12)


@pytest.mark.parametrize("extended", [False, True])
def test_fast_stoi_equals_pystoi_on_real_recordings(extended):
    """Real speech (LibriSpeech, CMU Arctic) in a real kitchen noise at 0 dB,
    and the same mixture turned down and high-passed, as an engine's output."""
    pytest.importorskip("pystoi")
    import soundfile

    from tests.helpers.paths import SHARED_AUDIO

    if not (SHARED_AUDIO / "speech").is_dir():
        pytest.skip(f"no shared recordings at {SHARED_AUDIO}")
    noise, noise_rate = soundfile.read(SHARED_AUDIO / "noise" / "speechcommands_doing_the_dishes.wav", dtype="float32")
    for name in ("libri1_garth_comira_M.wav", "cmu_arctic_axb_a0004_F.wav"):
        clean, rate = soundfile.read(SHARED_AUDIO / "speech" / name, dtype="float32")
        assert rate == noise_rate
        part = noise[: len(clean)] * np.float32(np.std(clean) / np.std(noise[: len(clean)]))
        noisy = clean + part
        processed = 0.5 * (noisy - np.concatenate([[0.0], noisy[:-1]])).astype(np.float32)
        for output in (noisy, processed):
            expected = pystoi_reference(clean, output, rate, extended)
            assert intelligibility.stoi(clean, output, rate, extended=extended) == pytest.approx(expected, rel=0, abs=1e-12)


def test_vectorised_steps_equal_pystois_loops_bit_for_bit():
    pytest.importorskip("pystoi")
    from pystoi import utils

    clean, output = gated_speechlike()
    x, y = (intelligibility._at_pystoi_rate(signal, SR) for signal in (clean, output))
    x_sil, y_sil = utils.remove_silent_frames(x, y, 40, 256, 128)
    reference = intelligibility.clean_bands(intelligibility.ReferenceAudio(clean, output, SR))
    frames = intelligibility._windowed_frames(y)[reference["kept"]]
    assert np.array_equal(intelligibility._overlap_and_add(frames), y_sil)
    assert np.array_equal(intelligibility._stft(y_sil), utils.stft(y_sil, 256, 512, overlap=2))
    assert np.array_equal(reference["bands"], intelligibility._third_octave_bands(utils.stft(x_sil, 256, 512, overlap=2), intelligibility_obm()))
    shape = (7, 15, 30)
    generator = np.random.RandomState(0)
    assert all(np.array_equal(drawn, generator.standard_normal(shape)) for drawn in intelligibility._pystoi_noise(shape))


def intelligibility_obm() -> np.ndarray:
    from pystoi.stoi import OBM

    return OBM


def test_a_shared_clean_side_gives_the_same_bits():
    pytest.importorskip("pystoi")
    clean, output = gated_speechlike()
    reference = intelligibility.clean_bands(intelligibility.ReferenceAudio(clean, output, SR))
    for extended in (False, True):
        alone = intelligibility.stoi(clean, output, SR, extended=extended)
        assert intelligibility.stoi(clean, output, SR, extended=extended, reference=reference) == alone


def test_stoi_follows_the_installed_pystoi_version():
    pytest.importorskip("pystoi")
    assert intelligibility.PYSTOI_VERSION == metadata.version("pystoi")
    assert intelligibility.pystoi_version() == metadata.version("pystoi")


def test_stoi_keeps_pystois_constants_and_band_matrix():
    stoi_module = pytest.importorskip("pystoi.stoi")
    for name in ("FS", "N_FRAME", "NFFT", "NUMBAND", "MINFREQ", "N", "BETA", "DYN_RANGE"):
        assert getattr(intelligibility, name) == getattr(stoi_module, name), name
    assert np.array_equal(intelligibility.OBM, stoi_module.OBM)
    assert intelligibility._EPS == stoi_module.utils.EPS


def test_overlap_and_add_gives_pystois_bits_signed_zeros_included():
    utils = pytest.importorskip("pystoi.utils")
    rng = np.random.default_rng(5)
    frames = rng.standard_normal((40, 256))
    frames[3] = -0.0  # pystoi adds every sample to a zero: -0.0 comes out as +0.0
    frames[7, :128] = 0.0
    frames[6, 128:] = -0.0
    for count in (1, 2, 40):
        ours = intelligibility._overlap_and_add(frames[:count])
        theirs = utils._overlap_and_add(frames[:count], 128)
        assert ours.shape == theirs.shape
        assert np.array_equal(ours, theirs) and np.array_equal(np.signbit(ours), np.signbit(theirs))


def test_scoring_stoi_never_imports_pystoi_or_scipy_signal():
    """pystoi's import pulls in scipy.signal: 1.0-1.4 s of CPU per process."""
    code = (
        "import importlib, sys\n"
        "import numpy as np\n"
        "m = importlib.import_module('nsbench.builtin.metrics.intelligibility')\n"
        "rng = np.random.default_rng(0)\n"
        "for rate in (8000, 16000, 48000):\n"
        "    clean = rng.standard_normal(rate * 2)\n"
        "    m.stoi(clean, clean + rng.standard_normal(rate * 2), rate, extended=True)\n"
        "print(sorted(name for name in sys.modules if name.startswith(('pystoi', 'scipy.signal'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert result.stdout.strip() == "[]", result.stdout


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_stoi_of_a_reference_with_nan_or_inf_says_so(bad):
    """Called directly (the run loop fails such a clip before any metric):
    pystoi's steps would drop every frame and numpy would say "window shape
    cannot be larger than input array shape"."""
    from nsbench.builtin.metrics import intelligibility

    clean = rng(40).standard_normal(2 * SR)
    processed = clean + 0.1 * rng(41).standard_normal(clean.size)
    clean[3] = bad
    for extended in (False, True):
        with pytest.raises(ValueError, match=r"^the clean reference has 1 NaN or Inf sample \(the first at sample 3\): STOI needs finite samples$"):
            intelligibility.stoi(clean, processed, SR, extended=extended)
    with pytest.raises(ValueError, match="the processed signal has 1 NaN"):
        intelligibility.stoi(processed, clean, SR)
    # the registered metrics share the clean side across engines: checked before it
    for metric in (intelligibility.stoi_metric, intelligibility.estoi_metric):
        with pytest.raises(ValueError, match="the clean reference has 1 NaN or Inf sample"):
            metric(inputs(processed, clean, processed))
