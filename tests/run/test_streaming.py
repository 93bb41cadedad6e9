"""--block-size: engines fed block by block (nsbench.run.streaming). Real engines
streamed must give their whole-clip output; a stream that forgets its state is
caught; block times, deadline misses and the non-streamable path."""
from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pytest
import soxr

from tests.helpers.audio import make_folder_dataset, tone_and_noise
from tests.helpers.plugins import cli_with
from tests.helpers.engine_checks import MAX_LAG, stationary_sources
from nsbench.store import cache
from nsbench.store.keys import Identity, checks_identity, engine_identity, metric_identity
from nsbench.run import streaming
from nsbench.report import streaming_summary
from nsbench.audio.alignment import estimate_lag
from nsbench.audio.blocks import arrays_equal
from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.run.engine_run import EngineRun
from nsbench.run.runner import run_engine
from nsbench.config import Blocks
from nsbench.plugins.records import Clip, ClipSource
from nsbench.plugins.specs import EngineSpec
from tests.helpers.lazy import LazyModule

scipy = LazyModule("scipy")

BLOCK_SIZES = (128, 160, 441, 1000)
STREAMABLE_BUILTINS = ("webrtc", "speex", "deepfilternet", "rnnoise", "gtcrn", "dtln", "hush")
# Not streamable, each for its reason: NSNet2's ONNX model takes a whole
# spectrogram with no state inputs; noisereduce and the oracles are non-causal.
# (RNNoise with a user's --rnnoise-demo-path neither: xiph's demo reads whole files.)
WHOLE_ONLY_BUILTINS = ("nsnet2", "noisereduce", "oracle-irm", "oracle-ibm")
EXCERPT_SECONDS = 2.0  # enough speech to measure alignment; keeps DeepFilterNet's runs short


def registry():
    return build_registry(get_plugin_manager(load_entry_points=False))


def metric_specs(*names: str):
    found = registry()
    return [found.metrics.get(name).spec for name in names]


def in_memory(clip: Clip) -> ClipSource:
    return ClipSource(clip_id=clip.clip_id, load=lambda: clip, labels=clip.labels)


def tone_source(clip_id: str = "tone", seconds: float = 2.0, rate: int = 16000) -> ClipSource:
    clean, noise = tone_and_noise(3, seconds=seconds, rate=rate)
    return in_memory(Clip(clip_id=clip_id, noisy=clean + noise, clean=clean, sample_rate=rate, labels={"set": "t"}))


def excerpt(source: ClipSource, seconds: float) -> ClipSource:
    clip = source.load()
    length = int(seconds * clip.sample_rate)
    return in_memory(dataclasses.replace(clip, noisy=clip.noisy[:length], clean=clip.clean[:length], noise=None))


def run(spec: EngineSpec, source: ClipSource, blocks: Blocks | None, store: cache.Cache | None = None, metrics=("si_sdr",)):
    specs = metric_specs(*metrics)
    identity = None
    if store:
        digests = {metric.name: metric_identity(metric.name, "1", metric.func) for metric in specs}
        identity = Identity(engine_identity(spec.name, "1", spec.factory, "", {}), digests, checks_identity())
    [outcome] = run_engine(EngineRun(spec, {}, specs, cache=store, identity=identity, blocks=blocks), [source])
    assert not outcome.record.failed, outcome.record.error
    return outcome


def test_soxr_stream_gives_the_one_shot_samples():
    """The harness's premise: soxr's ResampleStream, fed any blocks, gives what
    soxr.resample gives on the whole signal (so a streamed run can equal a
    whole one to the bit)."""
    signal = np.random.default_rng(0).standard_normal(20000).astype(np.float32) * 0.1
    for from_rate, to_rate in ((16000, 48000), (48000, 16000), (44100, 48000)):
        whole = soxr.resample(signal, from_rate, to_rate, quality="HQ")
        for size in (128, 441):
            resampler = streaming.Resampler(from_rate, to_rate)
            pieces = [resampler(signal[start : start + size]) for start in range(0, len(signal), size)]
            pieces.append(resampler(np.zeros(0, np.float32), last=True))
            assert arrays_equal(np.concatenate(pieces), whole)
            # It holds some input back (tens of ms): reported as the harness's own delay.
            assert 0.005 < resampler.backlog.most < 0.1


def test_the_input_resampler_gives_each_block_its_share():
    """soxr returns 30 ms bursts; paced, an engine at 48 kHz gets 384 samples
    for every 128-sample block at 16 kHz once the first burst is in, as an
    app's resampler would give it, and the samples are still soxr's."""
    signal = np.random.default_rng(1).standard_normal(32000).astype(np.float32) * 0.1
    resampler = streaming.Resampler(16000, 48000, block=128)
    sizes = [len(resampler(signal[start : start + 128])) for start in range(0, len(signal), 128)]
    first = next(index for index, size in enumerate(sizes) if size)
    assert first <= 6 and set(sizes[first:]) == {384}
    resampler = streaming.Resampler(16000, 48000, block=128)
    pieces = [resampler(signal[start : start + 128]) for start in range(0, len(signal), 128)]
    pieces.append(resampler(np.zeros(0, np.float32), last=True))
    assert arrays_equal(np.concatenate(pieces), soxr.resample(signal, 16000, 48000, quality="HQ"))


@pytest.mark.slow
@pytest.mark.parametrize("name", STREAMABLE_BUILTINS)
def test_builtin_engine_streamed_equals_its_whole_clip_output(name, demo_tts_sources):
    """Exactly equal, for every block size: the frame adapters buffer blocks
    into the library's frames (10 ms; DeepFilterNet's 480-sample hop at 48 kHz)
    and pad only at the end, as the whole-clip run does (RNNoise's served
    program frames the blocks it is sent, and the stream sends the leading and
    trailing zeros the whole-clip run adds), and soxr's streaming resampler
    equals its one-shot one. So no tolerance is needed; after the
    delay is removed the output is aligned with the clean voice."""
    found = registry()
    if not found.engines.get(name).available:
        pytest.skip(f"{name} not installed ({found.engines.get(name).spec.install})")
    spec = found.engines.get(name).spec
    source = excerpt(stationary_sources(demo_tts_sources)[0], EXCERPT_SECONDS)
    store = cache.Cache(cache.cache_root())
    whole = run(spec, source, None, store)
    for size in BLOCK_SIZES:
        streamed = run(spec, source, Blocks(size), store)
        info = streamed.record.streaming
        assert info["streamable"] and info["block_size"] == size
        assert arrays_equal(streamed.output, whole.output), f"{name}, blocks of {size}: differs from the whole clip"
        assert info["versus_whole"] == streaming.IDENTICAL and info["whole_from"] == "cache"
        assert estimate_lag(streamed.output, source.load().clean, MAX_LAG) == 0
        assert len(info["block_ms"]) == -(-len(source.load().noisy) // size)


class Smoother:
    """A one-pole low-pass: stateful, so a stream must carry its state across blocks."""

    sample_rate = 16000
    delay = 0
    coefficients = ([0.2], [1.0, -0.8])

    def __init__(self, forgetful: bool = False):
        self.forgetful = forgetful

    def process(self, audio):
        return scipy.signal.lfilter(*self.coefficients, audio).astype(np.float32)

    def stream(self):
        return SmootherStream(self.coefficients, self.forgetful)

    def close(self):
        pass


class SmootherStream:
    def __init__(self, coefficients, forgetful: bool):
        self.coefficients, self.forgetful = coefficients, forgetful
        self.state = np.zeros(1)

    def process(self, block):
        if self.forgetful:  # the bug: every block starts from silence
            self.state = np.zeros(1)
        output, self.state = scipy.signal.lfilter(*self.coefficients, block, zi=self.state)
        return output.astype(np.float32)

    def flush(self):
        return np.zeros(0, np.float32)


def smoother_spec(forgetful: bool) -> EngineSpec:
    return EngineSpec(name="smoother", factory=lambda options: Smoother(forgetful), description="test", sample_rate=16000, delay=0)


def test_a_stream_that_forgets_its_state_is_caught():
    source = tone_source()
    right = run(smoother_spec(False), source, Blocks(128)).record
    wrong = run(smoother_spec(True), source, Blocks(128)).record
    assert right.streaming["versus_whole"] == streaming.IDENTICAL
    assert isinstance(wrong.streaming["versus_whole"], float) and wrong.streaming["versus_whole"] < 30
    summary = streaming_summary.engine_summary([wrong])["versus_whole"]
    assert summary["identical"] == 0 and summary["si_sdr_db_min"] == wrong.streaming["versus_whole"]
    assert summary["text"].startswith("differs on 1 of 1 clips")


SLEEP_SECONDS = 0.025
SLEEP_EVERY = 50


class Sleeper:
    """Returns its input; its stream sleeps on every 50th block, longer than a block lasts."""

    sample_rate = None
    delay = 0

    def __init__(self):
        self.slept = 0.0

    def process(self, audio):
        return audio.copy()

    def stream(self):
        return SleeperStream(self)

    def close(self):
        pass


class SleeperStream:
    def __init__(self, engine: Sleeper):
        self.engine, self.calls = engine, 0

    def process(self, block):
        self.calls += 1
        if self.calls % SLEEP_EVERY == 0:
            start = time.perf_counter()
            time.sleep(SLEEP_SECONDS)
            self.engine.slept += time.perf_counter() - start
        return np.array(block, dtype=np.float32)

    def flush(self):
        return np.zeros(0, np.float32)


def test_slow_blocks_show_as_deadline_misses_and_in_the_p99():
    engine = Sleeper()
    spec = EngineSpec(name="sleeper", factory=lambda options: engine, description="test", sample_rate=None, delay=0)
    record = run(spec, tone_source(seconds=2.0), Blocks(160)).record  # 200 blocks of 10 ms
    info = record.streaming
    times = np.asarray(info["block_ms"])
    assert len(times) == 200 and info["deadline_ms"] == 10.0
    slow = times[SLEEP_EVERY - 1 :: SLEEP_EVERY]
    assert len(slow) == 4 and np.all(slow >= 1000 * SLEEP_SECONDS)
    # The blocks' times and the flush are the clip's wall time, to the timer's resolution.
    assert sum(times) + info["flush_ms"] == pytest.approx(1000 * record.wall_seconds, abs=1e-6)
    # ...and hold what the engine itself spent.
    assert sum(slow) >= 1000 * engine.slept
    summary = streaming_summary.engine_summary([record])
    assert summary["deadline_misses"] >= 4 and summary["blocks"] == 200
    # 4 blocks in 200 are 2%: the 99th percentile is a slow one, the median is not.
    assert summary["block_ms_p99"] >= 1000 * SLEEP_SECONDS > summary["block_ms_p50"]
    assert summary["block_ms_max"] == max(times)


def test_buffering_and_resampler_delay_are_measured_apart():
    """A 10 ms frame engine fed 128-sample blocks holds the whole first block
    back (8 ms); its declared delay is added. A clip at 44.1 kHz makes the
    harness resample, which buffers on its own account."""
    record = run(registry().engines.get("speex").spec, tone_source(rate=16000), Blocks(128)).record
    info = record.streaming
    assert info["buffering_ms"] == pytest.approx(8.0) and info["declared_delay_ms"] == pytest.approx(10.0)
    assert info["resampler_delay_ms"] == 0.0
    summary = streaming_summary.engine_summary([record])
    assert summary["algorithmic_delay_ms"] == pytest.approx(18.0)
    resampled = run(smoother_spec(False), tone_source(rate=44100), Blocks(ms=10)).record.streaming
    assert resampled["block_size"] == 441 and resampled["buffering_ms"] == 0.0
    assert resampled["resampler_delay_ms"] > 5


def test_streamed_outputs_are_cached_by_block_size():
    source = tone_source()
    store = cache.Cache(cache.cache_root())
    first = run(smoother_spec(False), source, Blocks(128), store).record
    assert first.streaming["whole_from"] == "computed" and not first.from_cache
    again = run(smoother_spec(False), source, Blocks(128), store).record
    assert again.from_cache and again.streaming == first.streaming
    other = run(smoother_spec(False), source, Blocks(256), store).record
    assert not other.from_cache and other.streaming["whole_from"] == "cache"
    whole = run(smoother_spec(False), source, None, store).record
    assert whole.from_cache and whole.streaming == {}


@pytest.mark.parametrize("name", WHOLE_ONLY_BUILTINS)
def test_builtin_engines_that_cannot_stream_offer_no_stream(name):
    spec = registry().engines.get(name).spec
    engine = spec.factory({})
    try:
        assert streaming.open_stream(engine, spec.oracle) is None
    finally:
        engine.close()


def test_rnnoise_with_a_users_demo_program_cannot_stream(tmp_path):
    from tests.helpers.programs import python_program

    from nsbench.builtin.engines import rnnoise

    script = tmp_path / "copy_demo.py"  # the demo's file protocol: first frame and a partial last one not written
    script.write_text("import sys\ndata = open(sys.argv[1], 'rb').read()\n"
                      "open(sys.argv[2], 'wb').write(data[960 : len(data) // 960 * 960])\n")
    engine = rnnoise.build({"rnnoise_demo_path": str(python_program(tmp_path, "copy", str(script)))})
    try:
        assert streaming.open_stream(engine, oracle=False) is None
    finally:
        engine.close()


class WholeOnly:
    sample_rate = 16000
    delay = 0

    def process(self, audio):
        return 0.5 * audio

    def close(self):
        pass


class WholeOnlyPlugin:
    @hookimpl
    def register_engines(self, register):
        register(EngineSpec(name="whole-only", factory=lambda options: WholeOnly(), description="test", sample_rate=16000, delay=0))


def test_only_unstreamable_engines_say_so_in_one_line(tmp_path, capsys):
    run_cli = cli_with(WholeOnlyPlugin())
    data = make_folder_dataset(tmp_path / "data", count=2)
    code = run_cli(["--dataset", "folder", "--data-folder", str(data), "--engine", "whole-only", "--block-size", "128",
                 "--metric", "si_sdr", "--results-folder", str(tmp_path / "results"), "--jobs", "1",
                 "--no-html", "--no-plots", "--quiet"])
    assert code == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "can stream" in line]
    assert lines == ["nsbench: --block-size 128: none of the engines run can stream (whole-only); "
                     "they ran whole clips, marked so in the results"]
    folder = tmp_path / "results" / "folder"
    result = json.loads((folder / "whole-only.json").read_text())
    assert result["streaming"] == {"streamable": False, "block_size": 128, "clips": 2, "why": "the engine offers no stream"}
    assert json.loads((folder / "passthrough.json").read_text())["streaming"]["streamable"] is True
    report = (folder / "report.md").read_text()
    assert "| whole-only | no: the engine offers no stream; ran whole clips | 128 |" in report
    assert "| passthrough | yes | 128 (8.0 ms) |" in report and report.count("| identical |") == 1


def test_block_flags_are_checked(capsys):
    assert main(["--block-size", "0", "--engine", "passthrough"]) == 2
    assert "--block-size must be at least 1 sample, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--block-size", "128", "--block-ms", "10"])
    assert "not allowed with argument" in capsys.readouterr().err


class WholeOnlyNaN:
    """Offers no stream, and returns NaN on the whole clip: it fails the clip."""

    sample_rate = 16000
    delay = 0

    def process(self, audio):
        return np.full(len(audio), np.nan, np.float32)

    def close(self):
        pass


def test_a_clip_failed_by_an_engine_that_cannot_stream_keeps_why_it_ran_whole():
    """The record is built once from what the clip's steps returned (nsbench.run.clips.clip_outcome);
    a failure on the whole-clip fallback still says why it ran whole, and is flagged as NaN."""
    spec = EngineSpec(name="whole-nan", factory=lambda options: WholeOnlyNaN(), description="test", sample_rate=16000, delay=0)
    [outcome] = run_engine(EngineRun(spec, {}, metric_specs("si_sdr"), blocks=Blocks(128)), [tone_source()])
    record = outcome.record
    assert record.failed and "NaN" in record.error and record.flags == ["nan_inf"]
    assert record.streaming == {"streamable": False, "block_size": 128, "why": "the engine offers no stream"}
    assert record.duration == pytest.approx(2.0) and record.sample_rate == 16000  # what loading gave is kept
    with pytest.raises(dataclasses.FrozenInstanceError):  # and nothing changes it afterwards
        record.error = None
