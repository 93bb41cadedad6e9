#!/usr/bin/env python3
"""Issue 22 item 9: where AMR-NB's residual lag on real speech comes from.

    python bench/bench_amr_delay.py            (needs ../shared/audio)

For each signal (the real readers in ../shared/audio/speech, the codec's own
probe, white noise, an impulse train), the lag of the raw AMR-NB 12.2 round
trip (no delay removed) behind its input, broadband and per band (zero-phase
4th-order Butterworth bandpasses), by nsbench.audio.alignment.estimate_lag.

Measured (PyAV 18.1, OpenCORE AMR-NB, 16 kHz, 2026-12-01): above 500 Hz every
signal lags 79-80 samples, the 79.2 that conditions/codecs.py removes; in
60-250 Hz every signal lags 105-107 (the encoder's low-frequency path, e.g. its
80 Hz high-pass pre-filter, adds phase there). The broadband peak is pulled
towards the low band by clips with much energy below 250 Hz: the male readers
libri1 (99), libri2 (95), cmu aew (96), against libri3 (female) 79, probe 79,
noise 80. So the fixed delay removed is right where speech carries its
intelligibility, the codec is not a pure delay, and the residual-lag estimate
(broadband cross-correlation) reads the low band's extra phase as 16-20 samples.
Mixed with the real noises at 0-20 dB, the residual lag read 15-22 samples on
the male readers (libri1, libri2, cmu aew) and 0 (or -1) on the female ones;
limited to 300-3400 Hz it reads 0 on all 18: nsbench/audio/checks.py's residual_lag
now confirms a broadband lag there (tests/run/test_residual_lag_band.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BANDS = ((60, 250), (250, 500), (500, 1000), (1000, 2000), (2000, 3400))
RATE = 16000


def lags(signal: np.ndarray) -> tuple[int | None, list[int | None]]:
    from scipy.signal import butter, sosfiltfilt

    from conditions.codecs import CODECS, unaligned_round_trip
    from nsbench.audio.alignment import estimate_lag

    decoded = unaligned_round_trip(signal, RATE, CODECS["amr-nb-12k"])[: signal.size]
    per_band = []
    for low, high in BANDS:
        sos = butter(4, [low, high], "bandpass", fs=RATE, output="sos")
        per_band.append(estimate_lag(sosfiltfilt(sos, decoded), sosfiltfilt(sos, signal), 400))
    return estimate_lag(decoded, signal, 400), per_band


def signals() -> dict[str, np.ndarray]:
    import soundfile as sf

    from conditions.codecs import probe_signal

    chosen = {}
    for path in sorted((ROOT / ".." / "shared" / "audio" / "speech").glob("*.wav")):
        audio, rate = sf.read(path, dtype="float32")
        if rate == RATE:
            chosen[path.stem] = audio[: 8 * RATE]
    chosen["probe"] = probe_signal(RATE)
    chosen["white noise"] = (0.05 * np.random.default_rng(0).standard_normal(4 * RATE)).astype(np.float32)
    impulses = np.zeros(4 * RATE, np.float32)
    impulses[::1600] = 0.5
    chosen["impulse train"] = impulses
    return chosen


def main() -> None:
    print("signal".ljust(28), "broadband", "  ".join(f"{low}-{high} Hz" for low, high in BANDS))
    for name, signal in signals().items():
        broadband, per_band = lags(signal)
        print(name.ljust(28), str(broadband).ljust(9), "  ".join(str(lag).ljust(len(f"{lo}-{hi} Hz")) for lag, (lo, hi) in zip(per_band, BANDS)))


if __name__ == "__main__":
    main()
