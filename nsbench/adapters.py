"""The helpers adapter authors share: with ``nsbench`` itself, all a plugin needs.

An engine, dataset, metric or condition imports ``nsbench`` (the records and
specs it builds, ``hookimpl``) and this module, nothing deeper: the built-in
adapters do exactly that (tests/plugins/test_public_api.py checks), so these helpers
are the ones they were written with. Each name is listed in ``EXPORTS`` with
the module that defines it and its purpose, one line; docs/adapters.md lists
them too. What is not exported here or in ``nsbench.__all__`` is internal and
may change.

Importing this module costs nothing: each name is imported from its module
on first use (PEP 562), so a dataset that reads audio never pays for the
recogniser's or espeak-ng's imports.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> (module, attribute there, its purpose). Grouped as in docs/adapters.md.
EXPORTS: dict[str, tuple[str, str, str]] = {
    # Reading audio and loading clips (datasets).
    "load_pair": ("nsbench.audio.files", "load_pair", "a Clip from a clean and a noisy file (mono, checked, resampled to one rate); unreadable: ClipError"),
    "load_noisy": ("nsbench.audio.files", "load_noisy", "a Clip from a noisy file alone (clean=None: no reference)"),
    "read_audio": ("nsbench.audio.files", "read_audio", "(float32 mono audio, rate, notes) from a file; unreadable or unusable: ClipError"),
    "read_failure": ("nsbench.audio.files", "read_failure", "the one-line reason a file could not be read, for a ClipError"),
    "non_finite": ("nsbench.audio.files", "non_finite", "'' when every sample is finite, else what is not (NaN, inf), for an error"),
    "resample": ("nsbench.audio.files", "resample", "audio from one rate to another (soxr HQ, the rate every stage uses)"),
    "fit_length": ("nsbench.audio.files", "fit_length", "audio cut or zero-padded to a length"),
    "load_with_transcript": ("nsbench.recognition", "load_with_transcript", "a clip loader whose Clip carries the transcript read from a text file"),
    "with_text": ("nsbench.recognition", "with_text", "a clip loader whose Clip carries the given transcript"),
    # Frames, streams and 16-bit samples (engines).
    "FrameStream": ("nsbench.audio.frames", "FrameStream", "a Stream (Engine.stream()) over a per-frame function: any block sizes in, frames out"),
    "process_in_frames": ("nsbench.audio.frames", "process_in_frames", "a whole clip through a per-frame int16 function, padded to whole frames and cut back"),
    "process_bytes_in_frames": ("nsbench.audio.frames", "process_bytes_in_frames", "process_in_frames for a function of raw little-endian int16 bytes"),
    "bytes_frames": ("nsbench.audio.frames", "bytes_frames", "an int16-array frame function from a bytes-in, bytes-out one"),
    "BYTES_PER_SAMPLE": ("nsbench.audio.frames", "BYTES_PER_SAMPLE", "2: bytes per int16 sample"),
    "to_int16": ("nsbench.audio.frames", "to_int16", "float32 audio to int16 samples, rounded and clipped at full scale"),
    "from_int16": ("nsbench.audio.frames", "from_int16", "int16 samples to float32 audio in [-1, 1)"),
    # Running a program (engines).
    "run_program": ("nsbench.external", "run_program", "run a program with a timeout; a failure is a ClipError with the tail of its stderr"),
    "start_program": ("nsbench.external", "start_program", "start a program that serves many clips, in a process group of its own (end it with end_group)"),
    "end_group": ("nsbench.external", "end_group", "end a started program and all it started: SIGTERM, then SIGKILL after a short grace"),
    "check_executable": ("nsbench.external", "check_executable", "the path of an executable named by a flag, or a UserError saying what is wrong"),
    "PrivateFolder": ("nsbench.external", "PrivateFolder", "a private temporary folder for a program's files, removed on close()"),
    "STDERR_TAIL_CHARS": ("nsbench.external", "STDERR_TAIL_CHARS", "how much of a program's stderr an error quotes"),
    # The cache folder and digests (datasets that prepare files, engines' fingerprints).
    "cache_root": ("nsbench.store.cache", "cache_root", "where nsbench keeps what it made: $NSBENCH_CACHE, else ~/.cache/nsbench"),
    "file_digest": ("nsbench.store.digests", "file_digest", "the sha256 of a file's content"),
    "files_digest": ("nsbench.store.digests", "files_digest", "one digest of several files' contents (an engine's fingerprint)"),
    "json_text": ("nsbench.store.digests", "json_text", "canonical JSON text of a value (sorted keys), to digest or compare"),
    # Files written whole or not at all (datasets that prepare files).
    "write_json_atomically": ("nsbench.store.atomic", "write_json", "a JSON file written to a temporary name, then renamed: never half-written"),
    "write_audio_atomically": ("nsbench.store.atomic", "write_audio", "an audio file (soundfile.write's options) written whole or not at all"),
    "write_atomically_with": ("nsbench.store.atomic", "write_with", "write(temporary) makes the file, then it is renamed into place"),
    "staged_folder": ("nsbench.store.atomic", "staged_folder", "a folder filled under a temporary name, then renamed into place"),
    # Model files in wheels (engines, metrics).
    "package_file": ("nsbench.model_files", "package_file", "the path of a file inside an installed package, without importing it"),
    "verified": ("nsbench.model_files", "verified", "the path, once its sha256 is the expected one; else a UserError with the install line"),
    "engine_session": ("nsbench.model_files", "engine_session", "an onnxruntime session on one thread, as every ONNX engine runs"),
    # Signal maths metrics share.
    "si_sdr": ("nsbench.audio.sdr", "si_sdr", "scale-invariant SDR in dB of an estimate against a reference (clamped at CLAMP_DB)"),
    "snr": ("nsbench.audio.sdr", "snr", "SNR in dB of an estimate against a reference (no scaling)"),
    "reference_energy": ("nsbench.audio.sdr", "reference_energy", "the reference side of si_sdr (its mean and energy), computed once per clip"),
    "CLAMP_DB": ("nsbench.audio.sdr", "CLAMP_DB", "the bound of SDR figures in dB (a perfect or silent output is not infinite)"),
    "BLOCK_SAMPLES": ("nsbench.audio.blocks", "BLOCK_SAMPLES", "the block length of the float64 block sums (results exact on short clips)"),
    "spans": ("nsbench.audio.blocks", "spans", "(start, stop) of consecutive blocks over a length"),
    "float64_blocks": ("nsbench.audio.blocks", "float64_blocks", "an array's blocks as float64, for sums that keep their precision"),
    "arrays_equal": ("nsbench.audio.blocks", "arrays_equal", "two arrays equal sample for sample, compared block by block"),
    "centred_magnitudes": ("nsbench.audio.spectra", "centred_magnitudes", "STFT magnitudes as librosa's default stft (centred frames, periodic Hann), frames first, in numpy"),
    "Features": ("nsbench.store.reference", "Features", "the type of what a reference feature returns (MetricInputs.feature)"),
    "voice_active_segments": ("nsbench.audio.activity", "voice_active_segments", "one bool per 20 ms segment of a clean voice: within 40 dB of its loudest (voice-active)"),
    "segment_length": ("nsbench.audio.activity", "segment_length", "samples in one 20 ms segment at a rate"),
    "segment_sums": ("nsbench.audio.activity", "segment_sums", "sum of x*y (or x squared) per segment, in float64 blocks"),
    "SILENCE_BELOW_DB": ("nsbench.audio.activity", "SILENCE_BELOW_DB", "40: a segment this far below the loudest is voice-silent"),
    # Lag estimation (conditions, engines that measure their delay).
    "estimate_lag": ("nsbench.audio.alignment", "estimate_lag", "samples one signal lags another, by cross-correlation (None: no clear peak)"),
    "correlation_window": ("nsbench.audio.alignment", "correlation_window", "sum(out[n] ref[n - k]) for every lag k in -max_lag..max_lag (what estimate_lag peaks on)"),
    "DEFAULT_MAX_LAG_SECONDS": ("nsbench.audio.alignment", "DEFAULT_MAX_LAG_SECONDS", "the largest lag estimate_lag looks for by default"),
    # Speech recognition (the wer metric, recogniser plugins).
    "normalise_transcript": ("nsbench.recognition", "normalise_transcript", "a transcript in the form word error rates compare (case, punctuation, digits)"),
    "word_error_rate": ("nsbench.recognition", "word_error_rate", "the word error rate of a hypothesis against a reference, both normalised"),
    "built_recogniser": ("nsbench.recognition", "built", "a RecogniserSpec's recogniser, built once per process"),
    "store_from_options": ("nsbench.recognition", "store_from_options", "the transcript store (cached transcripts) a wer metric's options describe"),
    "TRANSCRIPTS_FOLDER": ("nsbench.recognition", "TRANSCRIPTS_FOLDER", "the transcripts' folder under cache_root()"),
    # Synthetic speech and noise (demo sets, engines' self-checks).
    "speak": ("nsbench.synth.speech", "speak", "a sentence spoken by espeak-ng (in its wheel: no download), float32 at a rate"),
    "SENTENCES": ("nsbench.synth.speech", "SENTENCES", "the sentences the synthetic voices say"),
    "VOICES": ("nsbench.synth.speech", "VOICES", "the synthetic voices: name -> (espeak-ng voice, sex)"),
    "NOISE_KINDS": ("nsbench.synth.noises", "NOISE_KINDS", "noise generators by kind (white, pink, babble, hum, transient, music): f(rng, samples, rate)"),
    "white": ("nsbench.synth.noises", "white", "white noise: f(rng, samples, rate)"),
    "mix_at_snr": ("nsbench.synth.noises", "mix_at_snr", "(noisy, scaled noise): a noise added to a voice at an SNR in dB"),
    # Conditions.
    "NO_CONDITION": ("nsbench.run.conditions", "NONE", "the name of the condition that leaves the input as it is ('none')"),
    # Rated sets (datasets whose files people rated: nsbench.ratings).
    "RatedSet": ("nsbench.ratings", "RatedSet", "a rated set: its folder, cell, rated dimensions and items (DatasetSpec.ratings returns them)"),
    "RatedItem": ("nsbench.ratings", "RatedItem", "one rated file: its path, condition, reference and a Rating per dimension"),
    "Rating": ("nsbench.ratings", "Rating", "one dimension's rating: mean, votes, std, 95% half-interval (NaN where unknown)"),
    "read_rated_set": ("nsbench.ratings", "read", "DIR/ratings.csv read and checked whole; UserError with one line per problem"),
    "RATINGS_TABLE": ("nsbench.ratings", "TABLE", "'ratings.csv': the rated layout's table"),
    # Provenance and text.
    "package_versions": ("nsbench.report.provenance", "package_versions", "installed versions of distributions by name ('not installed' where absent)"),
    "plural": ("nsbench.text", "plural", "'1 clip', '2 clips': a count with its noun"),
}

__all__ = list(EXPORTS)


def purpose(name: str) -> str:
    """What an exported name is for, one line (docs/adapters.md lists them)."""
    return EXPORTS[name][2]


def __getattr__(name: str) -> Any:
    if name not in EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute, _ = EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # once: later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *EXPORTS])


if TYPE_CHECKING:  # for type checkers and editors; at run time the names load lazily
    from nsbench.audio.alignment import DEFAULT_MAX_LAG_SECONDS, correlation_window, estimate_lag
    from nsbench.audio.activity import SILENCE_BELOW_DB, segment_length, segment_sums, voice_active_segments
    from nsbench.audio.blocks import BLOCK_SAMPLES, arrays_equal, float64_blocks, spans
    from nsbench.audio.files import fit_length, load_noisy, load_pair, non_finite, read_audio, read_failure, resample
    from nsbench.audio.frames import (
        BYTES_PER_SAMPLE,
        FrameStream,
        bytes_frames,
        from_int16,
        process_bytes_in_frames,
        process_in_frames,
        to_int16,
    )
    from nsbench.audio.sdr import CLAMP_DB, reference_energy, si_sdr, snr
    from nsbench.external import STDERR_TAIL_CHARS, PrivateFolder, check_executable, end_group, run_program, start_program
    from nsbench.model_files import engine_session, package_file, verified
    from nsbench.recognition import TRANSCRIPTS_FOLDER, load_with_transcript, normalise_transcript, store_from_options, with_text, word_error_rate
    from nsbench.recognition import built as built_recogniser
    from nsbench.ratings import TABLE as RATINGS_TABLE
    from nsbench.ratings import RatedItem, RatedSet, Rating
    from nsbench.ratings import read as read_rated_set
    from nsbench.report.provenance import package_versions
    from nsbench.run.conditions import NONE as NO_CONDITION
    from nsbench.store.cache import cache_root
    from nsbench.store.digests import file_digest, files_digest, json_text
    from nsbench.store.atomic import staged_folder
    from nsbench.store.atomic import write_audio as write_audio_atomically
    from nsbench.store.atomic import write_json as write_json_atomically
    from nsbench.store.atomic import write_with as write_atomically_with
    from nsbench.store.reference import Features
    from nsbench.synth.noises import NOISE_KINDS, mix_at_snr, white
    from nsbench.synth.speech import SENTENCES, VOICES, speak
    from nsbench.text import plural
