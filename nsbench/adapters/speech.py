"""Speech recognition: transcripts a dataset reads, the word error rate, recognisers a plugin registers.

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.recognition import load_with_transcript, with_text, normalise_transcript, word_error_rate, built as built_recogniser, store_from_options, TRANSCRIPTS_FOLDER

__all__ = ["load_with_transcript", "with_text", "normalise_transcript", "word_error_rate", "built_recogniser", "store_from_options", "TRANSCRIPTS_FOLDER"]
