"""The compact cache (issue 26 item 2), measured.

Part 1, real outputs: each demo engine is run (``benchmark.py --engine E``)
into a cache of its own, sharing the demo set, and each of its outputs is
stored both ways: raw (entry format 1, the .npy float32 nsbench wrote before)
and compact (format 2, nsbench.store.codec). Prints bytes per clip-engine-
second of audio, the ratio, the codec chosen, and encode/decode speed.

Part 2, a cache of N small entries (default 100,000 of 0.1 s, half exactly
16-bit PCM, half arbitrary float32), written through nsbench.store.cache:
write, read, --list cache, the size cap's walk, --clear-cache; and, for the
first --compared of them (default 10,000: file creation is the slow part of
every write here), raw format 1 entries and, for the choice of one file an
entry, the same compact entries as rows of SQLite (WAL, a
commit an entry, without fsync, as worker processes writing at once would need).

    NSBENCH_CACHE=... python bench/bench_cache.py [--limit 8] [--entries 100000] [--skip-engines]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nsbench.store import cache, codec, eviction  # noqa: E402

ENGINES = ("rnnoise", "deepfilternet", "noisereduce", "webrtc", "speex", "nsnet2", "gtcrn", "oracle-irm", "oracle-ibm")
SMALL_SECONDS = 0.1
RATE = 16000


def old_entry(audio: np.ndarray, meta: dict) -> bytes:
    """An output entry exactly as entry format 1 (nsbench before the compact cache) wrote it."""
    payload = cache.npy_header(np.ascontiguousarray(audio)) + np.ascontiguousarray(audio).tobytes()
    header = json.dumps({"sha256": hashlib.sha256(payload).hexdigest(), "meta": meta}).encode()
    return header + b"\n" + payload


# ------------------------------------------------------------------ real outputs


def engine_outputs(engine: str, limit: int, base: Path, shared: Path) -> list[np.ndarray]:
    """The engine's outputs of the first ``limit`` demo clips, from a run into a cache of its own."""
    root = base / engine
    root.mkdir()
    for item in shared.iterdir():  # the demo set, mixed once
        if item.name.startswith("demo-"):
            (root / item.name).symlink_to(item)
    env = {**os.environ, "NSBENCH_CACHE": str(root)}
    subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "--engine", engine, "--limit", str(limit), "--no-plots",
                    "--no-html", "--quiet", "--results-folder", str(base / f"results-{engine}")],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return [cache.Cache(root).get_output(path.stem).audio for path in (root / cache.RUNS_FOLDER).rglob("*.output")]


def real_outputs(limit: int) -> None:
    shared = cache.cache_root()
    shared.mkdir(parents=True, exist_ok=True)  # a machine that never ran nsbench has none yet
    with tempfile.TemporaryDirectory(dir=shared) as base:
        rows = {"passthrough": engine_outputs("passthrough", limit, Path(base), shared)}
        inputs = {array.tobytes() for array in rows["passthrough"]}  # in every run: the baseline
        for engine in ENGINES:
            rows[engine] = [a for a in engine_outputs(engine, limit, Path(base), shared) if a.tobytes() not in inputs]
        print(f"real outputs: the demo engines, {limit} clips at {RATE} Hz; bytes per clip-engine-second")
        print(f"  {'engine':<14} {'raw':>8} {'compact':>8} {'ratio':>6}  codec       encode MB/s  decode MB/s")
        totals = [0, 0]
        for engine, arrays in rows.items():
            raw, compact = print_row(engine, arrays)
            totals[0] += raw
            totals[1] += compact
        print(f"  {'all':<14} {'':>8} {'':>8} {totals[1] / totals[0]:>6.3f}")


def print_row(engine: str, arrays: list[np.ndarray]) -> tuple[int, int]:
    seconds = sum(array.shape[-1] for array in arrays) / RATE
    raw = sum(len(old_entry(array, {})) for array in arrays)
    start = time.perf_counter()
    encoded = [b"".join(codec.encode(array)) for array in arrays]
    encode = time.perf_counter() - start
    start = time.perf_counter()
    decoded = [codec.decode(data) for data in encoded]
    decode = time.perf_counter() - start
    assert all(a.tobytes() == b.tobytes() and a.dtype == b.dtype for a, b in zip(arrays, decoded))
    compact = sum(map(len, encoded))
    codecs = sorted({codec.choose(array)[0] for array in arrays})
    megabytes = sum(array.nbytes for array in arrays) / 1e6
    print(f"  {engine:<14} {raw / seconds:>8.0f} {compact / seconds:>8.0f} {compact / raw:>6.3f}  {'+'.join(codecs):<12}"
          f"{megabytes / encode:>10.0f} {megabytes / decode:>12.0f}")
    return raw, compact


# ------------------------------------------------------------------ many entries


def small_outputs(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(26)
    samples = int(SMALL_SECONDS * RATE)
    pcm = (rng.integers(-2000, 2000, samples) / 32768).astype(np.float32)
    noise = (rng.standard_normal(samples) * 0.05).astype(np.float32)
    return [pcm, noise] * (count // 2) + [pcm] * (count % 2)


def timed(label: str, work, *args) -> float:
    start = time.perf_counter()
    result = work(*args)
    seconds = time.perf_counter() - start
    print(f"  {label:<50} {seconds:>7.2f} s")
    return result


def many_entries(count: int, compared: int) -> None:
    outputs = small_outputs(count)
    keys = [hashlib.sha256(str(index).encode()).hexdigest() for index in range(count)]
    meta = cache.CachedOutput(outputs[0], 0.01, 0.02, "0 samples at 16000 Hz")
    print(f"\n{count} entries of {SMALL_SECONDS} s (half 16-bit PCM, half arbitrary float32), one file each:")
    with tempfile.TemporaryDirectory(dir=cache.cache_root()) as base:
        store = cache.Cache(Path(base) / "compact")
        store.max_size = None  # no cap, whatever the environment says: every write is timed alike
        timed("write, compact (put_output)", lambda: [store.put_output(k, cache.CachedOutput(a, 0.01, 0.02, meta.delay))
                                                      for k, a in zip(keys, outputs)])
        timed("read, compact (get_output)", lambda: [store.get_output(k) for k in keys])
        timed("--list cache (usage_text)", cache.usage_text, Path(base))
        timed("the size cap's walk (eviction.walk)", eviction.walk, store.folder)
        seconds = count * SMALL_SECONDS
        raw_bytes = count * len(old_entry(outputs[0], {"cpu_seconds": 0.01, "wall_seconds": 0.02, "delay": meta.delay}))
        compact_bytes = eviction.tree_usage(store.folder)[1]
        print(f"  bytes per clip-engine-second: raw {raw_bytes / seconds:.0f}, compact {compact_bytes / seconds:.0f}, "
              f"ratio {compact_bytes / raw_bytes:.3f}")
        timed("--clear-cache (clear)", cache.clear, Path(base) / "compact")
        few = slice(0, compared)
        print(f"  for comparison, the first {compared} of them:")
        raw_folder = Path(base) / "raw" / cache.RUNS_FOLDER
        timed("write, raw (format 1 bytes, the same file layout)", write_raw, raw_folder, keys[few], outputs[few])
        timed("read, raw (parse_entry, array_from_npy)", lambda: [
            cache.array_from_npy(cache.parse_entry((raw_folder / k[:2] / f"{k}.output").read_bytes())[1]) for k in keys[few]])
        timed("--clear-cache of them", cache.clear, Path(base) / "raw")
        sqlite_store(Path(base) / "cache.sqlite", keys[few], outputs[few])


def write_raw(folder: Path, keys: list[str], outputs: list[np.ndarray]) -> None:
    meta = {"cpu_seconds": 0.01, "wall_seconds": 0.02, "delay": "0 samples at 16000 Hz"}
    for key, audio in zip(keys, outputs):
        path = folder / key[:2] / f"{key}.output"
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{key[:8]}-", suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "wb") as file:
            file.write(old_entry(audio, meta))
        os.replace(temporary, path)


def sqlite_store(path: Path, keys: list[str], outputs: list[np.ndarray]) -> None:
    """The alternative: the same compact entries as rows of one SQLite file."""
    print("  the same, compact, as rows of SQLite (WAL, synchronous=NORMAL, a commit an entry):")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # no fsync a commit: what a cache would choose
    db.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, data BLOB, size INTEGER, used INTEGER)")

    def write() -> None:
        for key, audio in zip(keys, outputs):
            data = b"".join(codec.encode(audio))
            db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)", (key, data, len(data), time.time_ns()))

    def read() -> None:
        for key in keys:
            codec.decode(db.execute("SELECT data FROM entries WHERE key = ?", (key,)).fetchone()[0])
            db.execute("UPDATE entries SET used = ? WHERE key = ?", (time.time_ns(), key))

    timed("write", write)
    timed("read (and mark used)", read)
    timed("list (count, sum)", lambda: db.execute("SELECT count(*), sum(size) FROM entries").fetchone())
    timed("clear (remove the file)", lambda: (db.close(), path.unlink()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=8, help="demo clips per engine (part 1)")
    parser.add_argument("--entries", type=int, default=100_000, help="entries in the generated cache (part 2)")
    parser.add_argument("--compared", type=int, default=10_000, help="of those, written raw and into SQLite too")
    parser.add_argument("--skip-engines", action="store_true", help="part 2 only")
    args = parser.parse_args()
    if not args.skip_engines:
        real_outputs(args.limit)
    many_entries(args.entries, min(args.compared, args.entries))


if __name__ == "__main__":
    main()
