"""Tests for the demo-set signal generators: espeak speech, noises and the SNR mixer."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nsbench.synth import noises, speech
from nsbench.synth.noises import NOISE_KINDS, mix_at_snr
from nsbench.synth.speech import SENTENCES, VOICES, speak

SR = 16000
N_4S = 4 * SR
REPO_ROOT = Path(__file__).resolve().parents[2]


def _frames(x: np.ndarray, win: int, hop: int) -> np.ndarray:
    n = 1 + (len(x) - win) // hop
    index = np.arange(win)[None, :] + hop * np.arange(n)[:, None]
    return x[index] * np.hanning(win)


def _loud_frames(x: np.ndarray, win: int, hop: int) -> np.ndarray:
    frames = _frames(x, win, hop)
    energy = np.sum(frames**2, axis=1)
    return frames[energy > 0.1 * energy.max()]


def _median_f0(x: np.ndarray, sr: int) -> float:
    """Median pitch of the clearly periodic loud frames, by normalised autocorrelation."""
    lags = np.arange(sr // 400, sr // 60)
    f0s = []
    for frame in _loud_frames(x, int(0.04 * sr), int(0.01 * sr)):
        ac = np.correlate(frame, frame, mode="full")[len(frame) - 1 :]
        best = lags[np.argmax(ac[lags])]
        if ac[best] > 0.5 * ac[0]:
            f0s.append(sr / best)
    assert len(f0s) > 20, "too few voiced frames to judge pitch"
    return float(np.median(f0s))


def _band_power_share(x: np.ndarray, sr: int, low: float, high: float) -> float:
    power = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(len(x), 1.0 / sr)
    return float(power[(freqs >= low) & (freqs <= high)].sum() / power.sum())


def _welch_psd(x: np.ndarray, sr: int, win: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    power = np.mean(np.abs(np.fft.rfft(_frames(x, win, win // 2))) ** 2, axis=0)
    return np.fft.rfftfreq(win, 1.0 / sr), power


# ---------------------------------------------------------------- speech


def test_speech_is_deterministic_even_after_other_utterances() -> None:
    # espeak keeps state in statics between utterances; bypass the cache to see it.
    speech._synthesise.cache_clear()
    first = speak(SENTENCES[0], "m1")
    speak(SENTENCES[1], "f1")
    speech._synthesise.cache_clear()
    again = speak(SENTENCES[0], "m1")
    np.testing.assert_array_equal(first, again)


def test_speech_is_identical_in_a_fresh_process() -> None:
    # f3 has breath noise, which espeak seeds from the clock unless we pin the seed.
    code = (
        "from nsbench.synth.speech import speak, SENTENCES; import hashlib, sys; "
        "sys.stdout.write(hashlib.sha256(speak(SENTENCES[2], 'f3').tobytes()).hexdigest())"
    )
    speech._synthesise.cache_clear()
    here = hashlib.sha256(speak(SENTENCES[2], "f3").tobytes()).hexdigest()
    time.sleep(1.01 - time.time() % 1.0)  # so the child's time() seed would differ
    child = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert child.stdout == here


def test_speech_is_float32_audio_at_the_requested_rate() -> None:
    x16 = speak(SENTENCES[3], "f2")
    x8 = speak(SENTENCES[3], "f2", sample_rate=8000)
    assert x16.dtype == np.float32 and x16.ndim == 1
    assert 1.5 < len(x16) / SR < 4.0
    # Same utterance, so the 8 kHz version lasts just as long.
    assert abs(len(x8) / 8000 - len(x16) / SR) < 0.01
    assert np.abs(x16).max() <= 1.0
    assert np.sqrt(np.mean(x16**2)) > 0.02


def test_speech_energy_lies_in_the_speech_band() -> None:
    x = speak(SENTENCES[4], "m2")
    assert _band_power_share(x, SR, 100.0, 4000.0) > 0.9
    assert _band_power_share(x, SR, 0.0, 80.0) < 0.05


def test_male_voices_are_lower_pitched_than_female_voices() -> None:
    pitch = {vid: _median_f0(speak(SENTENCES[5], vid), SR) for vid in VOICES}
    males = [pitch[v] for v, (_, sex) in VOICES.items() if sex == "male"]
    females = [pitch[v] for v, (_, sex) in VOICES.items() if sex == "female"]
    assert len(males) >= 2 and len(females) >= 2
    assert max(males) < 140.0 < min(females), pitch


def test_voices_give_different_waveforms() -> None:
    outputs = [speak(SENTENCES[6], vid) for vid in VOICES]
    for i, a in enumerate(outputs):
        for b in outputs[i + 1 :]:
            assert len(a) != len(b) or not np.allclose(a, b, atol=1e-3)


def test_rate_and_pitch_parameters_take_effect() -> None:
    slow = speak(SENTENCES[7], "m1", rate_wpm=120)
    fast = speak(SENTENCES[7], "m1", rate_wpm=240)
    assert len(slow) > 1.5 * len(fast)
    low = _median_f0(speak(SENTENCES[7], "m1", pitch=20), SR)
    high = _median_f0(speak(SENTENCES[7], "m1", pitch=80), SR)
    assert high > 1.2 * low


def test_unknown_voice_is_a_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="voice 'xx-nowhere' not found"):
        speak("Hello there.", "xx-nowhere")


def test_missing_voice_variant_is_a_runtime_error() -> None:
    # espeak itself would silently speak the plain voice instead.
    with pytest.raises(RuntimeError, match="variant 'nosuchvariant'.*missing"):
        speak("Hello there.", "en-us+nosuchvariant")


def test_missing_library_is_a_runtime_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import espeakng_loader

    monkeypatch.setattr(speech, "_library", None)
    monkeypatch.setattr(espeakng_loader, "get_library_path", lambda: str(tmp_path / "no.so"))
    with pytest.raises(RuntimeError, match="espeak-ng library missing"):
        speak("A sentence nobody cached.", "m1")


def test_every_voice_id_names_an_existing_espeak_voice() -> None:
    for vid, (name, sex) in VOICES.items():
        assert sex in {"male", "female"}, vid
        assert speak("Yes.", name).size > 0


# ---------------------------------------------------------------- noises


@pytest.mark.parametrize("kind", sorted(NOISE_KINDS))
def test_noise_is_seeded_finite_and_audible(kind: str) -> None:
    generate = NOISE_KINDS[kind]
    a = generate(np.random.default_rng(7), N_4S, SR)
    b = generate(np.random.default_rng(7), N_4S, SR)
    c = generate(np.random.default_rng(8), N_4S, SR)
    assert a.dtype == np.float32 and a.shape == (N_4S,)
    assert np.all(np.isfinite(a))
    assert np.sqrt(np.mean(a.astype(np.float64) ** 2)) > 1e-3
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_noise_kinds_are_the_six_documented_ones() -> None:
    assert set(NOISE_KINDS) == {"white", "pink", "babble", "hum", "transient", "music"}


def _psd_slope_db_per_octave(x: np.ndarray) -> float:
    freqs, power = _welch_psd(x, SR)
    band = (freqs >= 50.0) & (freqs <= 6000.0)
    slope, _ = np.polyfit(np.log2(freqs[band]), 10 * np.log10(power[band]), 1)
    return float(slope)


def test_pink_falls_3_db_per_octave_and_white_is_flat() -> None:
    rng = np.random.default_rng(0)
    assert _psd_slope_db_per_octave(noises.pink(rng, N_4S, SR)) == pytest.approx(-3.01, abs=0.3)
    assert _psd_slope_db_per_octave(noises.white(rng, N_4S, SR)) == pytest.approx(0.0, abs=0.3)


def test_hum_peaks_at_the_mains_frequency_with_harmonics_and_wobble() -> None:
    seen = set()
    for seed in range(8):
        x = noises.hum(np.random.default_rng(seed), N_4S, SR).astype(np.float64)
        spectrum = np.abs(np.fft.rfft(x))
        freqs = np.fft.rfftfreq(N_4S, 1.0 / SR)
        mains = freqs[np.argmax(spectrum)]
        assert mains in (50.0, 60.0)
        seen.add(mains)
        second = spectrum[np.argmin(np.abs(freqs - 2 * mains))]
        between = spectrum[np.argmin(np.abs(freqs - 1.5 * mains))]
        assert second > 0.1 * spectrum.max() and second > 100 * between
        # 100 ms frames hold whole mains cycles, so their RMS only moves with the wobble.
        rms = np.sqrt(np.mean(x[: N_4S // 1600 * 1600].reshape(-1, 1600) ** 2, axis=1))
        assert (rms.max() - rms.min()) / rms.mean() > 0.05
    assert seen == {50.0, 60.0}


def test_transient_is_mostly_silence_with_sharp_peaks() -> None:
    for seed in range(4):
        x = noises.transient(np.random.default_rng(seed), N_4S, SR).astype(np.float64)
        peak = np.abs(x).max()
        assert np.mean(np.abs(x) < 1e-3 * peak) > 0.6
        assert peak / np.sqrt(np.mean(x**2)) > 10.0
        # Bursts: 5 ms frames rising above -30 dB of the loudest frame. 3-8 events per
        # second over 4 s, plus a release burst after most key presses.
        energy = np.sum(x.reshape(-1, 80) ** 2, axis=1)
        active = energy > 1e-3 * energy.max()
        bursts = np.count_nonzero(active[1:] & ~active[:-1]) + int(active[0])
        assert 10 <= bursts <= 80, (seed, bursts)


def _sliding_max(a: np.ndarray, half_width: int) -> np.ndarray:
    out = a.copy()
    for shift in range(1, half_width + 1):
        out[:, shift:] = np.maximum(out[:, shift:], a[:, :-shift])
        out[:, :-shift] = np.maximum(out[:, :-shift], a[:, shift:])
    return out


def _harmonic_frame_share(x: np.ndarray) -> float:
    """Share of loud frames where some f0 in 140-650 Hz has >= 5 of its first 6
    harmonics as sharp spectral peaks (a local maximum within 1 bin, within 40 dB of
    the frame's strongest, and 15 dB above the spectrum 62 Hz to either side).

    Inharmonic partials, lone sines and noise all score near zero.
    """
    nfft, side_bins = 4096, 16
    db = 20 * np.log10(np.abs(np.fft.rfft(_loud_frames(x, 1024, 256), nfft)) + 1e-9)
    near = _sliding_max(db, 1)
    sharp = (near == _sliding_max(db, 4)) & (near > db.max(axis=1, keepdims=True) - 40.0)
    f0 = np.arange(140.0, 650.0, 0.5)
    at = np.rint(np.outer(f0, np.arange(1, 7)) * nfft / SR).astype(int)
    beside = (db[:, at - side_bins] + db[:, at + side_bins]) / 2
    harmonics_found = np.sum(sharp[:, at] & (db[:, at] - beside > 15.0), axis=-1)
    return float(np.mean(harmonics_found.max(axis=1) >= 5))


def test_music_is_strongly_harmonic_and_noise_is_not() -> None:
    for seed in range(3):
        share = _harmonic_frame_share(noises.music(np.random.default_rng(seed), N_4S, SR))
        assert share > 0.5, (seed, share)
    assert _harmonic_frame_share(noises.white(np.random.default_rng(0), N_4S, SR)) < 0.1


def _pitch_modulation(x: np.ndarray) -> tuple[float, float]:
    """Rate (Hz) and prominence of the periodic wobble of the strongest partial's pitch."""
    hop, nfft = 128, 8192
    mag = np.abs(np.fft.rfft(_frames(x, 1024, hop), nfft)) + 1e-12
    low, high = int(100 * nfft / SR), int(700 * nfft / SR)
    peak = low + np.argmax(mag[:, low:high], axis=1)
    a, b, c = (np.log(mag[np.arange(len(peak)), peak + d]) for d in (-1, 0, 1))
    cents = 1200 * np.log2((peak + 0.5 * (a - c) / (a - 2 * b + c)) * SR / nfft)
    change = np.diff(cents)
    change[np.abs(change) > 15.0] = 0.0  # note changes and jumps between partials
    spectrum = np.abs(np.fft.rfft(change * np.hanning(len(change)), 8 * len(change)))
    rates = np.fft.rfftfreq(8 * len(change), hop / SR)
    band = (rates > 2.0) & (rates < 20.0)
    return float(rates[band][np.argmax(spectrum[band])]), float(
        spectrum[band].max() / np.median(spectrum[band])
    )


def test_music_has_5_to_6_hz_vibrato() -> None:
    for seed in range(3):
        rate, prominence = _pitch_modulation(noises.music(np.random.default_rng(seed), N_4S, SR))
        assert 4.5 < rate < 6.5 and prominence > 4.0, (seed, rate, prominence)
    _, prominence = _pitch_modulation(noises.white(np.random.default_rng(0), N_4S, SR))
    assert prominence < 4.0


def test_babble_is_made_of_speech() -> None:
    x = noises.babble(np.random.default_rng(3), N_4S, SR)
    assert _band_power_share(x, SR, 100.0, 4000.0) > 0.9
    # Several talkers overlap, so there are no long pauses as in one talker's speech.
    energy = np.sum(x.reshape(-1, 800).astype(np.float64) ** 2, axis=1)
    assert np.mean(energy < 0.01 * energy.mean()) < 0.05


def test_generators_reject_empty_sizes() -> None:
    with pytest.raises(ValueError, match="n_samples must be positive"):
        noises.white(np.random.default_rng(0), 0, SR)


# ---------------------------------------------------------------- mixing


@pytest.mark.parametrize("snr_db", [-10.0, 0.0, 7.5, 30.0])
def test_mix_at_snr_hits_the_requested_snr(snr_db: float) -> None:
    rng = np.random.default_rng(1)
    clean = speak(SENTENCES[0], "m1")
    noise = noises.pink(rng, len(clean), SR)
    noisy, scaled = mix_at_snr(clean, noise, snr_db)
    measured = 10 * np.log10(
        np.sum(clean.astype(np.float64) ** 2) / np.sum(scaled.astype(np.float64) ** 2)
    )
    assert abs(measured - snr_db) < 1e-6
    assert noisy.dtype == np.float32 and scaled.dtype == np.float32
    np.testing.assert_allclose(noisy, clean + scaled, atol=1e-6)


def test_mix_at_snr_rejects_bad_inputs() -> None:
    clean = np.ones(100, dtype=np.float32)
    with pytest.raises(ValueError, match="differ in shape"):
        mix_at_snr(clean, np.ones(99, dtype=np.float32), 0.0)
    with pytest.raises(ValueError, match="silent"):
        mix_at_snr(clean, np.zeros(100, dtype=np.float32), 0.0)
