"""Issue 22 item 9: AMR-NB's round trip is not a pure delay (105-107 samples
below 250 Hz, 79-80 above 500 Hz at 16 kHz, bench/bench_amr_delay.py), so a
male voice's residual lag read 15-22 samples after the 79.2 removed. The
residual lag is now confirmed in the speech band, where no such phase lives."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nsbench.audio.alignment import estimate_lag
from nsbench.audio.checks import residual_lag, speech_band
from nsbench.plugins.records import Clip

RATE = 16000
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "audio" / "speech"


def split_at(audio: np.ndarray, hertz: float) -> tuple[np.ndarray, np.ndarray]:
    spectrum = np.fft.rfft(audio)
    low = spectrum * (np.fft.rfftfreq(audio.size, 1 / RATE) < hertz)
    return np.fft.irfft(low, audio.size), np.fft.irfft(spectrum - low, audio.size)


def voice(seconds: float = 3.0) -> np.ndarray:
    """Syllables with a strong low band (a deep male voice's fundamental) and formants above."""
    from conditions.codecs import probe_signal

    t = np.arange(int(seconds * RATE)) / RATE
    low = 0.3 * np.sin(2 * np.pi * 110 * t) * (0.5 - 0.5 * np.cos(2 * np.pi * 4 * t))
    return (probe_signal(RATE, seconds=seconds)[: t.size] + low).astype(np.float32)


def test_a_later_low_band_no_longer_reads_as_a_lag():
    clean = voice()
    low, high = split_at(clean.astype(np.float64), 250)
    output = (np.roll(low, 27) + high).astype(np.float32)  # only below 250 Hz is late, as AMR-NB's
    assert estimate_lag(output, clean, 1600) >= 15  # the broadband peak (what was reported before: 25)
    assert residual_lag(output, Clip(clip_id="c", noisy=clean, clean=clean, sample_rate=RATE)) == (0, "")


@pytest.mark.parametrize("delay", [1, 12, 480])
def test_a_real_delay_still_reads_in_full(delay):
    clean = voice()
    output = np.concatenate([np.zeros(delay, np.float32), clean])[: clean.size]
    assert residual_lag(output, Clip(clip_id="c", noisy=clean, clean=clean, sample_rate=RATE)) == (delay, "")


def test_the_speech_band_mask_has_no_lag_of_its_own():
    clean = voice()
    assert estimate_lag(speech_band(clean, RATE), clean, 400) == 0


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/audio (real recordings)")
@pytest.mark.parametrize("reader", ["libri1_garth_comira_M", "libri2_anders_lankford_M", "cmu_arctic_aew_a0003_M"])
def test_amr_nb_leaves_no_residual_lag_on_real_male_readers(reader):
    """The readers that read 20, 16 and 22 samples late before, mixed with a real noise at 0 and 20 dB."""
    sf = pytest.importorskip("soundfile")
    codecs = pytest.importorskip("conditions.codecs")
    if codecs.missing(codecs.CODECS["amr-nb-12k"]):
        pytest.skip(codecs.missing(codecs.CODECS["amr-nb-12k"]))
    clean, rate = sf.read(SHARED / f"{reader}.wav", dtype="float32")
    clean = clean[: 6 * RATE]
    noise, _ = sf.read(SHARED.parent / "noise" / "speechcommands_exercise_bike.wav", dtype="float32")
    noise = np.resize(noise, clean.size)
    for snr in (0, 20):
        gain = np.sqrt(np.mean(clean**2) / np.mean(noise**2) / 10 ** (snr / 10))
        noisy = (clean + gain * noise).astype(np.float32)
        output = codecs.round_trip(noisy, RATE, codecs.CODECS["amr-nb-12k"])
        assert estimate_lag(output, clean, 1600) >= 15  # the broadband peak still reads late
        assert residual_lag(output, Clip(clip_id=reader, noisy=noisy, clean=clean, sample_rate=RATE)) == (0, "")
