"""Lossless, compact bytes for the cache's arrays (engine outputs): what an
entry's payload holds since entry format 2 (nsbench.store.cache).

An array is stored the cheapest of these ways that gives back the very same
bits (checked on the array itself, never assumed from the engine's name):

- ``int16``: a float array whose every sample is k/32768 for an integer k in
  [-32768, 32767] (what rnnoise, webrtc, speex and any engine that works in
  16-bit PCM give back at the clip's rate), kept as those integers: 2 bytes a
  sample instead of 4; then zlib over the two byte planes (below).
- ``float32``: a float64 array whose every sample is a float32 (a float32
  output upcast on the way), kept as float32, then as the next way.
- ``shuffle-zlib``: anything else (arbitrary float32, float64, integers), its
  bytes split into planes (every sample's first byte, then every second byte,
  ...) and deflated by zlib: the sign/exponent planes of audio repeat a lot,
  which zlib cannot see when they are interleaved with the noisy mantissa.

The payload is ``MAGIC``, one header line of JSON (codec, dtype, shape), then
the data; the entry's checksum covers all of it. A .npy payload (entry format
1, raw float32) starts with numpy's own magic instead, so the two are never
taken one for the other.
"""
from __future__ import annotations

import json
import zlib

import numpy as np

MAGIC = b"NSBC1\n"
INT16_SCALE = 32768.0
# zlib level 1: measured on the demo engines' outputs (bench/bench_cache.py),
# levels 6 and 9 save under 3% more and write 2-4x slower. Run-length matching
# only (Z_RLE) rather than searching for earlier strings: the noisy mantissa
# planes hold none worth finding, and a cold demo run's 1,560 outputs took
# 2.8 CPU s to deflate instead of 5.8, 0.5% smaller (float32; int16 1% larger).
# Any deflate stream inflates the same way: entries written before read as they were.
ZLIB_LEVEL = 1
ZLIB_STRATEGY = zlib.Z_RLE
PROBE = 512  # samples checked first for int16, before the whole array


class NotCompact(ValueError):
    """A payload that is not one of this module's (a .npy one, or damaged)."""


def is_compact(payload: bytes | memoryview) -> bool:
    return bytes(payload[: len(MAGIC)]) == MAGIC


def encode(array: np.ndarray) -> list[bytes]:
    """The payload's parts (header, data) for ``array``, any numeric dtype and shape."""
    array = np.ascontiguousarray(array)
    if array.dtype.kind not in "fiub" or array.dtype.byteorder == ">":
        raise TypeError(f"cannot store a {array.dtype} array")
    codec, data = choose(array)
    header = {"codec": codec, "dtype": array.dtype.str, "shape": list(array.shape)}
    return [MAGIC + json.dumps(header).encode() + b"\n", data]


def choose(array: np.ndarray) -> tuple[str, bytes]:
    if array.dtype.kind == "f":
        pcm = as_int16(array)
        if pcm is not None:
            return "int16", shuffled(pcm)
        if array.dtype == np.float64:
            single = array.astype(np.float32)
            if np.array_equal(single.astype(np.float64).view(np.uint64), array.view(np.uint64)):
                return "float32", shuffled(single)
    return "shuffle-zlib", shuffled(array)


def as_int16(array: np.ndarray) -> np.ndarray | None:
    """The integers k with array == k/32768 bit for bit, or None."""
    flat = array.reshape(-1)
    if flat.size == 0 or (flat.size > PROBE and int16_exact(flat[:PROBE]) is None):  # most float outputs fail early
        return None
    pcm = int16_exact(flat)
    return None if pcm is None else pcm.reshape(array.shape)


def int16_exact(flat: np.ndarray) -> np.ndarray | None:
    """-0.0 and NaN fail the bit comparison, so they are never flattened to 0."""
    scaled = flat * INT16_SCALE  # exact: a power of two
    if not np.all(np.abs(scaled) <= INT16_SCALE):  # also false for NaN
        return None
    pcm = scaled.astype(np.int32)  # truncation; a non-integer fails the check below
    if pcm.max() > 32767:
        return None
    back = (pcm / INT16_SCALE).astype(flat.dtype)
    if not np.array_equal(back.view(unsigned(flat.dtype)), flat.view(unsigned(flat.dtype))):
        return None
    return pcm.astype(np.int16)


def unsigned(dtype: np.dtype) -> type:
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]


def shuffled(array: np.ndarray) -> bytes:
    planes = np.ascontiguousarray(array).reshape(-1).view(np.uint8).reshape(-1, array.dtype.itemsize).T
    deflate = zlib.compressobj(ZLIB_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS, 8, ZLIB_STRATEGY)  # 8: zlib's default memLevel
    return deflate.compress(np.ascontiguousarray(planes).data) + deflate.flush()


def unshuffled(data: bytes | memoryview, dtype: np.dtype, count: int) -> np.ndarray:
    raw = zlib.decompress(data)
    if len(raw) != count * dtype.itemsize:
        raise NotCompact(f"{len(raw)} bytes of data for {count} {dtype} samples")
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(dtype.itemsize, count)
    return planes.T.copy().view(dtype).reshape(-1)  # a copy always: writeable, even for 0 or 1 sample


def decode(payload: bytes | memoryview) -> np.ndarray:
    """The array ``encode`` was given, bit for bit (a new, writeable array)."""
    if not is_compact(payload):
        raise NotCompact("not a compact array payload")
    view = memoryview(payload)[len(MAGIC) :]
    end = bytes(view[:512]).find(b"\n")
    try:
        header = json.loads(bytes(view[:end])) if end > 0 else None
        codec, dtype, shape = header["codec"], np.dtype(header["dtype"]), tuple(header["shape"])
    except (ValueError, KeyError, TypeError):
        raise NotCompact("its array header is not readable") from None
    count = int(np.prod(shape, dtype=np.int64))
    data = view[end + 1 :]
    try:
        if codec == "int16":
            flat = (unshuffled(data, np.dtype(np.int16), count) / INT16_SCALE).astype(dtype)
        elif codec == "float32":
            flat = unshuffled(data, np.dtype(np.float32), count).astype(dtype)
        elif codec == "shuffle-zlib":
            flat = unshuffled(data, dtype, count)
        else:
            raise NotCompact(f"unknown codec {codec!r}")
    except zlib.error as error:
        raise NotCompact(f"its data does not inflate ({error})") from None
    return flat.reshape(shape)
