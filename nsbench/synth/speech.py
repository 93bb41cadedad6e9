"""Deterministic English speech from the espeak-ng library bundled in ``espeakng-loader``.

Why every utterance gets a freshly loaded library: espeak-ng keeps synthesis state in
static variables that survive ``espeak_Terminate``/``espeak_Initialize`` (the pitch
flutter index in wavegen.c's ``AdvanceParameters``, the ``hswitch`` double buffer of
harmonic spectra, the AGC, the echo buffer), so the same text spoken twice by one
loaded library gives different samples and even different lengths. We therefore keep
one private copy of the shared object per process, and for each utterance ``dlopen`` it,
initialise, speak, terminate and ``dlclose`` it (about 10 ms), so every utterance starts
from load-time state. The copy is private so that another user of espeakng_loader in
the same process (a phonemiser, say) never shares that state with us; phonemizer's
``EspeakAPI`` copies the library for the same reason. espeak-ng is not re-entrant, so
all of this runs under one lock.
"""

from __future__ import annotations

import _ctypes
import atexit
import ctypes
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

ESPEAK_SAMPLE_RATE = 22050  # espeak-ng's only output rate

# Short voice id -> (espeak-ng voice name, sex). "lang+variant" names pick a variant
# file from espeak-ng-data/voices/!v; "en-us" is American and "en" British English.
VOICES: dict[str, tuple[str, str]] = {
    "m1": ("en-us+m3", "male"),
    "m2": ("en+m1", "male"),
    "m3": ("en-us+m4", "male"),
    "f1": ("en-us+f1", "female"),
    "f2": ("en+f4", "female"),
    "f3": ("en-us+f3", "female"),
}

# Written for this project in the style of the Harvard sentences: ordinary phonetically
# varied English, each about 2-3 s at 160 words per minute.
SENTENCES: list[str] = [
    "The red kite drifted high above the quiet harbour.",
    "She packed two apples and a map into the canvas bag.",
    "A cold wind rattled the loose boards of the old shed.",
    "We waited by the gate for the last bus of the day.",
    "The baker set fresh loaves to cool on the window ledge.",
    "His boots left a trail of mud across the kitchen floor.",
    "The clock in the hall struck nine as the guests arrived.",
    "Rain fell softly on the roof all through the long night.",
    "Bring the blue lamp closer so we can read the small print.",
    "The children chased the puppy around the garden twice.",
    "A thin layer of frost covered the field at dawn.",
    "The captain checked the ropes before the boat left the dock.",
    "Please pour the tea slowly so that the cups do not spill.",
    "The old man told stories about the mill by the river.",
    "Fresh paint made the little shop look bright and new.",
    "The train was late because of snow on the northern line.",
    "She found a silver coin under the cushion of the chair.",
    "Tall pines lined both sides of the narrow mountain road.",
    "The farmer sold eggs and honey at the Saturday market.",
    "Turn off the stove when the soup begins to boil.",
]

# espeak-ng API values, from speak_lib.h.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # report missing data as an error instead of exit()
_CHARS_UTF8 = 1
_POS_CHARACTER = 1
_PARAM_RATE = 1
_PARAM_PITCH = 3
_EE_OK = 0
_RATE_RANGE_WPM = (80, 450)  # espeakRATE_MINIMUM, espeakRATE_MAXIMUM
_PITCH_RANGE = (0, 100)

_BUFFER_MS = 500  # callback chunk length; synchronous output, so it only sets call count
# espeak seeds the breath-noise generator (used by the f2/f3/f5 variants) from time().
_RAND_SEED = 1
_INT16_FULL_SCALE = 32768.0
_CACHE_SIZE = 256  # about 110 kB per cached sentence at 22.05 kHz int16
_VARIANT_DIR = Path("voices") / "!v"

# int callback(short *wav, int numsamples, espeak_EVENT *events)
_SynthCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)

_LOCK = threading.Lock()
_library: _PrivateLibrary | None = None


@dataclass(frozen=True)
class _PrivateLibrary:
    """This process's own copy of libespeak-ng and the data folder it reads."""

    source: Path
    path: Path
    data_path: Path


def speak(
    text: str,
    voice: str,
    *,
    rate_wpm: int = 160,
    pitch: int = 50,
    sample_rate: int = 16000,
) -> np.ndarray:
    """Synthesise ``text`` with espeak-ng; float32 mono in [-1, 1] at ``sample_rate``.

    ``voice`` is a short id from ``VOICES`` ("m1", "f2", ...) or any espeak-ng voice
    name such as "en-us+m3". ``pitch`` is espeak's 0-100 base pitch (50 is the voice's
    own). The same arguments always give the same samples, in any process; results are
    cached per process. Raises RuntimeError when the library, its data or the voice is
    missing.
    """
    _check_arguments(text, rate_wpm, pitch, sample_rate)
    native = _synthesise(text, _espeak_voice_name(voice), rate_wpm, pitch)
    audio = native.astype(np.float32) / np.float32(_INT16_FULL_SCALE)
    if sample_rate != ESPEAK_SAMPLE_RATE:
        audio = soxr.resample(audio, ESPEAK_SAMPLE_RATE, sample_rate, quality="HQ")
    # The resampler's filter can overshoot full scale by a hair.
    return np.clip(audio, -1.0, 1.0).astype(np.float32, copy=False)


def _check_arguments(text: str, rate_wpm: int, pitch: int, sample_rate: int) -> None:
    if not text.strip():
        raise ValueError("text to speak is empty")
    if not _RATE_RANGE_WPM[0] <= rate_wpm <= _RATE_RANGE_WPM[1]:
        raise ValueError(f"rate_wpm must be in {_RATE_RANGE_WPM}, got {rate_wpm}")
    if not _PITCH_RANGE[0] <= pitch <= _PITCH_RANGE[1]:
        raise ValueError(f"pitch must be in {_PITCH_RANGE}, got {pitch}")
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")


def _espeak_voice_name(voice: str) -> str:
    return VOICES[voice][0] if voice in VOICES else voice


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _synthesise(text: str, espeak_voice: str, rate_wpm: int, pitch: int) -> np.ndarray:
    """int16 samples at 22.05 kHz, read-only because the cache hands out the same array."""
    chunks: list[bytes] = []

    def collect(wav: ctypes._Pointer[ctypes.c_short], n_samples: int, _events: int | None) -> int:
        if wav and n_samples > 0:
            chunks.append(ctypes.string_at(wav, 2 * n_samples))
        return 0  # 0 = keep synthesising

    callback = _SynthCallback(collect)  # must outlive espeak_Synth: keep this reference
    with _LOCK:
        library = _private_library()
        _check_variant(library, espeak_voice)
        with _fresh_espeak(library) as espeak:
            espeak.espeak_SetSynthCallback(callback)
            espeak.espeak_ng_SetRandSeed(_RAND_SEED)
            _select_voice(espeak, library, espeak_voice, rate_wpm, pitch)
            encoded = text.encode("utf-8") + b"\0"
            status = espeak.espeak_Synth(
                encoded, len(encoded), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
    if status != _EE_OK:
        raise RuntimeError(f"espeak_Synth failed with status {status} for {text!r}")
    samples = np.frombuffer(b"".join(chunks), dtype=np.int16)
    if samples.size == 0:
        raise RuntimeError(f"espeak-ng produced no audio for {text!r} ({espeak_voice})")
    return samples


def _select_voice(
    espeak: ctypes.CDLL, library: _PrivateLibrary, espeak_voice: str, rate_wpm: int, pitch: int
) -> None:
    if espeak.espeak_SetVoiceByName(espeak_voice.encode("utf-8")) != _EE_OK:
        raise RuntimeError(
            f"espeak-ng voice {espeak_voice!r} not found in {library.data_path}"
        )
    # After the voice: selecting a voice may reset speaking parameters.
    espeak.espeak_SetParameter(_PARAM_RATE, rate_wpm, 0)
    espeak.espeak_SetParameter(_PARAM_PITCH, pitch, 0)


def _check_variant(library: _PrivateLibrary, espeak_voice: str) -> None:
    # espeak silently ignores an unknown "+variant" and speaks the plain voice.
    _, _, variant = espeak_voice.partition("+")
    if variant and not (library.data_path / _VARIANT_DIR / variant).is_file():
        raise RuntimeError(
            f"espeak-ng voice variant {variant!r} (from {espeak_voice!r}) missing: "
            f"no file {library.data_path / _VARIANT_DIR / variant}"
        )


@contextmanager
def _fresh_espeak(library: _PrivateLibrary) -> Iterator[ctypes.CDLL]:
    """Load, initialise, and afterwards terminate and unload the private library."""
    try:
        espeak = ctypes.CDLL(str(library.path), mode=os.RTLD_LOCAL)
    except OSError as exc:
        raise RuntimeError(f"cannot load espeak-ng library {library.source}: {exc}") from exc
    try:
        _declare_signatures(espeak)
        rate = espeak.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS,
            _BUFFER_MS,
            str(library.data_path).encode(),
            _INITIALIZE_DONT_EXIT,
        )
        if rate != ESPEAK_SAMPLE_RATE:
            raise RuntimeError(
                f"espeak_Initialize failed (returned {rate}) with data {library.data_path}"
            )
        try:
            yield espeak
        finally:
            espeak.espeak_Terminate()
    finally:
        # Unloading is what resets espeak's static state for the next utterance.
        _ctypes.dlclose(espeak._handle)


def _declare_signatures(espeak: ctypes.CDLL) -> None:
    # Without these ctypes would pass size_t and pointers as 32-bit ints.
    c = ctypes
    espeak.espeak_Initialize.argtypes = [c.c_int, c.c_int, c.c_char_p, c.c_int]
    espeak.espeak_Initialize.restype = c.c_int
    espeak.espeak_SetSynthCallback.argtypes = [_SynthCallback]
    espeak.espeak_SetSynthCallback.restype = None
    espeak.espeak_ng_SetRandSeed.argtypes = [c.c_long]
    espeak.espeak_ng_SetRandSeed.restype = c.c_int
    espeak.espeak_SetVoiceByName.argtypes = [c.c_char_p]
    espeak.espeak_SetVoiceByName.restype = c.c_int
    espeak.espeak_SetParameter.argtypes = [c.c_int, c.c_int, c.c_int]
    espeak.espeak_SetParameter.restype = c.c_int
    espeak.espeak_Synth.argtypes = [
        c.c_void_p, c.c_size_t, c.c_uint, c.c_int, c.c_uint, c.c_uint,
        c.POINTER(c.c_uint), c.c_void_p,
    ]  # fmt: skip
    espeak.espeak_Synth.restype = c.c_int
    espeak.espeak_Terminate.argtypes = []
    espeak.espeak_Terminate.restype = c.c_int


def _private_library() -> _PrivateLibrary:
    """The process's private library copy, made on first use. Caller holds _LOCK."""
    global _library
    if _library is None:
        _library = _copy_library()
    return _library


def _copy_library() -> _PrivateLibrary:
    try:
        import espeakng_loader
    except ImportError as exc:
        raise RuntimeError(
            "espeak-ng library missing: install it with `pip install espeakng-loader`"
        ) from exc
    source = Path(espeakng_loader.get_library_path())
    if not source.is_file():
        raise RuntimeError(f"espeak-ng library missing: no file {source}")
    try:
        data_path = Path(espeakng_loader.get_data_path())
    except RuntimeError as exc:
        raise RuntimeError(f"espeak-ng data folder missing: {exc}") from exc
    folder = Path(tempfile.mkdtemp(prefix="nsbench-espeak-"))
    path = folder / source.name
    shutil.copyfile(source, path)
    atexit.register(_remove_copy, folder, os.getpid())
    return _PrivateLibrary(source=source, path=path, data_path=data_path)


def _remove_copy(folder: Path, owner_pid: int) -> None:
    # A forked worker inherits this hook; only the process that made the copy removes it.
    if os.getpid() == owner_pid:
        shutil.rmtree(folder, ignore_errors=True)
