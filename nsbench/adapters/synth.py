"""Synthetic speech (espeak-ng, in its wheel: no download) and noises: the demo sets, engines' self-checks.

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.synth.speech import speak, SENTENCES, VOICES
from nsbench.synth.noises import NOISE_KINDS, white, mix_at_snr

__all__ = ["speak", "SENTENCES", "VOICES", "NOISE_KINDS", "white", "mix_at_snr"]
