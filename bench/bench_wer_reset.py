#!/usr/bin/env python3
"""What the wer recogniser's reset per clip costs, and what it changes.

    python bench/bench_wer_reset.py [--snrs 10 5 0]   (about 2 CPU s a transcript; --snrs 5: 3 clips)

PocketSphinx keeps its noise removal's statistics from one utterance to the
next; metrics/wer.py's PocketSphinx.transcribe resets its feature extraction
(Decoder.reinit_feat) before each clip. On the three ARCTIC recordings in
../shared/audio with kitchen noise at each SNR, in one sitting:

1. how many clips read differently after all the others than alone (a fresh
   decoder each), without the reset and with it;
2. the CPU of one reinit_feat, of building a fresh decoder (the other way to
   forget the state), and of transcribing a clip.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import soundfile

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nsbench.synth.noises import mix_at_snr  # noqa: E402

AUDIO = REPO.parent / "shared" / "audio"
STEMS = ("cmu_arctic_aew_a0001_M", "cmu_arctic_aew_a0002_M", "cmu_arctic_aew_a0003_M")
NOISE_FILE = "speechcommands_doing_the_dishes.wav"
wer = importlib.import_module("nsbench.builtin.metrics.wer")


def noisy_clips(snrs: list[float]) -> dict[tuple[str, float], object]:
    noise, _ = soundfile.read(AUDIO / "noise" / NOISE_FILE, dtype="float32")
    clips = {}
    for number, stem in enumerate(STEMS, start=1):
        clean, _ = soundfile.read(AUDIO / "speech" / f"{stem}.wav", dtype="float32")
        for snr in snrs:
            offset = 16000 * number
            clips[stem, snr] = clean + mix_at_snr(clean, noise[offset: offset + len(clean)], snr)[1]
    return clips


class WithoutReset:
    """The decoder, but its reinit_feat does nothing (a Cython object: no attribute to replace)."""

    def __init__(self, decoder) -> None:
        self.decoder = decoder

    def reinit_feat(self) -> None:
        pass

    def __getattr__(self, name: str):
        return getattr(self.decoder, name)


class NoReset(wer.PocketSphinx):
    """The recogniser as it was: the decoder's state carried from clip to clip."""

    def __init__(self) -> None:
        super().__init__()
        self.decoder = WithoutReset(self.decoder)


def order_dependent(clips: dict, recogniser: type) -> int:
    """Clips whose transcript after every other clip differs from a fresh decoder's."""
    alone = {key: recogniser().transcribe(audio) for key, audio in clips.items()}
    changed = 0
    for key, audio in clips.items():
        shared = recogniser()
        for other in clips:
            if other != key:
                shared.transcribe(clips[other])
        changed += shared.transcribe(audio) != alone[key]
    return changed


def cpu(action, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        action()
    return (time.process_time() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snrs", type=float, nargs="+", default=[10.0, 5.0, 0.0])
    args = parser.parse_args()
    clips = noisy_clips(args.snrs)
    recogniser = wer.PocketSphinx()
    first = next(iter(clips.values()))
    reset = cpu(recogniser.decoder.reinit_feat, 200)
    build = cpu(wer.PocketSphinx, 3)
    transcribe = cpu(lambda: recogniser.transcribe(first), 3)
    print(f"CPU: reinit_feat {reset * 1e3:.3f} ms, a fresh decoder {build:.2f} s, a transcript "
          f"({len(first) / 16000:.1f} s of audio) {transcribe:.2f} s: the reset is {reset / transcribe:.1e} of a transcript",
          flush=True)
    print(f"{len(clips)} noisy clips; read differently after the others than alone:")
    for kind in (NoReset, wer.PocketSphinx):
        print(f"  {kind.__name__:12s} {order_dependent(clips, kind)} of {len(clips)}", flush=True)


if __name__ == "__main__":
    main()
