"""The compact cache (issue 26 item 2): outputs stored losslessly in fewer
bytes (nsbench.store.codec), a size cap that evicts the least recently used
entries (nsbench.store.eviction), damaged, old-format and unknown-format
entries."""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from nsbench.cli import main
from nsbench.plugins.errors import UserError
from nsbench.config import cache_max_size
from nsbench.store import cache, codec, eviction

from tests.helpers.audio import make_folder_dataset

RNG = np.random.default_rng(26)
PCM = (RNG.integers(-32768, 32768, 8000) / 32768).astype(np.float32)  # rnnoise/webrtc/speex-like
NOISE = (RNG.standard_normal(8000) * 0.1).astype(np.float32)


def key(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


ARRAYS = {
    "int16-exact float32": (PCM, "int16"),
    "full scale -1 and just under +1": (np.array([-1.0, 32767 / 32768, 0.0], np.float32), "int16"),
    "arbitrary float32": (NOISE, "shuffle-zlib"),
    "1.0 is not int16": (np.concatenate([PCM, [1.0]]).astype(np.float32), "shuffle-zlib"),
    "negative zero kept": (np.array([0.5, -0.0], np.float32), "shuffle-zlib"),
    "NaN and inf kept": (np.array([np.nan, np.inf, -np.inf, 0.25], np.float32), "shuffle-zlib"),
    "arbitrary float64": (RNG.standard_normal(4000), "shuffle-zlib"),
    "float64 of float32 samples": (NOISE.astype(np.float64), "float32"),
    "float64 of int16 samples": (PCM.astype(np.float64), "int16"),
    "sources (2-D), not contiguous": (np.stack([PCM, NOISE, -NOISE])[:, ::2], "shuffle-zlib"),
    "sources, all int16-exact": (np.stack([PCM, PCM[::-1]]), "int16"),
    "empty": (np.zeros(0, np.float32), "shuffle-zlib"),
    "one sample": (np.array([0.3], np.float32), "shuffle-zlib"),
}


@pytest.mark.parametrize("name", ARRAYS)
def test_every_dtype_an_engine_returns_comes_back_bit_for_bit(tmp_path, name):
    array, expected_codec = ARRAYS[name]
    store = cache.Cache(tmp_path)
    streaming = {"blocks": 3, "block_ms": [1.5, 2.25]}
    store.put_output(key(name), cache.CachedOutput(array, 0.125, 0.5, "160 samples at 16000 Hz", streaming))
    back = cache.Cache(tmp_path).get_output(key(name))
    assert same_bits(back.audio, np.ascontiguousarray(array)) and back.audio.flags.writeable
    assert (back.cpu_seconds, back.wall_seconds, back.delay, back.streaming) == (0.125, 0.5, "160 samples at 16000 Hz", streaming)
    assert codec.choose(np.ascontiguousarray(array))[0] == expected_codec


def test_compact_entries_are_smaller_than_raw_float32(tmp_path):
    store = cache.Cache(tmp_path)
    for name, array in (("pcm", PCM), ("noise", NOISE)):
        store.put_output(key(name), cache.CachedOutput(array, 0.0, 0.0, ""))
    size = {name: store.path(key(name), "output").stat().st_size for name in ("pcm", "noise")}
    assert size["pcm"] < 0.6 * PCM.nbytes  # int16 and zlib: 2 bytes a sample at most, and less
    assert size["noise"] < 0.9 * NOISE.nbytes


def old_format_entry(audio: np.ndarray, meta: dict) -> bytes:
    """An entry as nsbench wrote it before the compact cache (format 1): the
    header line, then the .npy bytes of the raw array."""
    payload = cache.npy_header(audio) + audio.tobytes()
    return json.dumps({"sha256": hashlib.sha256(payload).hexdigest(), "meta": meta}).encode() + b"\n" + payload


@pytest.mark.parametrize("array", [NOISE, np.stack([PCM, NOISE])], ids=["mono", "sources"])
def test_an_old_format_entry_is_read_exactly_and_rewritten_compactly(tmp_path, array):
    store = cache.Cache(tmp_path)
    path = store.path(key("old"), "output")
    path.parent.mkdir(parents=True)
    path.write_bytes(old_format_entry(array, {"cpu_seconds": 0.5, "wall_seconds": 1.0, "delay": "0 samples at 16000 Hz"}))
    back = store.get_output(key("old"))
    assert same_bits(back.audio, array) and (back.cpu_seconds, back.wall_seconds) == (0.5, 1.0)
    assert store.warnings == [cache.OLD_FORMAT_NOTE]
    rewritten = path.read_bytes()
    assert json.loads(rewritten.split(b"\n", 1)[0])["format"] == cache.ENTRY_FORMAT
    assert codec.is_compact(cache.parse_entry(rewritten)[1])
    assert same_bits(cache.Cache(tmp_path).get_output(key("old")).audio, array)


def test_an_entry_of_an_unknown_format_is_ignored_with_one_line(tmp_path):
    store = cache.Cache(tmp_path)
    store.put_output(key("new"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
    path = store.path(key("new"), "output")
    header, rest = path.read_bytes().split(b"\n", 1)
    path.write_bytes(json.dumps({**json.loads(header), "format": 3}).encode() + b"\n" + rest)
    assert store.get_output(key("new")) is None
    assert len(store.warnings) == 1 and "is of format 3" in store.warnings[0]
    store.put_output(key("new"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))  # recomputed: replaced
    assert same_bits(store.get_output(key("new")).audio, NOISE)


def damaged(data: bytes, where: str) -> bytes:
    header_end = data.index(b"\n")
    if where == "truncated":
        return data[: len(data) // 2]
    if where == "meta bit":  # a digit of cpu_seconds: format 2's checksum covers the meta too
        index = data.index(b'"cpu_seconds": ') + len(b'"cpu_seconds": ')
    elif where == "codec header bit":
        index = header_end + 1 + len(codec.MAGIC) + 3
    else:  # "audio bit"
        index = len(data) - 7
    flipped = bytearray(data)
    flipped[index] ^= 0x01
    return bytes(flipped)


@pytest.mark.parametrize("where", ["truncated", "meta bit", "codec header bit", "audio bit"])
def test_a_damaged_entry_is_dropped_with_a_warning_and_recomputed(tmp_path, where):
    store = cache.Cache(tmp_path)
    store.put_output(key("x"), cache.CachedOutput(PCM, 0.25, 0.5, "0 samples at 16000 Hz"))
    path = store.path(key("x"), "output")
    path.write_bytes(damaged(path.read_bytes(), where))
    assert store.get_output(key("x")) is None and not path.exists()
    assert len(store.warnings) == 1 and store.warnings[0].startswith(f"corrupt cache entry {path}: ")
    store.put_output(key("x"), cache.CachedOutput(PCM, 0.25, 0.5, "0 samples at 16000 Hz"))
    assert same_bits(store.get_output(key("x")).audio, PCM)


def test_a_payload_that_passes_its_checksum_but_does_not_decode_is_dropped(tmp_path):
    store = cache.Cache(tmp_path)
    header = codec.MAGIC + json.dumps({"codec": "int16", "dtype": "<f4", "shape": [100]}).encode() + b"\n"
    store._store(key("bad"), "output", {"cpu_seconds": 0, "wall_seconds": 0, "delay": ""}, header, b"not zlib")
    assert store.get_output(key("bad")) is None
    assert "its audio does not load" in store.warnings[0]


def entry_size(tmp_path) -> int:
    probe = cache.Cache(tmp_path / "probe")
    probe.put_output(key("probe"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
    return probe.path(key("probe"), "output").stat().st_size


def test_the_least_recently_used_entries_are_evicted_first(tmp_path):
    size = entry_size(tmp_path)
    store = cache.Cache(tmp_path, max_size=int(3.5 * size))
    for index, name in enumerate("abc"):
        store.put_output(key(name), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
        os.utime(store.path(key(name), "output"), ns=(10**18 + index, 10**18 + index))  # written in this order
    assert store.get_output(key("a")) is not None  # read: now the most recently used
    assert store.warnings == []
    store.put_output(key("d"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))  # 4 entries > 3.5: down to 0.9 x 3.5
    kept = {name for name in "abcd" if store.path(key(name), "output").exists()}
    assert kept == {"a", "c", "d"}
    assert len(store.warnings) == 1 and "evicted the 1 least recently used entries" in store.warnings[0]


def test_the_size_cap_is_honoured_after_every_write(tmp_path):
    size = entry_size(tmp_path)
    cap = 5 * size
    store = cache.Cache(tmp_path, max_size=cap)
    for index in range(30):
        store.put_output(key(str(index)), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
        assert sum(entry.size for entry in eviction.walk(store.folder)) <= cap  # the entries (not the FORMAT file)
    assert store.path(key("29"), "output").exists()  # the newest stays
    assert len(store.warnings) >= 5 and all("evicted" in warning for warning in store.warnings)


def test_sizes_parse_and_a_bad_one_is_refused():
    assert [eviction.parse_size(text) for text in ("2GB", "500MB", "1.5 GiB", "10000", "64kb")] == [
        2 * 10**9, 500 * 10**6, int(1.5 * 2**30), 10000, 64000]
    with pytest.raises(ValueError):
        eviction.parse_size("lots")
    with pytest.raises(SystemExit):
        main(["--cache-max-size", "lots", "--list", "cache"])


def test_a_run_with_a_cap_says_when_it_evicted_and_stays_under_it(tmp_path, monkeypatch, capsys, private_run_cache):
    monkeypatch.delenv(eviction.MAX_SIZE_VARIABLE, raising=False)  # the flag alone sets the cap
    data = make_folder_dataset(tmp_path / "data", 6, seconds=1.0)
    assert main(["--engine", "passthrough", "--metric", "si_sdr", "--dataset", "folder", "--data-folder", str(data),
                 "--results-folder", str(tmp_path / "results"), "--jobs", "1", "--quiet", "--no-plots", "--no-html",
                 "--cache-max-size", "100KB"]) == 0
    evicted = [line for line in capsys.readouterr().err.splitlines() if "least recently used" in line]
    assert evicted and all(line.startswith("nsbench: the cache ") for line in evicted)
    assert eviction.tree_usage(private_run_cache)[1] <= 100_000 * 1.05  # the markers besides (empty files)
    assert main(["--list", "cache"]) == 0  # the cap was the run's, not the process's
    assert "no cap on its size" in capsys.readouterr().out
    assert main(["--list", "cache", "--cache-max-size", "100KB"]) == 0
    assert "capped at 100KB" in capsys.readouterr().out


def test_the_cap_comes_from_the_variable_when_no_flag_gives_one(monkeypatch, capsys):
    """$NSBENCH_CACHE_MAX_SIZE is the user's setting, read into the run's configuration; a bad one is one line."""
    monkeypatch.setenv(eviction.MAX_SIZE_VARIABLE, "3MB")
    assert main(["--list", "cache"]) == 0
    assert "capped at 3MB" in capsys.readouterr().out
    assert cache_max_size(None) == 3 * 10**6 and cache_max_size("1KB") == 1000  # the flag first
    monkeypatch.setenv(eviction.MAX_SIZE_VARIABLE, "lots")
    with pytest.raises(UserError, match=r"\$NSBENCH_CACHE_MAX_SIZE: not a size: 'lots'"):
        cache_max_size(None)


def test_clear_empties_at_once_and_reports_what_it_held(tmp_path):
    root = tmp_path / "cache"
    store = cache.Cache(root)
    for index in range(20):
        store.put_output(key(str(index)), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
    files, size = cache.folder_usage(root)
    assert files == 20 + 1 and size > 0  # and the FORMAT file
    assert cache.clear(root) == f"removed {root}: 21 files, {size / 1e6:.1f} MB"
    assert not root.exists()
    cache.Cache(root).put_output(key("again"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))  # usable at once
    assert cache.folder_usage(root)[0] == 1 + 1


def test_a_cache_of_an_older_nsbench_is_said_once_and_goes_first(tmp_path):
    """Entries written before format 2: their keys changed with the cache's
    code, so they are never looked up; the user is told once, and the cap
    evicts them first (they are the least recently used)."""
    old = cache.Cache(tmp_path).path(key("old"), "output")
    old.parent.mkdir(parents=True)
    old.write_bytes(old_format_entry(NOISE, {"cpu_seconds": 0, "wall_seconds": 0, "delay": ""}))
    os.utime(old, ns=(10**18, 10**18))
    first = cache.Cache(tmp_path, max_size=int(1.5 * len(old.read_bytes())))
    assert len(first.warnings) == 1 and "older nsbench (format 1" in first.warnings[0]
    assert cache.Cache(tmp_path).warnings == []  # said once
    first.put_output(key("new"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
    assert not old.exists() and first.path(key("new"), "output").exists()
    assert cache.Cache(tmp_path / "fresh").warnings == []  # a new cache is not an old one


def test_a_cache_unpickled_in_a_worker_shares_the_process_size_cap(tmp_path):
    """A Dask worker unpickles the run (and its Cache) with every task: the
    cap's walk of the cache must stay once per SLACK written, not per clip."""
    import pickle

    store = cache.Cache(tmp_path, max_size=10**9)
    store.put_output(key("one"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
    cap = eviction.cap_for(store.folder, 10**9)
    walked_at = cap.estimate
    pickle.loads(pickle.dumps(store)).put_output(key("two"), cache.CachedOutput(NOISE, 0.0, 0.0, ""))
    assert cap.estimate == walked_at + store.path(key("two"), "output").stat().st_size  # counted, not walked again
    assert cap.since_walk == cap.estimate - walked_at


def test_an_empty_runs_folder_is_not_taken_for_an_older_cache(tmp_path):
    (tmp_path / cache.RUNS_FOLDER / cache.ENGINES_FOLDER).mkdir(parents=True)
    assert cache.Cache(tmp_path).warnings == []
