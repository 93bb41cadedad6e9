"""Signal maths metrics share (SDR, float64 block sums, spectra, voice activity) and lag estimation
(conditions, engines that measure their delay); ``Features``, the type of a reference feature.

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.audio.sdr import si_sdr, snr, reference_energy, CLAMP_DB
from nsbench.audio.blocks import BLOCK_SAMPLES, spans, float64_blocks, arrays_equal
from nsbench.audio.spectra import centred_magnitudes
from nsbench.plugins.records import Features
from nsbench.audio.activity import voice_active_segments, segment_length, segment_sums, SILENCE_BELOW_DB
from nsbench.audio.alignment import estimate_lag, correlation_window, DEFAULT_MAX_LAG_SECONDS

__all__ = ["si_sdr", "snr", "reference_energy", "CLAMP_DB", "BLOCK_SAMPLES", "spans", "float64_blocks", "arrays_equal", "centred_magnitudes", "Features", "voice_active_segments", "segment_length", "segment_sums", "SILENCE_BELOW_DB", "estimate_lag", "correlation_window", "DEFAULT_MAX_LAG_SECONDS"]
