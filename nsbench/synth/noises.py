"""Seeded noise generators for the demo test set, and the SNR mixer.

Every generator is ``name(rng, n_samples, sample_rate) -> float32 array`` and draws all
of its randomness from ``rng``, so a seed fixes the output. Levels are arbitrary (about
unit RMS where that is cheap): ``mix_at_snr`` sets the level that counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nsbench.synth.speech import SENTENCES, VOICES, speak

NoiseGenerator = Callable[[np.random.Generator, int, int], np.ndarray]

TWO_PI = 2.0 * np.pi
# Highest partial we synthesise, as a fraction of the sample rate: keeps a margin below
# Nyquist so vibrato cannot push a partial into aliasing.
_MAX_PARTIAL_FRACTION = 0.45

# babble
_BABBLE_TALKERS = (4, 6)  # inclusive range of simultaneous talkers
_BABBLE_PITCHES = (40, 50, 60)  # espeak base pitch; few values so the speech cache hits
_BABBLE_GAIN_DB = 3.0  # talkers differ in level by up to this much either way
_BABBLE_PAUSE_S = (0.1, 0.5)  # silence before a talker repeats its sentence

# hum
_MAINS_HZ = (50.0, 60.0)
# Fundamental strongest, harmonics falling off: hum picked up by a microphone cable.
_HUM_HARMONIC_GAINS = (1.0, 0.5, 0.35, 0.2, 0.12)
_HUM_WOBBLE_DEPTH = (0.05, 0.15)  # relative amplitude modulation
_HUM_WOBBLE_HZ = (0.2, 1.0)

# transient
_EVENTS_PER_S = (3.0, 8.0)
_EVENT_INTERVAL_SHAPE = 2.0  # gamma shape: irregular like typing, yet rarely bunched
_MIN_EVENT_GAP_S = 0.04
_CLICK_SHARE = 0.3  # the rest are key presses
_CLICK_DECAY_S = (0.0002, 0.0005)
_KEY_STRIKE_DECAY_S = (0.0005, 0.002)
_KEY_BODY_HZ = (1500.0, 4000.0)  # plastic keycap and case resonance
_KEY_BODY_DECAY_S = (0.002, 0.006)
_KEY_THUMP_HZ = (150.0, 400.0)  # key bottoming out on the desk-coupled board
_KEY_THUMP_DECAY_S = (0.004, 0.008)
_KEY_THUMP_GAIN = 0.5
_KEY_RELEASE_DELAY_S = (0.06, 0.15)
_KEY_RELEASE_GAIN = (0.2, 0.5)
_EVENT_GAIN = (0.3, 1.0)
_DECAY_LENGTHS = 5.0  # events last this many decay constants (down to -43 dB)

# music: sung-vowel-like tones, the kind a music detector may take for voice
_MUSIC_VOICES = (2, 3)  # inclusive
_NOTE_S = (0.3, 1.0)
_CHORD_ROOT_HZ = (150.0, 300.0)  # with the intervals below, all notes stay in 150-600 Hz
_CHORDS_SEMITONES = ((0, 4, 7), (0, 3, 7), (0, 5, 9), (0, 4, 9), (0, 3, 8))
_HARMONICS = (6, 12)  # inclusive
_VIBRATO_HZ = (5.0, 6.0)
_VIBRATO_CENTS = (20.0, 50.0)
_ATTACK_S = (0.03, 0.08)
_RELEASE_S = (0.05, 0.12)
_GLIDE_S = 0.03  # portamento between notes, as singers slide rather than jump
_NOTE_GAIN = (0.6, 1.0)
# Peterson & Barney (1952) average F1-F3 of men's /ɑ/, /ɔ/, /ɛ/, /u/, /æ/: vowel-like
# spectral envelopes are what make these tones voice-like.
_VOWEL_FORMANTS_HZ = (
    (730.0, 1090.0, 2440.0),
    (570.0, 840.0, 2410.0),
    (530.0, 1840.0, 2480.0),
    (300.0, 870.0, 2240.0),
    (660.0, 1720.0, 2410.0),
)
_FORMANT_GAINS = (1.0, 0.6, 0.3)
_FORMANT_BANDWIDTH_HZ = 150.0
_ENVELOPE_FLOOR = 0.05  # partials between formants are weak, not absent
_ENVELOPE_STEP_HZ = 5.0  # table resolution, fine against a 150 Hz formant bandwidth


def white(rng: np.random.Generator, n_samples: int, sample_rate: int) -> np.ndarray:
    """Gaussian white noise, unit variance."""
    _check_size(n_samples, sample_rate)
    return rng.standard_normal(n_samples).astype(np.float32)


def pink(rng: np.random.Generator, n_samples: int, sample_rate: int) -> np.ndarray:
    """1/f noise (-3 dB per octave) made by shaping white noise's spectrum, unit RMS."""
    _check_size(n_samples, sample_rate)
    spectrum = np.fft.rfft(rng.standard_normal(n_samples))
    freqs = np.fft.rfftfreq(n_samples, d=1.0 / sample_rate)
    # Power 1/f means amplitude 1/sqrt(f); DC has no finite 1/f value, so drop it.
    spectrum[0] = 0.0
    spectrum[1:] /= np.sqrt(freqs[1:])
    return _unit_rms(np.fft.irfft(spectrum, n_samples))


def babble(rng: np.random.Generator, n_samples: int, sample_rate: int) -> np.ndarray:
    """4-6 espeak talkers with different voices and sentences, each looped, summed."""
    _check_size(n_samples, sample_rate)
    n_talkers = int(rng.integers(_BABBLE_TALKERS[0], _BABBLE_TALKERS[1] + 1))
    voices = rng.choice(sorted(VOICES), size=n_talkers, replace=n_talkers > len(VOICES))
    total = np.zeros(n_samples)
    for voice in voices:
        total += _talker(rng, str(voice), n_samples, sample_rate)
    return _unit_rms(total)


def _talker(
    rng: np.random.Generator, voice: str, n_samples: int, sample_rate: int
) -> np.ndarray:
    """One talker repeating a sentence, starting at a random point of the loop."""
    sentence = SENTENCES[int(rng.integers(len(SENTENCES)))]
    pitch = int(rng.choice(_BABBLE_PITCHES))
    utterance = speak(sentence, voice, pitch=pitch, sample_rate=sample_rate)
    pause = np.zeros(int(rng.uniform(*_BABBLE_PAUSE_S) * sample_rate), dtype=np.float32)
    cycle = np.concatenate([utterance, pause])
    offset = int(rng.integers(len(cycle)))
    looped = np.resize(cycle, offset + n_samples)[offset:]  # np.resize repeats cycle
    gain_db = rng.uniform(-_BABBLE_GAIN_DB, _BABBLE_GAIN_DB)
    return looped * (10.0 ** (gain_db / 20.0) / _rms(utterance))


def hum(rng: np.random.Generator, n_samples: int, sample_rate: int) -> np.ndarray:
    """Mains hum at 50 or 60 Hz with harmonics and a slow amplitude wobble, unit RMS."""
    _check_size(n_samples, sample_rate)
    mains_hz = float(rng.choice(_MAINS_HZ))
    t = np.arange(n_samples) / sample_rate
    tone = np.zeros(n_samples)
    for harmonic, gain in enumerate(_HUM_HARMONIC_GAINS, start=1):
        if harmonic * mains_hz < _MAX_PARTIAL_FRACTION * sample_rate:
            tone += gain * np.sin(TWO_PI * harmonic * mains_hz * t + rng.uniform(0, TWO_PI))
    depth = rng.uniform(*_HUM_WOBBLE_DEPTH)
    wobble_hz = rng.uniform(*_HUM_WOBBLE_HZ)
    wobble = 1.0 + depth * np.sin(TWO_PI * wobble_hz * t + rng.uniform(0, TWO_PI))
    return _unit_rms(tone * wobble)


def transient(rng: np.random.Generator, n_samples: int, sample_rate: int) -> np.ndarray:
    """Clicks and key presses at irregular times, 3-8 per second, silence between.

    Peak level is at most about 1; the signal is exactly zero between events.
    """
    _check_size(n_samples, sample_rate)
    out = np.zeros(n_samples)
    for onset in _event_onsets(rng, n_samples, sample_rate):
        if rng.random() < _CLICK_SHARE:
            event = _click(rng, sample_rate)
        else:
            event = _key_press(rng, sample_rate)
        _add_at(out, event * rng.uniform(*_EVENT_GAIN), onset)
    return out.astype(np.float32)


def _event_onsets(rng: np.random.Generator, n_samples: int, sample_rate: int) -> list[int]:
    rate = rng.uniform(*_EVENTS_PER_S)
    duration_s = n_samples / sample_rate
    # The first event always falls inside the clip, so no clip is silent.
    time_s = rng.uniform(0.0, min(1.0 / rate, duration_s))
    onsets = []
    while time_s < duration_s:
        onsets.append(int(time_s * sample_rate))
        interval = rng.gamma(_EVENT_INTERVAL_SHAPE, 1.0 / (_EVENT_INTERVAL_SHAPE * rate))
        time_s += max(_MIN_EVENT_GAP_S, interval)
    return onsets


def _click(rng: np.random.Generator, sample_rate: int) -> np.ndarray:
    return _peak_normalise(_decaying_noise(rng, sample_rate, rng.uniform(*_CLICK_DECAY_S)))


def _key_press(rng: np.random.Generator, sample_rate: int) -> np.ndarray:
    """Strike through a resonant key body, a low thump, and a softer release later."""
    strike = _struck_body(rng, sample_rate)
    thump_hz = min(rng.uniform(*_KEY_THUMP_HZ), _MAX_PARTIAL_FRACTION * sample_rate)
    thump = _KEY_THUMP_GAIN * _resonance(sample_rate, thump_hz, rng.uniform(*_KEY_THUMP_DECAY_S))
    release = rng.uniform(*_KEY_RELEASE_GAIN) * _struck_body(rng, sample_rate)
    release_at = int(rng.uniform(*_KEY_RELEASE_DELAY_S) * sample_rate)
    event = np.zeros(release_at + len(release))
    _add_at(event, strike, 0)
    _add_at(event, thump, 0)
    _add_at(event, release, release_at)
    return _peak_normalise(event)


def _struck_body(rng: np.random.Generator, sample_rate: int) -> np.ndarray:
    strike = _decaying_noise(rng, sample_rate, rng.uniform(*_KEY_STRIKE_DECAY_S))
    body_hz = min(rng.uniform(*_KEY_BODY_HZ), _MAX_PARTIAL_FRACTION * sample_rate)
    body = _resonance(sample_rate, body_hz, rng.uniform(*_KEY_BODY_DECAY_S))
    return _peak_normalise(np.convolve(strike, body))


def _decaying_noise(rng: np.random.Generator, sample_rate: int, decay_s: float) -> np.ndarray:
    t = np.arange(max(1, int(_DECAY_LENGTHS * decay_s * sample_rate))) / sample_rate
    return rng.standard_normal(len(t)) * np.exp(-t / decay_s)


def _resonance(sample_rate: int, freq_hz: float, decay_s: float) -> np.ndarray:
    """Impulse response of a resonator: a decaying sinusoid."""
    t = np.arange(max(1, int(_DECAY_LENGTHS * decay_s * sample_rate))) / sample_rate
    return np.exp(-t / decay_s) * np.sin(TWO_PI * freq_hz * t)


def music(rng: np.random.Generator, n_samples: int, sample_rate: int) -> np.ndarray:
    """2-3 sung-vowel-like voices playing chords of 0.3-1 s notes, with vibrato, unit RMS.

    Each voice is a harmonic tone (fundamental 150-600 Hz, 6-12 harmonics) shaped by a
    vowel's formant envelope, with 5-6 Hz vibrato of 20-50 cents and note envelopes.
    """
    _check_size(n_samples, sample_rate)
    notes = _note_bounds(rng, n_samples, sample_rate)
    roots = rng.uniform(*_CHORD_ROOT_HZ, size=len(notes))
    chords = [_CHORDS_SEMITONES[i] for i in rng.integers(len(_CHORDS_SEMITONES), size=len(notes))]
    n_voices = int(rng.integers(_MUSIC_VOICES[0], _MUSIC_VOICES[1] + 1))
    total = np.zeros(n_samples)
    for voice in range(n_voices):
        note_hz = [root * 2.0 ** (chord[voice] / 12.0) for root, chord in zip(roots, chords)]
        f0 = _glide(_hold(note_hz, notes, n_samples), int(_GLIDE_S * sample_rate))
        gate = _note_gate(rng, notes, n_samples, sample_rate)
        total += _sung_tone(rng, f0, sample_rate) * gate
    return _unit_rms(total)


def _note_bounds(
    rng: np.random.Generator, n_samples: int, sample_rate: int
) -> list[tuple[int, int]]:
    bounds = []
    start = 0
    while start < n_samples:
        end = min(n_samples, start + int(rng.uniform(*_NOTE_S) * sample_rate))
        bounds.append((start, end))
        start = end
    return bounds


def _hold(values: Sequence[float], bounds: list[tuple[int, int]], n_samples: int) -> np.ndarray:
    track = np.empty(n_samples)
    for value, (start, end) in zip(values, bounds):
        track[start:end] = value
    return track


def _glide(f0: np.ndarray, width: int) -> np.ndarray:
    """Moving average of log frequency, so note changes slide like a singer's."""
    if width < 2 or len(f0) < width:
        return f0
    log_f0 = np.log(np.concatenate([np.full(width - 1, f0[0]), f0]))
    sums = np.cumsum(np.concatenate([[0.0], log_f0]))
    return np.exp((sums[width:] - sums[:-width]) / width)


def _note_gate(
    rng: np.random.Generator, bounds: list[tuple[int, int]], n_samples: int, sample_rate: int
) -> np.ndarray:
    """Per-note level with raised-cosine attack and release."""
    gate = np.zeros(n_samples)
    for start, end in bounds:
        length = end - start
        attack = min(length // 2, int(rng.uniform(*_ATTACK_S) * sample_rate))
        release = min(length - attack, int(rng.uniform(*_RELEASE_S) * sample_rate))
        envelope = np.ones(length)
        envelope[:attack] = _rising_half_cosine(attack)
        envelope[length - release :] = _rising_half_cosine(release)[::-1]
        gate[start:end] = rng.uniform(*_NOTE_GAIN) * envelope
    return gate


def _rising_half_cosine(length: int) -> np.ndarray:
    return 0.5 - 0.5 * np.cos(np.pi * np.arange(length) / max(1, length))


def _sung_tone(rng: np.random.Generator, f0: np.ndarray, sample_rate: int) -> np.ndarray:
    """Harmonic tone following ``f0`` with vibrato and a vowel formant envelope."""
    n_harmonics = int(rng.integers(_HARMONICS[0], _HARMONICS[1] + 1))
    formants = _VOWEL_FORMANTS_HZ[int(rng.integers(len(_VOWEL_FORMANTS_HZ)))]
    t = np.arange(len(f0)) / sample_rate
    cents = rng.uniform(*_VIBRATO_CENTS) * np.sin(
        TWO_PI * rng.uniform(*_VIBRATO_HZ) * t + rng.uniform(0, TWO_PI)
    )
    freq = f0 * 2.0 ** (cents / 1200.0)
    phase = TWO_PI * np.cumsum(freq) / sample_rate  # integrate: no clicks at note changes
    tone = np.zeros(len(f0))
    envelope = _formant_envelope(formants, sample_rate)
    # Harmonic k's phasor is the fundamental's to the k-th power: one complex multiply
    # per harmonic instead of a sine, which is most of this generator's cost.
    fundamental = np.exp(1j * phase)
    partial = np.ones(len(f0), dtype=complex)
    for k in range(1, n_harmonics + 1):
        partial *= fundamental
        # 1/k is the source's spectral tilt, as in a glottal pulse train.
        amplitude = np.interp(k * freq, envelope[0], envelope[1], right=0.0) / k
        start_phase = np.exp(1j * rng.uniform(0, TWO_PI))
        tone += amplitude * (partial * start_phase).imag
    return tone


def _formant_envelope(formants: tuple[float, ...], sample_rate: int) -> np.ndarray:
    """(frequencies, gains) table of a vowel's envelope, zero from the partial limit up.

    A table read with np.interp costs one pass per partial instead of several per formant.
    """
    freq_hz = np.arange(0.0, _MAX_PARTIAL_FRACTION * sample_rate, _ENVELOPE_STEP_HZ)
    gain = np.full(freq_hz.shape, _ENVELOPE_FLOOR)
    half_band = _FORMANT_BANDWIDTH_HZ / 2.0
    for formant_hz, formant_gain in zip(formants, _FORMANT_GAINS):
        gain += formant_gain / (1.0 + ((freq_hz - formant_hz) / half_band) ** 2)
    return np.stack([freq_hz, gain])


NOISE_KINDS: dict[str, NoiseGenerator] = {
    "white": white,
    "pink": pink,
    "babble": babble,
    "hum": hum,
    "transient": transient,
    "music": music,
}


def mix_at_snr(
    clean: np.ndarray, noise: np.ndarray, snr_db: float
) -> tuple[np.ndarray, np.ndarray]:
    """Scale ``noise`` to ``snr_db`` against ``clean`` and add it; returns (noisy, scaled_noise).

    The SNR is over the whole clip: 10*log10(sum(clean**2) / sum(scaled_noise**2)),
    not segmental and not restricted to frames where speech is active, so pauses in
    the speech count. Nothing is clipped or normalised; the caller decides that. The
    result has the wider of the input float types (float32 at least).
    """
    if clean.shape != noise.shape:
        raise ValueError(f"clean {clean.shape} and noise {noise.shape} differ in shape")
    if not np.isfinite(snr_db):
        raise ValueError(f"snr_db must be finite, got {snr_db}")
    clean_energy = _energy(clean)
    noise_energy = _energy(noise)
    if clean_energy == 0.0 or noise_energy == 0.0:
        raise ValueError("cannot set an SNR: clean or noise is silent")
    gain = np.sqrt(clean_energy / (noise_energy * 10.0 ** (snr_db / 10.0)))
    dtype = np.result_type(clean.dtype, noise.dtype, np.float32)
    scaled_noise = (noise.astype(np.float64) * gain).astype(dtype)
    noisy = (clean.astype(np.float64) + scaled_noise).astype(dtype)
    return noisy, scaled_noise


def _energy(x: np.ndarray) -> float:
    return float(np.sum(np.square(x, dtype=np.float64)))


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(_energy(x) / max(1, x.size)))


def _unit_rms(x: np.ndarray) -> np.ndarray:
    rms = _rms(x)
    return (x / rms if rms > 0.0 else x).astype(np.float32)


def _peak_normalise(x: np.ndarray) -> np.ndarray:
    peak = float(np.max(np.abs(x)))
    return x / peak if peak > 0.0 else x


def _add_at(out: np.ndarray, event: np.ndarray, start: int) -> None:
    """Add ``event`` into ``out`` at ``start``, cutting what runs past the end."""
    end = min(len(out), start + len(event))
    if end > start:
        out[start:end] += event[: end - start]


def _check_size(n_samples: int, sample_rate: int) -> None:
    if n_samples <= 0:
        raise ValueError(f"n_samples must be positive, got {n_samples}")
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
