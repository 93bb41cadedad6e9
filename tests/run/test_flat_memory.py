"""The parent holds no clip's output beyond the few in flight (issue 26 item 1):
the pool keeps a bounded window of clips, and the cache's outputs are read
one at a time, as their turn comes. The memory itself, over N and 4N clips:
tests/run/test_memory_growth.py."""
from __future__ import annotations

import functools
import time

import numpy as np

from nsbench.builtin.engines.passthrough import Passthrough
from nsbench.plugins.records import Clip, ClipSource
from nsbench.run import executors
from nsbench.run.engine_run import EngineRun
from nsbench.run.executors import ProcessPool
from nsbench.run.runner import run_engine
from nsbench.store.cache import Cache
from nsbench.store.keys import Identity

from tests.helpers.audio import tone_and_noise
from tests.run.test_runner import engine_spec, metrics

JOBS = 2


def marked_load(folder, index: int) -> Clip:
    """Clip ``index``, leaving a file behind when it is loaded: how many clips
    the workers were given shows from outside the pool."""
    (folder / f"loaded-{index}").touch()
    clean, noise = tone_and_noise(index)
    return Clip(clip_id=f"clip{index}", noisy=clean + noise, clean=clean, sample_rate=16000, labels={"set": "t"})


def marked_sources(folder, count: int) -> list[ClipSource]:
    folder.mkdir(parents=True, exist_ok=True)
    return [ClipSource(f"clip{i}", functools.partial(marked_load, folder, i), {"set": "t"}) for i in range(count)]


def loaded(folder) -> int:
    return len(list(folder.glob("loaded-*")))


def passthrough_run(cache: Cache | None = None) -> EngineRun:
    identity = Identity(engine="test-engine-identity", metrics={"si_sdr": "si-sdr-identity"}, checks="checks-identity")
    return EngineRun(engine_spec(lambda options: Passthrough()), {}, metrics("si_sdr"), cache, identity if cache else None)


def test_the_pool_is_given_at_most_two_clips_per_worker_ahead_of_the_consumer(tmp_path):
    marks = tmp_path / "marks"
    window = executors.IN_FLIGHT_PER_WORKER * JOBS
    outcomes = run_engine(passthrough_run(), marked_sources(marks, 20), [], executor=ProcessPool(JOBS))
    first = next(outcomes)
    # The consumer holds the first clip: the workers finish what they were
    # given, and no more is given (before the fix, all 20 were submitted at once).
    deadline = time.monotonic() + 60
    while loaded(marks) < window and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # time for any clip beyond the window to start, were one given
    assert loaded(marks) == window
    rest = list(outcomes)
    assert [o.record.clip_id for o in [first, *rest]] == [f"clip{i}" for i in range(20)]
    assert not any(o.record.failed for o in [first, *rest]) and loaded(marks) == 20


class CountingCache(Cache):
    """A real cache that counts the outputs read from it."""

    outputs_read = 0

    def get_output(self, key):
        self.outputs_read += 1
        return super().get_output(key)


def test_cached_outputs_are_read_one_at_a_time_as_the_consumer_reaches_them(tmp_path):
    sources = marked_sources(tmp_path / "marks", 6)
    first_run = list(run_engine(passthrough_run(Cache(tmp_path / "cache")), sources[:4]))
    cache = CountingCache(tmp_path / "cache")
    outcomes = run_engine(passthrough_run(cache), sources)
    first = next(outcomes)
    assert first.record.from_cache and cache.outputs_read == 1  # not all four read up front
    rest = list(outcomes)
    assert [o.record.from_cache for o in rest] == [True, True, True, False, False]
    assert [o.record.clip_id for o in rest] == [f"clip{i}" for i in range(1, 6)]
    for before, again in zip(first_run, [first, *rest[:3]]):
        assert abs(before.record.scores["si_sdr"] - again.record.scores["si_sdr"]) < 1e-9


def test_an_entry_gone_between_the_decision_and_its_turn_is_computed_again(tmp_path):
    """The size cap may evict a complete clip's output while the run writes
    others, before its turn: the clip runs then, its result unchanged."""
    for executor in (None, ProcessPool(JOBS)):
        root = tmp_path / ("serial" if executor is None else "pool")
        sources = marked_sources(root / "marks", 4)
        first_run = list(run_engine(passthrough_run(Cache(root / "cache")), sources))
        run = passthrough_run(Cache(root / "cache"))
        outcomes = run_engine(run, sources, [], executor=executor)
        assert next(outcomes).record.from_cache
        run.cache.path(run.identity.output_key(sources[2].load()), "output").unlink()
        rest = list(outcomes)
        assert [o.record.from_cache for o in rest] == [True, False, True]
        assert not any(o.record.failed for o in rest)
        assert rest[1].output is not None and np.array_equal(rest[1].output, first_run[2].output)
        assert abs(rest[1].record.scores["si_sdr"] - first_run[2].record.scores["si_sdr"]) < 1e-9
