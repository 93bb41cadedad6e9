"""Reading audio and loading clips, frames and 16-bit samples: what datasets and engines share.

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.audio.files import load_pair, load_noisy, read_audio, read_failure, non_finite, resample, fit_length
from nsbench.audio.frames import FrameStream, process_in_frames, process_bytes_in_frames, bytes_frames, BYTES_PER_SAMPLE, to_int16, from_int16

__all__ = ["load_pair", "load_noisy", "read_audio", "read_failure", "non_finite", "resample", "fit_length", "FrameStream", "process_in_frames", "process_bytes_in_frames", "bytes_frames", "BYTES_PER_SAMPLE", "to_int16", "from_int16"]
