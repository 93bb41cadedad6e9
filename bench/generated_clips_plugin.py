"""A dataset that makes each clip when it is loaded: no disk, any number of clips.

    python benchmark.py --plugin bench/generated_clips_plugin.py --dataset generated-clips \
        --generated-clips 10000 --engine speex

For throughput and memory runs at 1,000 to 100,000 clips (issue 26;
bench/bench_throughput.py drives it). Clip ``i`` is a function of ``i`` alone:
one second at 16 kHz of a voiced, speech-like burst (a harmonic series on a
gliding fundamental, shaped into syllables) plus noise (white, or pink) at one
of six SNRs, so the report has twelve cells. One second gives STOI its 30
frames. Both are deterministic, so a second run is served by the cache, and
every clip id and label is computed, not read: listing 100,000 clips costs
next to nothing.

A plugin file, not a built-in. ``load`` is a module-level function under a
partial, so it pickles for ``--jobs`` workers; Dask workers get it by value
(nsbench.run.dask_executor sends a plugin file's functions as cloudpickle
bytes), so a Dask run needs no PYTHONPATH. (Before that fix the workers died
with "No module named 'nsbench_local_plugin_generated_clips_plugin'" and the
run hung; this file imported itself under its own name as a workaround.)
"""
from __future__ import annotations

import functools

import numpy as np

import nsbench

RATE = 16000
SECONDS = 1.0
SNRS_DB = (-5, 0, 5, 10, 15, 20)
NOISES = ("white", "pink")
DEFAULT_CLIPS = 1000
PEAK = 0.9


def cell(index: int) -> tuple[str, int]:
    """The clip's (noise, snr_db): the cells cycle, so any first N clips cover them evenly."""
    return NOISES[index % len(NOISES)], SNRS_DB[(index // len(NOISES)) % len(SNRS_DB)]


def voice(rng: np.random.Generator, samples: int) -> np.ndarray:
    """Harmonics of a fundamental gliding around 100-220 Hz, under a
    syllable envelope (3-5 bursts a second). Its dips stay 12 dB under the
    peaks, never silent: pystoi drops frames 40 dB under the loudest, and a
    second of voice with pauses would leave STOI fewer than its 30 frames."""
    t = np.arange(samples) / RATE
    f0 = rng.uniform(100, 220) * (1 + 0.08 * np.sin(2 * np.pi * rng.uniform(1, 3) * t))
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    harmonics = sum((0.7 ** k) * np.sin(k * phase + rng.uniform(0, 2 * np.pi)) for k in range(1, 12))
    syllables = rng.uniform(3, 5)
    envelope = 0.25 + 0.75 * np.sin(np.pi * syllables * t + rng.uniform(0, np.pi)) ** 2
    return harmonics * envelope


def noise(rng: np.random.Generator, kind: str, samples: int) -> np.ndarray:
    white = rng.standard_normal(samples)
    if kind == "white":
        return white
    spectrum = np.fft.rfft(white)
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))  # 1/f power
    return np.fft.irfft(spectrum, samples)


def load_clip(index: int) -> nsbench.Clip:
    kind, snr_db = cell(index)
    rng = np.random.default_rng(index)
    samples = int(RATE * SECONDS)
    clean = voice(rng, samples)
    interference = noise(rng, kind, samples)
    interference *= np.sqrt(np.mean(clean**2) / np.mean(interference**2) / 10 ** (snr_db / 10))
    gain = PEAK / max(np.max(np.abs(clean + interference)), 1e-9)  # one gain on both: the SNR stays
    clean, interference = (clean * gain).astype(np.float32), (interference * gain).astype(np.float32)
    return nsbench.Clip(clip_id=clip_id(index), noisy=clean + interference, clean=clean, sample_rate=RATE,
                        noise=interference, labels=labels(index))


def clip_id(index: int) -> str:
    return f"gen{index:06d}"


def labels(index: int) -> dict[str, str]:
    kind, snr_db = cell(index)
    return {"noise": kind, "snr_db": str(snr_db)}


def clips(options) -> list[nsbench.ClipSource]:
    count = int(options.get("generated_clips") or DEFAULT_CLIPS)
    return [nsbench.ClipSource(clip_id=clip_id(i), load=functools.partial(load_clip, i), labels=labels(i))
            for i in range(count)]


@nsbench.hookimpl
def add_arguments(parser):
    parser.add_argument("--generated-clips", type=int, default=DEFAULT_CLIPS,
                        help=f"generated-clips: how many 1-second clips (default {DEFAULT_CLIPS})")


@nsbench.hookimpl
def register_datasets(register):
    register(nsbench.DatasetSpec(
        name="generated-clips", clips=clips, cell_keys=("noise", "snr_db"),
        description="bench: 1-second harmonic bursts in white or pink noise at -5..20 dB, made on load",
        describe=lambda options: {"clips": int(options.get("generated_clips") or DEFAULT_CLIPS), "rate": RATE,
                                  "generator": "bench/generated_clips_plugin.py"},
    ))
