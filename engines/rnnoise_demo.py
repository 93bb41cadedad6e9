"""``python -m nsbench.builtin.engines.rnnoise_demo IN.pcm OUT.pcm``: xiph's ``rnnoise_demo``
on the RNNoise library bundled in PyPI ``pyrnnoise``.

The files are raw signed 16-bit little-endian mono at 48 kHz. Like
``examples/rnnoise_demo.c`` in xiph/rnnoise, it reads whole 480-sample frames (a
trailing partial frame is dropped), runs ``rnnoise_process_frame`` on samples
in int16 range, and does not write the first frame's output, so the file it
writes is one frame shorter than the whole frames it read. Its output is
therefore 480 samples earlier than the library's own: with the current model
it lags its input file by 480 samples (the library lags by 960).

One deliberate difference: the C demo converts float to ``short`` by plain
assignment (truncation toward zero; out of range is undefined and wraps on
x86). We also truncate, but clip to the int16 range instead of wrapping.

``python -m nsbench.builtin.engines.rnnoise_demo --serve`` is the same program serving
clip after clip over stdin/stdout, so a worker starts Python once rather than
once per clip (``SERVE_PROTOCOL`` below). Its output samples are the per-clip
program's.

Only the standard library and numpy are imported (``import pyrnnoise`` pulls
in PyAV and takes a second), so the start-up cost per clip stays small.
"""
from __future__ import annotations

import ctypes
import importlib.util
import struct
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

FRAME = 480  # samples per rnnoise_process_frame call, at 48 kHz
SAMPLE_RATE = 48000
INSTALL = "pip install pyrnnoise==0.4.5"

_float_pointer = ctypes.POINTER(ctypes.c_float)


def library_path() -> Path:
    """librnnoise.so inside the installed pyrnnoise, found without importing it."""
    spec = importlib.util.find_spec("pyrnnoise")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"pyrnnoise is not installed: {INSTALL}")
    return Path(list(spec.submodule_search_locations)[0]) / "librnnoise.so"


def load_library() -> ctypes.CDLL:
    try:
        # The library uses libm without linking it; the interpreter normally has
        # libm loaded already, this makes sure its symbols are global.
        ctypes.CDLL("libm.so.6", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass
    library = ctypes.CDLL(str(library_path()))
    library.rnnoise_create.argtypes = [ctypes.c_void_p]  # RNNModel*, NULL: built-in weights
    library.rnnoise_create.restype = ctypes.c_void_p
    library.rnnoise_destroy.argtypes = [ctypes.c_void_p]
    library.rnnoise_destroy.restype = None
    library.rnnoise_process_frame.argtypes = [ctypes.c_void_p, _float_pointer, _float_pointer]  # st, out, in
    library.rnnoise_process_frame.restype = ctypes.c_float  # voice probability
    return library


def denoise(samples: np.ndarray, library: ctypes.CDLL) -> np.ndarray:
    """int16 samples in; int16 out, (whole frames - 1) * FRAME long, as the demo writes them."""
    frames = len(samples) // FRAME
    x = samples[: frames * FRAME].astype(np.float32)
    state = library.rnnoise_create(None)
    if not state:
        raise MemoryError("rnnoise_create returned NULL")
    try:
        for start in range(0, len(x), FRAME):
            frame = x[start : start + FRAME]  # processed in place, as the demo does
            pointer = frame.ctypes.data_as(_float_pointer)
            library.rnnoise_process_frame(state, pointer, pointer)
    finally:
        library.rnnoise_destroy(state)
    written = np.trunc(x[FRAME:])  # the demo skips writing the first frame
    return np.clip(written, -32768, 32767).astype("<i2")


SERVE_PROTOCOL = """Messages both ways are a type byte, a little-endian uint32
payload length in bytes, then the payload. Requests:

  N (no payload)    new clip: a fresh RNNoise state; the clip's first frame
                    will not be written, as rnnoise_demo does not write it
  A (int16 samples) a block of the clip, any number of samples (little-endian)
  F (no payload)    end of the clip: a trailing partial frame is dropped, as
                    rnnoise_demo drops it
  Q (no payload)    quit

Each N, A and F gets one reply, O (int16 samples): the output ready so far
(every whole frame received), possibly none. A block of the clip before N,
or a malformed message, gets E (UTF-8 text) and the program exits 2."""

HEADER = struct.Struct("<cI")


class Server:
    """One clip at a time; whole frames processed as they arrive."""

    def __init__(self, library: ctypes.CDLL):
        self.library = library
        self.state = None
        self.pending = np.zeros(0, np.float32)
        self.skip_first = True

    def new_clip(self) -> np.ndarray:
        self.close_state()
        self.state = self.library.rnnoise_create(None)
        if not self.state:
            raise MemoryError("rnnoise_create returned NULL")
        self.pending, self.skip_first = np.zeros(0, np.float32), True
        return np.zeros(0, "<i2")

    def block(self, samples: np.ndarray) -> np.ndarray:
        if self.state is None:
            raise ValueError("audio before the first N (new clip) message")
        x = np.concatenate([self.pending, samples.astype(np.float32)])
        whole = len(x) // FRAME * FRAME
        self.pending = x[whole:]
        x = x[:whole]
        for start in range(0, whole, FRAME):
            frame = x[start : start + FRAME]  # processed in place, as the demo does
            pointer = frame.ctypes.data_as(_float_pointer)
            self.library.rnnoise_process_frame(self.state, pointer, pointer)
        if self.skip_first and whole:
            x, self.skip_first = x[FRAME:], False
        return np.clip(np.trunc(x), -32768, 32767).astype("<i2")

    def end_clip(self) -> np.ndarray:
        self.pending = np.zeros(0, np.float32)
        return np.zeros(0, "<i2")

    def close_state(self) -> None:
        if self.state:
            self.library.rnnoise_destroy(self.state)
        self.state = None


def read_exactly(stream, count: int) -> bytes:
    data = stream.read(count)
    if len(data) != count:
        raise EOFError
    return data


def write_message(stream, kind: bytes, payload: bytes = b"") -> None:
    stream.write(HEADER.pack(kind, len(payload)) + payload)
    stream.flush()


def serve(requests, replies) -> int:
    server = Server(load_library())
    try:
        while True:
            try:
                kind, length = HEADER.unpack(read_exactly(requests, HEADER.size))
                payload = read_exactly(requests, length)
            except EOFError:
                return 0  # the client went away: nothing more to do
            try:
                if kind == b"Q":
                    return 0
                if kind == b"N":
                    output = server.new_clip()
                elif kind == b"A" and length % 2 == 0:
                    output = server.block(np.frombuffer(payload, dtype="<i2"))
                elif kind == b"F":
                    output = server.end_clip()
                else:
                    raise ValueError(f"unknown message {kind!r} of {length} bytes")
            except ValueError as error:
                write_message(replies, b"E", str(error).encode())
                return 2
            write_message(replies, b"O", output.tobytes())
    finally:
        server.close_state()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--serve"]:
        try:
            return serve(sys.stdin.buffer, sys.stdout.buffer)
        except (OSError, MemoryError) as error:
            print(f"rnnoise_demo: {error}", file=sys.stderr)
            return 1
    if len(args) != 2:
        print("usage: python -m nsbench.builtin.engines.rnnoise_demo <noisy speech> <output denoised>\n"
              "       python -m nsbench.builtin.engines.rnnoise_demo --serve", file=sys.stderr)
        return 1
    source, target = args
    try:
        library = load_library()
        samples = np.fromfile(source, dtype="<i2")
        denoise(samples, library).tofile(target)
    except (OSError, MemoryError) as error:
        print(f"rnnoise_demo: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
