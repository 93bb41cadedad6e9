"""``python -m nsbench.tools.rnnoise_demo IN.pcm OUT.pcm``: xiph's ``rnnoise_demo``
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

Only the standard library and numpy are imported (``import pyrnnoise`` pulls
in PyAV and takes a second), so the start-up cost per clip stays small.
"""
from __future__ import annotations

import ctypes
import importlib.util
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


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m nsbench.tools.rnnoise_demo <noisy speech> <output denoised>", file=sys.stderr)
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
