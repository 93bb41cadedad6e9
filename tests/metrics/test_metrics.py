"""Built-in metrics against analytic values on seeded signals and against reference packages."""
from __future__ import annotations

import importlib
import math
import pickle
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pluggy
import pytest

from nsbench.plugins import hookspecs
from nsbench.plugins.records import MetricInputs
from nsbench.plugins.specs import MetricSpec
from nsbench.plugins.errors import MetricUndefined

sisdr = importlib.import_module("nsbench.builtin.metrics.sisdr")
intelligibility = importlib.import_module("nsbench.builtin.metrics.intelligibility")
levels = importlib.import_module("nsbench.builtin.metrics.levels")
realtime = importlib.import_module("nsbench.builtin.metrics.realtime")
MODULES = [sisdr, intelligibility, levels, realtime]

SR = 16000
SEG = 320  # 20 ms at 16 kHz
HALF_DB = 20 * math.log10(0.5)  # -6.0206 dB


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def zero_mean(x: np.ndarray) -> np.ndarray:
    return x - x.mean()


def orthogonal_noise(s: np.ndarray, snr_db: float, seed: int = 1) -> np.ndarray:
    """Zero-mean noise exactly orthogonal to zero-mean ``s`` with |s|^2/|n|^2 = 10^(snr/10)."""
    n = zero_mean(rng(seed).standard_normal(s.size))
    n -= (n @ s) / (s @ s) * s  # stays zero-mean because s is
    return n * math.sqrt((s @ s) / (n @ n) / 10 ** (snr_db / 10))


def inputs(output, clean, noisy, **times) -> MetricInputs:
    return MetricInputs(
        output=np.asarray(output, dtype=np.float32),
        clean=np.asarray(clean, dtype=np.float32),
        noisy=np.asarray(noisy, dtype=np.float32),
        sample_rate=SR,
        **times,
    )


def by_segment(*amplitudes: float, seed: int = 2) -> np.ndarray:
    """A signal of 20 ms segments, each of unit-power noise times its amplitude (float64)."""
    unit = rng(seed).standard_normal(SEG * len(amplitudes))
    unit /= np.sqrt(np.mean(unit**2))
    return unit * np.repeat(amplitudes, SEG)


def constant_segments(*values: float) -> np.ndarray:
    return np.repeat(np.asarray(values, dtype=np.float64), SEG)


# --------------------------------------------------------------------------- SI-SDR


@pytest.mark.parametrize("snr_db", [-10.0, 0.0, 5.0, 20.0, 40.0])
@pytest.mark.parametrize("zm", [False, True])
def test_si_sdr_equals_constructed_snr(snr_db, zm):
    s = zero_mean(rng(0).standard_normal(SR))
    n = orthogonal_noise(s, snr_db)
    assert sisdr.si_sdr(s + n, s, zero_mean=zm) == pytest.approx(snr_db, abs=0.01)


@pytest.mark.parametrize("gain", [0.1, 7.0])
@pytest.mark.parametrize("zm", [False, True])
def test_si_sdr_is_scale_invariant(gain, zm):
    s = rng(3).standard_normal(SR)
    est = s + 0.3 * rng(4).standard_normal(SR)
    base = sisdr.si_sdr(est, s, zero_mean=zm)
    assert -10 < base < 30
    assert sisdr.si_sdr(gain * est, s, zero_mean=zm) == pytest.approx(base, abs=1e-9)


def test_si_sdr_silence_and_identity():
    s = rng(5).standard_normal(1000)
    silent = np.zeros(1000)
    assert sisdr.si_sdr(s, silent) == -120.0
    assert sisdr.si_sdr(silent, silent) == -120.0  # silence is not perfect reconstruction
    assert sisdr.si_sdr(silent, s) == -120.0
    assert sisdr.si_sdr(s, s) == 120.0
    assert sisdr.si_sdr(s.astype(np.float32), s.astype(np.float32)) == 120.0
    assert sisdr.si_sdr(s, s, zero_mean=True) == 120.0


def test_si_sdr_orthogonal_estimate_is_floor():
    s = zero_mean(rng(6).standard_normal(SR))
    n = orthogonal_noise(s, 0.0)
    assert sisdr.si_sdr(n, s) == -120.0
    assert sisdr.si_sdr(n, s, zero_mean=True) == -120.0


def test_si_sdr_conventions_differ_on_dc_offset_in_estimate():
    # est = s + n + d*1 with s, n zero-mean and orthogonal. Without mean removal the
    # offset is orthogonal to s, so it adds N*d^2 to the noise:
    #   SI-SDR = 10log10(|s|^2 / (|n|^2 + N d^2));  with mean removal: 10log10(|s|^2/|n|^2).
    s = zero_mean(rng(7).standard_normal(SR))
    n = orthogonal_noise(s, 20.0)
    d = 0.5
    est = s + n + d
    expected_plain = 10 * math.log10((s @ s) / (n @ n + s.size * d**2))
    assert sisdr.si_sdr(est, s) == pytest.approx(expected_plain, abs=1e-9)
    assert sisdr.si_sdr(est, s, zero_mean=True) == pytest.approx(20.0, abs=1e-9)
    assert sisdr.si_sdr(est, s, zero_mean=True) - sisdr.si_sdr(est, s) > 10  # zm higher here


def test_si_sdr_conventions_differ_on_shared_dc_offset():
    # ref = s + d*1, est = ref + n (n orthogonal to s and to 1): without mean removal
    # the offset counts as signal: 10log10((|s|^2 + N d^2) / |n|^2) > 10log10(|s|^2/|n|^2).
    s = zero_mean(rng(8).standard_normal(SR))
    n = orthogonal_noise(s, 10.0)
    d = 1.0
    ref = s + d
    expected_plain = 10 * math.log10((s @ s + s.size * d**2) / (n @ n))
    assert sisdr.si_sdr(ref + n, ref) == pytest.approx(expected_plain, abs=1e-9)
    assert sisdr.si_sdr(ref + n, ref, zero_mean=True) == pytest.approx(10.0, abs=1e-9)
    assert expected_plain > 10.0 + 2.0


def test_si_sdr_matches_fast_bss_eval():
    fbe = pytest.importorskip("fast_bss_eval.numpy")
    r = rng(9)
    for _ in range(20):
        ref = r.standard_normal(4000) + r.uniform(-1, 1)
        est = r.uniform(0.05, 3) * ref + r.uniform(0.01, 3) * r.standard_normal(4000) + r.uniform(-1, 1)
        for zm in (False, True):
            expected = float(fbe.si_sdr(ref[None], est[None], zero_mean=zm)[0])
            assert sisdr.si_sdr(est, ref, zero_mean=zm) == pytest.approx(expected, abs=1e-6)


def test_si_sdr_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="4 samples, reference 5"):
        sisdr.si_sdr(np.ones(4), np.ones(5))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_samples_are_an_error_not_a_score(bad):
    s = rng(15).standard_normal(100)
    broken = s.copy()
    broken[50] = bad
    for est, ref in ((broken, s), (s, broken)):
        with pytest.raises(ValueError, match="non-finite"):
            sisdr.si_sdr(est, ref)
        with pytest.raises(ValueError, match="non-finite"):
            sisdr.snr(est, ref)


def test_si_sdri_is_output_minus_input():
    s = zero_mean(rng(10).standard_normal(SR))
    noisy = s + orthogonal_noise(s, 0.0, seed=11)
    output = s + orthogonal_noise(s, 10.0, seed=12)
    x = inputs(output, s, noisy)
    assert sisdr.si_sdr_input_metric(x) == pytest.approx(0.0, abs=0.01)
    assert sisdr.si_sdri_metric(x) == pytest.approx(10.0, abs=0.01)
    assert sisdr.si_sdr_metric(x) - sisdr.si_sdr_input_metric(x) == sisdr.si_sdri_metric(x)


def test_si_sdri_undefined_when_input_is_clean():
    s = rng(13).standard_normal(SR)
    x = inputs(0.5 * s, s, s)
    for func in (sisdr.si_sdr_input_metric, sisdr.si_sdri_metric):
        with pytest.raises(MetricUndefined, match="input equals the clean reference"):
            func(x)
    assert sisdr.si_sdr_metric(x) == 120.0  # the output itself is still scored


def test_snr():
    s = zero_mean(rng(14).standard_normal(SR))
    n = orthogonal_noise(s, 7.0)
    assert sisdr.snr(s + n, s) == pytest.approx(7.0, abs=1e-9)
    assert sisdr.snr(0.5 * s, s) == pytest.approx(-HALF_DB, abs=1e-9)  # gain change is punished
    assert sisdr.snr(np.zeros(SR), s) == 0.0
    assert sisdr.snr(s, s) == 120.0
    assert sisdr.snr(s, np.zeros(SR)) == -120.0


# --------------------------------------------------------------------------- STOI


def speechlike(seconds: float, seed: int) -> np.ndarray:
    """Noise with a 4 Hz syllable-rate envelope, so pystoi keeps most frames."""
    t = np.arange(int(seconds * SR)) / SR
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)
    return (0.1 * envelope * rng(seed).standard_normal(t.size)).astype(np.float32)


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


# --------------------------------------------------------------------------- levels


def test_passthrough_music_attenuation_is_exactly_zero():
    clean = by_segment(1, 1, 0, 0, 1, 0)
    noisy = clean + 0.3 * rng(30).standard_normal(clean.size)
    assert levels.music_attenuation_metric(inputs(noisy, clean, noisy)) == 0.0


def test_halving_engine_reads_minus_6_db_on_both():
    clean = by_segment(1, 1, 0, 0, 1, 0)
    music = np.where(clean == 0, rng(31).standard_normal(clean.size), 0.0)
    noisy = clean + music
    x = inputs(0.5 * noisy, clean, noisy)
    # numpy sums in float64: 1e-9 dB covers any kernel's order (tests/helpers/golden_scores.py)
    assert levels.voice_level_metric(x) == pytest.approx(HALF_DB, abs=1e-9)
    assert levels.music_attenuation_metric(x) == pytest.approx(HALF_DB, abs=1e-9)
    assert levels.voice_level_metric(x) == pytest.approx(HALF_DB, abs=1e-9)


def test_hand_computed_clip():
    # clean segments: 1 (loudest), 0.1 (-20 dB, active), 0.001 (-60 dB, silent), 0 (silent)
    clean = constant_segments(1.0, 0.1, 0.001, 0.0)
    noisy = constant_segments(1.0, 1.0, 1.0, 1.0)
    output = constant_segments(0.5, 0.1, 0.2, 0.3)
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, False, False]
    # voice level: (0.25 + 0.01) / (1 + 0.01); music: (0.04 + 0.09) / (1 + 1); N cancels
    assert levels.voice_level_db(output, clean, SR) == pytest.approx(10 * math.log10(0.26 / 1.01), abs=1e-9)
    assert levels.music_attenuation_db(output, noisy, clean, SR) == pytest.approx(
        10 * math.log10(0.13 / 2.0), abs=1e-9
    )


def test_threshold_at_40_db():
    clean = constant_segments(1.0, 10 ** (-39 / 20), 10 ** (-41 / 20))
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, False]
    # Exactly 40 dB below is "not more than 40 dB below": active (powers 1e4 and 1 are exact).
    edge = constant_segments(100.0, 1.0, 0.0)
    assert list(levels.voice_active_segments(edge, SR)) == [True, True, False]
    # The 39 dB segment counts as voice, the 41 dB one as music.
    output = constant_segments(1.0, 0.0, 0.0)
    noisy = constant_segments(1.0, 1.0, 1.0)
    assert levels.voice_level_db(output, clean, SR) == pytest.approx(
        10 * math.log10(1.0 / (1.0 + 10 ** (-39 / 10))), abs=1e-9
    )
    assert levels.music_attenuation_db(output, noisy, clean, SR) == -120.0


def test_music_only_clip_covers_the_whole_clip_including_the_tail():
    n = 5 * SEG + 100  # a trailing partial segment of 100 samples
    clean = np.zeros(n)
    noisy = rng(32).standard_normal(n)
    assert levels.music_attenuation_db(0.1 * noisy, noisy, clean, SR) == pytest.approx(-20.0, abs=1e-9)
    tail_only = np.where(np.arange(n) >= 5 * SEG, noisy, 0.0)
    expected = 10 * math.log10(np.sum(noisy[5 * SEG:] ** 2) / np.sum(noisy**2))
    assert levels.music_attenuation_db(tail_only, noisy, clean, SR) == pytest.approx(expected, abs=1e-9)
    with pytest.raises(MetricUndefined, match="clean voice is silent"):
        levels.voice_level_db(noisy, clean, SR)


def test_trailing_partial_segment_is_classified_by_mean_power():
    # A 50-sample tail at -35 dB: active by mean power; its sum of squares alone
    # (50/320 of a segment's) would put it at -43 dB, voice-silent.
    clean = np.concatenate([constant_segments(1.0, 1.0), np.full(50, 10 ** (-35 / 20))])
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, True]
    clean[-50:] = 0.001  # -60 dB
    assert list(levels.voice_active_segments(clean, SR)) == [True, True, False]


def test_no_voice_silent_segment_is_undefined():
    clean = by_segment(1, 0.5, 1, 0.2)
    noisy = clean + 0.1
    with pytest.raises(MetricUndefined, match="no voice-silent segment"):
        levels.music_attenuation_metric(inputs(noisy, clean, noisy))


def test_input_silent_where_voice_is_silent_is_undefined():
    clean = by_segment(1, 0, 1)
    with pytest.raises(MetricUndefined, match="nothing to attenuate"):
        levels.music_attenuation_db(clean, clean, clean, SR)


def test_passthrough_at_minus_5_db_snr_voice_level():
    # Voice in the first half only; noise everywhere, orthogonal to the voice over the
    # voice-active half and 5 dB louder there: voice level = 10log10(1 + 10^0.5) = +6.19 dB.
    half = 25 * SEG
    s = by_segment(*([1.0] * 25), seed=33)
    n_active = orthogonal_noise(s, -5.0, seed=34)
    clean = np.concatenate([s, np.zeros(half)])
    noisy = clean + np.concatenate([n_active, rng(35).standard_normal(half)])
    x = inputs(noisy, clean, noisy)
    assert levels.voice_level_metric(x) == pytest.approx(10 * math.log10(1 + 10**0.5), abs=1e-4)
    assert levels.voice_level_metric(x) == pytest.approx(6.19, abs=0.01)
    assert levels.music_attenuation_metric(x) == 0.0


# --------------------------------------------------------------------------- realtime


def test_realtime_divides():
    x = inputs(np.zeros(4 * SR), np.zeros(4 * SR), np.zeros(4 * SR), cpu_seconds=0.5, wall_seconds=1.0)
    assert realtime.rtf_cpu_metric(x) == 0.125
    assert realtime.rtf_wall_metric(x) == 0.25
    with pytest.raises(MetricUndefined, match="not measured"):
        realtime.rtf_cpu_metric(inputs(np.zeros(SR), np.zeros(SR), np.zeros(SR)))


# --------------------------------------------------------------------------- registration


def registered() -> list[MetricSpec]:
    specs: list[MetricSpec] = []
    for module in MODULES:
        module.register_metrics(specs.append)
    return specs


def test_every_metric_is_described_and_named_once():
    specs = registered()
    names = [spec.name for spec in specs]
    assert len(names) == len(set(names))
    assert set(names) == {
        "si_sdr", "si_sdr_zm", "si_sdr_input", "si_sdri", "snr", "stoi", "estoi",
        "voice_level_db", "music_attenuation_db", "rtf_cpu", "rtf_wall",
    }
    for spec in specs:
        assert spec.unit.strip() and spec.description.strip() and spec.ignores.strip(), spec.name
        assert pickle.loads(pickle.dumps(spec.func)) is spec.func, spec.name
    by_name = {spec.name: spec for spec in specs}
    description = by_name["si_sdr"].description
    assert "without mean removal" in description
    assert "torchmetrics zero_mean=False" in description and "earthspecies/biodenoising" in description
    assert by_name["music_attenuation_db"].ignores == "what happens while the voice is active"
    assert not by_name["music_attenuation_db"].needs_voice and by_name["voice_level_db"].needs_voice
    assert by_name["stoi"].requires == ()  # pystoi's steps are in the module (see its docstring)


def test_hooks_register_through_pluggy():
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for module in MODULES:
        pm.register(module)
    pm.check_pending()
    specs: list[MetricSpec] = []
    pm.hook.register_metrics(register=specs.append)
    assert sorted(s.name for s in specs) == sorted(s.name for s in registered())


def test_every_metric_returns_a_float_on_an_ordinary_clip():
    pytest.importorskip("pystoi")
    clean = speechlike(2.0, 40)
    noisy = clean + 0.05 * rng(41).standard_normal(clean.size).astype(np.float32)
    noisy[: SR // 2] += 0.05  # make sure some segments are voice-silent
    clean[: SR // 2] = 0.0
    x = inputs(0.8 * noisy, clean, noisy, cpu_seconds=0.1, wall_seconds=0.2)
    for spec in registered():
        value = spec.func(x)
        assert isinstance(value, float) and math.isfinite(value), spec.name


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
