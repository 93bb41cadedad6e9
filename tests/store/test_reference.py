"""Reference-side features (nsbench.store.reference) are computed once per clip for
every engine of a run: counted here by wrapping the real feature functions."""
from __future__ import annotations

import functools
import importlib

import pytest

from nsbench.store import digests, reference
from nsbench.store.cache import Cache
from nsbench.run.engine_run import EngineRun
from nsbench.run.runner import run_engine
from nsbench.plugins.records import MetricInputs

intelligibility = importlib.import_module("nsbench.builtin.metrics.intelligibility")
levels = importlib.import_module("nsbench.builtin.metrics.levels")
sisdr = importlib.import_module("nsbench.builtin.metrics.sisdr")

FEATURES = ((intelligibility, "clean_bands"), (levels, "clean_segments"), (sisdr, "clean_energy"), (sisdr, "input_si_sdr"))
METRICS = ("si_sdr", "si_sdr_zm", "si_sdr_input", "si_sdri", "stoi", "estoi", "voice_level_db", "music_attenuation_db")
ENGINES = ("passthrough", "speex", "webrtc")


@pytest.fixture()
def counted(monkeypatch) -> dict[str, list]:
    """Each feature function wrapped to record its calls (clip, parameters)."""
    calls: dict[str, list] = {}
    for module, name in FEATURES:
        original = getattr(module, name)

        @functools.wraps(original)
        def counting(audio, *params, _original=original, _name=name):
            calls.setdefault(_name, []).append((len(audio.clean), float(audio.clean[1000]), params))
            return _original(audio, *params)

        monkeypatch.setattr(module, name, counting)
    reference._memory.clear()  # nothing left from another test
    yield calls
    reference._memory.clear()


def specs(registry_kind, names) -> list:
    return [registry_kind.get(name).spec for name in names]


@pytest.fixture(scope="module")
def registry():
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry

    return build_registry(get_plugin_manager(load_entry_points=False))


@pytest.fixture(scope="module")
def clips(demo_sources):
    return [demo_sources[0], demo_sources[5]]


def run_all(registry, clips, cache=None, run_name=""):
    """Each engine's outcomes; with a cache, under an identity of ``run_name``."""
    from nsbench.store.digests import digest
    from nsbench.store.keys import Identity

    outcomes = {}
    for name in ENGINES:
        spec = registry.engines.get(name).spec
        identity = Identity(digest(name, run_name), {m: m for m in METRICS}, "checks") if cache else None
        outcomes[name] = list(run_engine(EngineRun(spec, {}, specs(registry.metrics, METRICS), cache=cache, identity=identity), clips))
    return outcomes


def test_each_feature_is_computed_once_per_clip_for_every_engine(counted, registry, clips):
    outcomes = run_all(registry, clips)
    assert len(counted["clean_bands"]) == len(clips)  # shared by STOI and ESTOI too
    assert len(counted["clean_segments"]) == len(clips)  # voice level and music attenuation
    assert len(counted["input_si_sdr"]) == len(clips)  # si_sdr_input and si_sdri
    assert len(counted["clean_energy"]) == 2 * len(clips)  # with and without mean removal
    # The scores are those of each metric computed on its own, with nothing
    # shared (and one BLAS thread, as the runner scores: np.dot's order).
    from threadpoolctl import threadpool_limits

    for name, engine_outcomes in outcomes.items():
        for outcome, source in zip(engine_outcomes, clips):
            assert not outcome.record.failed, (name, outcome.record.error)
            clip = source.load()
            for metric in specs(registry.metrics, METRICS):
                with threadpool_limits(limits=1):
                    alone = metric.func(MetricInputs(outcome.output, clip.clean, clip.noisy, clip.sample_rate))
                assert outcome.record.scores[metric.name] == alone, (name, metric.name)


def test_the_cache_shares_features_across_processes_and_runs(counted, registry, clips, tmp_path):
    """With a cache, a fresh process (a --jobs worker, a later run) reads the
    features instead of computing them: simulated by emptying the memory and
    running the engines under new identities, so every score is computed again."""
    store = Cache(tmp_path)
    first = run_all(registry, clips, store, "first")
    assert len(counted["clean_bands"]) == len(clips)
    reference._memory.clear()
    counted.clear()
    again = run_all(registry, clips, store, "again")
    assert counted == {}, "features were computed again instead of read from the cache"
    assert not any(o.record.from_cache for outcomes in again.values() for o in outcomes)
    scores = {name: [o.record.scores for o in outcomes] for name, outcomes in first.items()}
    assert {name: [o.record.scores for o in outcomes] for name, outcomes in again.items()} == scores


@pytest.mark.parametrize("cached, large", [(False, False), (True, False), (True, True)],
                         ids=["no-cache", "cache", "cache, a large set"])
def test_worker_pools_pass_features_to_the_next_engine(registry, clips, tmp_path, monkeypatch, cached, large):
    """--jobs: each engine's workers are forked afresh, so the features come
    back to the parent with each clip and the next engine's workers inherit
    them: computed by the first engine's workers only, and with a cache not
    read back from it either (a read per clip, feature and engine cost more
    than the scoring it saves). A set beyond SHARE_WITH_CACHE_CLIPS keeps the
    parent flat instead: each engine's workers read them from the cache.
    Counted in a file, as the calls happen in workers."""
    from nsbench.run import executors
    from nsbench.run.executors import ProcessPool
    from nsbench.store.keys import Identity

    calls = tmp_path / "calls"
    original, original_read = intelligibility.clean_bands, Cache.get_features

    @functools.wraps(original)
    def counting(audio, *params):
        with calls.open("a") as log:
            log.write("computed\n")
        return original(audio, *params)

    def counting_reads(self, key):
        with calls.open("a") as log:
            log.write("read\n")
        return original_read(self, key)

    monkeypatch.setattr(intelligibility, "clean_bands", counting)
    monkeypatch.setattr(Cache, "get_features", counting_reads)
    store = Cache(tmp_path / "cache") if cached else None
    if large:
        monkeypatch.setattr(executors, "SHARE_WITH_CACHE_CLIPS", len(clips) - 1)
    reference._memory.clear()
    try:
        scores = {}
        for name in ENGINES:
            spec = registry.engines.get(name).spec
            identity = Identity(name, {"stoi": "stoi", "estoi": "estoi"}, "checks") if cached else None
            run = EngineRun(spec, {}, specs(registry.metrics, ("stoi", "estoi")), cache=store, identity=identity)
            outcomes = list(run_engine(run, clips, executor=ProcessPool(2)))
            scores[name] = [outcome.record.scores for outcome in outcomes]
    finally:
        reference._memory.clear()
    log = calls.read_text().split()
    assert log.count("computed") == len(clips)  # the first engine's workers only
    # With a cache, the first engine's workers look each clip's features up
    # once (absent) before computing them; no later engine reads any, but
    # in a large set, where each engine's workers read each clip's once.
    assert log.count("read") == (0 if not cached else len(clips) * (len(ENGINES) if large else 1))
    assert all(len(clip_scores) == 2 for engine in scores.values() for clip_scores in engine)


def test_a_features_code_is_hashed_once_per_process(counted, registry, clips, tmp_path, monkeypatch):
    """The cache key holds the compute function's code digest; hashing it reads
    every file the code imports, so it is done once per function, not per request."""
    hashed = []

    def counting_digest(compute):
        hashed.append(compute)
        return digests.code_digest(compute)

    monkeypatch.setattr(reference, "code_digest", counting_digest)
    monkeypatch.setattr(reference, "_code_digests", {})
    run_all(registry, clips, Cache(tmp_path), "once")
    assert hashed and len(hashed) == len(set(hashed)) == len(reference._code_digests)
    compute, stored = next(iter(reference._code_digests.items()))
    assert stored == digests.code_digest(compute)
