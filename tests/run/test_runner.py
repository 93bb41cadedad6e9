"""The run loop: resampling, delay compensation, output checks, failures, rebuilds."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from nsbench.audio.files import load_pair, resample
from nsbench.builtin.engines.passthrough import Passthrough
from nsbench.builtin.metrics.sisdr import si_sdr
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.run.engine_run import EngineRun
from nsbench.run.runner import run_engine
from nsbench.plugins.engine import MEASURED
from nsbench.plugins.records import Clip, ClipSource
from nsbench.plugins.specs import EngineSpec
from nsbench.plugins.errors import UserError

from tests.helpers.audio import tone_and_noise, write_wav


def in_memory_source(clip_id: str, noisy: np.ndarray, clean: np.ndarray, rate: int = 16000) -> ClipSource:
    clip = Clip(clip_id=clip_id, noisy=noisy, clean=clean, sample_rate=rate, labels={"set": "t"})
    return ClipSource(clip_id=clip_id, load=lambda: clip, labels=clip.labels)


def metrics(*names: str):
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    return [registry.metrics.get(name).spec for name in names]


def engine_spec(factory, *, rate: int = 16000, delay: int | str = 0, oracle: bool = False, name: str = "test-engine") -> EngineSpec:
    return EngineSpec(name=name, factory=factory, description="test", sample_rate=rate, delay=delay, oracle=oracle)


class DelayingEngine:
    """Works at 48 kHz and delays its output by ``lag`` samples, as a frame-based engine does."""

    def __init__(self, lag: int, declared: int):
        self.sample_rate, self.delay, self.lag = 48000, declared, lag

    def process(self, audio):
        return np.concatenate([np.zeros(self.lag, np.float32), audio[: len(audio) - self.lag]])

    def close(self):
        pass


def sources(count: int = 3):
    result = []
    for index in range(count):
        clean, noise = tone_and_noise(index)
        result.append(in_memory_source(f"clip{index}", clean + noise, clean))
    return result


def test_declared_delay_at_48k_is_removed_exactly():
    clip = sources(1)
    [outcome] = run_engine(EngineRun(engine_spec(lambda o: DelayingEngine(480, declared=480), rate=48000, delay=480), {}, metrics("si_sdr")), clip)
    noisy = clip[0].load().noisy
    assert len(outcome.output) == len(noisy)
    # What a delay-free engine at 48 kHz would give: the input's resampling round trip.
    round_trip = resample(resample(noisy, 16000, 48000), 48000, 16000)
    assert si_sdr(outcome.output, round_trip) > 60
    lag = np.argmax(np.correlate(outcome.output[:4000], noisy[:4000], "full")) - 3999
    assert lag == 0


def test_undeclared_delay_shows_in_the_score():
    clip = sources(1)
    spec = engine_spec(lambda o: DelayingEngine(480, declared=0), rate=48000, delay=0)
    [outcome] = run_engine(EngineRun(spec, {}, metrics("si_sdr")), clip)
    assert si_sdr(outcome.output, clip[0].load().noisy) < 10


class Faulty:
    """Fails in one way on clip number ``bad`` (counted per engine instance)."""

    builds = 0

    def __init__(self, fault: str, bad: int = 1):
        Faulty.builds += 1
        self.sample_rate, self.delay, self.fault, self.bad, self.calls = 16000, 0, fault, bad, 0

    def process(self, audio):
        self.calls += 1
        if self.calls - 1 != self.bad:
            return audio.copy()
        if self.fault == "raise":
            raise RuntimeError("model exploded")
        if self.fault == "nan":
            out = audio.copy()
            out[10] = np.nan
            return out
        if self.fault == "short":
            return audio[:-5]
        if self.fault == "int":
            return (audio * 32767).astype(np.int16)
        if self.fault == "list":
            return list(audio)
        if self.fault == "stereo":
            return np.stack([audio, audio])
        raise AssertionError(self.fault)

    def close(self):
        pass


@pytest.mark.parametrize(
    "fault, message",
    [
        ("raise", "engine raised RuntimeError: model exploded"),
        ("nan", "engine output has 1 NaN or Inf sample"),
        ("short", r"engine returned 31995 samples for 32000 in"),
        ("int", "engine returned dtype int16, expected floating point"),
        ("list", "engine returned list, expected a numpy array"),
        ("stereo", r"engine returned an array of shape \(2, 32000\), expected mono \(1-D\)"),
    ],
)
def test_a_faulty_clip_is_recorded_and_the_others_scored(fault, message):
    import re

    outcomes = list(run_engine(EngineRun(engine_spec(lambda o: Faulty(fault)), {}, metrics("si_sdr")), sources(3)))
    records = [o.record for o in outcomes]
    assert [r.failed for r in records] == [False, True, False]
    assert re.fullmatch(message, records[1].error)
    assert outcomes[1].output is None
    clean_run = [o.record for o in run_engine(EngineRun(engine_spec(lambda o: Passthrough()), {}, metrics("si_sdr")), sources(3))]
    assert records[2].scores == clean_run[2].scores


def test_an_engine_that_raised_is_rebuilt_for_the_next_clip():
    Faulty.builds = 0
    list(run_engine(EngineRun(engine_spec(lambda o: Faulty("raise", bad=1)), {}, metrics("si_sdr")), sources(3)))
    assert Faulty.builds == 2


def test_engine_is_closed_even_when_the_consumer_stops_early():
    closed = []

    class Tracked(Passthrough):
        def close(self):
            closed.append(True)

    generator = run_engine(EngineRun(engine_spec(lambda o: Tracked()), {}, metrics("si_sdr")), sources(3))
    next(generator)
    generator.close()
    assert closed == [True]


def test_an_engine_that_cannot_start_is_a_user_error():
    def broken(options):
        raise OSError("libfoo.so: cannot open shared object file")

    with pytest.raises(UserError, match="engine 'test-engine' could not start: OSError: libfoo.so"):
        list(run_engine(EngineRun(engine_spec(broken), {}, metrics("si_sdr")), sources(1)))


def test_oracle_engines_receive_the_clean_reference():
    class Cheater(Passthrough):
        def process(self, audio, clean):
            return clean.copy()

    [outcome] = run_engine(EngineRun(engine_spec(lambda o: Cheater(), oracle=True), {}, metrics("si_sdr")), sources(1))
    assert outcome.record.scores["si_sdr"] == 120.0


def test_unreadable_file_fails_that_clip_only(tmp_path):
    clean, noise = tone_and_noise(0)
    good = write_wav(tmp_path / "good_noisy.wav", clean + noise, 16000)
    good_clean = write_wav(tmp_path / "good_clean.wav", clean, 16000)
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt ")
    items = [
        ClipSource("broken", functools.partial(load_pair, "broken", str(broken), str(good_clean), {})),
        ClipSource("good", functools.partial(load_pair, "good", str(good), str(good_clean), {})),
    ]
    records = [o.record for o in run_engine(EngineRun(engine_spec(lambda o: Passthrough()), {}, metrics("si_sdr")), items)]
    assert records[0].failed and records[0].error.startswith(f"cannot read {broken}")
    assert not records[1].failed and "si_sdr" in records[1].scores


def test_stereo_and_rate_mismatch_are_treated_and_noted(tmp_path):
    clean, noise = tone_and_noise(0, rate=16000)
    noisy_path = write_wav(tmp_path / "n.wav", np.stack([clean + noise, clean + noise], axis=1), 16000)
    clean_48k = np.interp(np.arange(len(clean) * 3) / 3, np.arange(len(clean)), clean).astype(np.float32)
    clean_path = write_wav(tmp_path / "c.wav", clean_48k, 48000)
    clip = load_pair("x", str(noisy_path), str(clean_path), {})
    assert clip.sample_rate == 16000 and clip.noisy.ndim == 1
    assert "n.wav: 2 channels downmixed to mono" in clip.notes
    assert "clean resampled from 48000 Hz to 16000 Hz" in clip.notes
    assert si_sdr(clip.clean, clean[: len(clip.clean)]) > 30


def test_cpu_time_of_a_busy_engine_is_measured():
    class Busy(Passthrough):
        def process(self, audio):
            total = 0.0
            for _ in range(40):
                total += float(np.sum(np.abs(np.fft.rfft(np.tile(audio, 8)))))
            return audio.copy()

    [outcome] = run_engine(EngineRun(engine_spec(lambda o: Busy()), {}, metrics("rtf_cpu")), sources(1))
    record = outcome.record
    assert record.cpu_seconds > 0 and record.wall_seconds > 0
    assert record.scores["rtf_cpu"] == pytest.approx(record.cpu_seconds / record.duration)


class RegisteredFaulty:
    @hookimpl
    def register_engines(self, register):
        register(engine_spec(lambda o: Faulty("nan"), name="nan-engine"))


def test_engines_registered_by_a_plugin_class_run_through_the_loop():
    manager = get_plugin_manager(load_entry_points=False)  # fresh per test: nothing to unregister
    manager.register(RegisteredFaulty())
    spec = build_registry(manager).engines.get("nan-engine").spec
    records = [o.record for o in run_engine(EngineRun(spec, {}, metrics("si_sdr")), sources(2))]
    assert [r.failed for r in records] == [False, True]


def test_prepare_runs_before_each_clip_outside_the_timer():
    class SlowToPrepare(Passthrough):
        prepared = 0

        def prepare(self):
            SlowToPrepare.prepared += 1
            deadline = time.process_time() + 0.2
            while time.process_time() < deadline:  # burn CPU like a model reload
                pass

    import time

    records = [o.record for o in run_engine(EngineRun(engine_spec(lambda o: SlowToPrepare()), {}, metrics("si_sdr")), sources(2))]
    assert SlowToPrepare.prepared == 2
    assert all(r.cpu_seconds < 0.1 for r in records)


def test_engine_notes_and_the_delay_removed_are_kept():
    class Estimating(DelayingEngine):
        def __init__(self):
            super().__init__(480, declared=480)
            self.notes = ["delay estimated by cross-correlation: 480 samples at 48000 Hz"]

    notes: list[str] = []
    # The engine reports its delay once built (MEASURED on the spec), as RNNoise does.
    outcomes = list(run_engine(EngineRun(engine_spec(lambda o: Estimating(), rate=48000, delay=MEASURED), {}, metrics("si_sdr")), sources(2), notes))
    assert notes == ["delay estimated by cross-correlation: 480 samples at 48000 Hz"]
    assert [o.record.delay for o in outcomes] == ["480 samples at 48000 Hz"] * 2


def separation_source(clip_id: str = "mix") -> ClipSource:
    clean, noise = tone_and_noise(0)
    sources_ = np.stack([clean, noise, np.zeros_like(clean), np.zeros_like(clean)])
    clip = Clip(clip_id=clip_id, noisy=clean + noise, clean=np.zeros_like(clean), sample_rate=16000, sources=sources_)
    return ClipSource(clip_id=clip_id, load=lambda: clip)


def test_separation_clips_take_several_outputs_at_another_rate_with_delay():
    class Separator:
        sample_rate, delay = 48000, 96

        def process(self, audio):
            late = np.concatenate([np.zeros(self.delay, np.float32), audio[: -self.delay]])
            return np.stack([late, 0.5 * late])

        def close(self):
            pass

    [outcome] = run_engine(EngineRun(engine_spec(lambda o: Separator(), rate=48000, delay=96), {}, metrics("rtf_cpu", "si_sdr")), [separation_source()])
    assert not outcome.record.failed, outcome.record.error
    assert outcome.output.shape == (2, 32000)
    mixture = separation_source().load().noisy
    round_trip = resample(resample(mixture, 16000, 48000), 48000, 16000)
    assert si_sdr(outcome.output[0], round_trip) > 60 and si_sdr(outcome.output[1], round_trip) > 60
    # Enhancement metrics do not apply to a separation clip; timing does.
    assert set(outcome.record.scores) == {"rtf_cpu"} and outcome.record.undefined == {}


def test_a_single_output_engine_fills_every_source_slot():
    from nsbench.run.scoring import separated

    clip = separation_source().load()
    output = clip.noisy.copy()
    np.testing.assert_array_equal(separated(output, clip), np.stack([output] * 4))
    assert separated(output, Clip("x", output, output, 16000)) is None


def test_several_outputs_on_an_enhancement_clip_are_refused():
    class TwoOut(Passthrough):
        def process(self, audio):
            return np.stack([audio, audio])

    [outcome] = run_engine(EngineRun(engine_spec(lambda o: TwoOut()), {}, metrics("si_sdr")), sources(1))
    assert outcome.record.error == "engine returned an array of shape (2, 32000), expected mono (1-D)"


def test_passthrough_at_48k_is_the_input_bit_for_bit():
    clean, noise = tone_and_noise(3, rate=48000)
    [outcome] = run_engine(EngineRun(engine_spec(lambda o: Passthrough(), rate=None), {}, metrics("si_sdri")), [in_memory_source("hi-res", clean + noise, clean, 48000)])
    np.testing.assert_array_equal(outcome.output, clean + noise)
    assert outcome.record.delay == "0 samples at 48000 Hz" and outcome.record.scores["si_sdri"] == 0.0


def test_metrics_run_with_one_blas_thread_on_every_clip():
    """Scores are computed with BLAS limited to one thread, also after a
    metric imported a module mid-run (the limit then lists libraries again)."""
    from threadpoolctl import threadpool_info

    from nsbench.plugins.specs import MetricSpec

    def blas_threads(inputs):
        import json  # noqa: F401  (a new import changes sys.modules on the first clip)

        return max((pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"), default=1)

    spec = MetricSpec(name="blas_threads", func=blas_threads, unit="", higher_is_better=True, description="", ignores="")
    outcomes = list(run_engine(EngineRun(engine_spec(lambda o: Passthrough()), {}, [spec]), sources(3)))
    assert [o.record.scores["blas_threads"] for o in outcomes] == [1, 1, 1]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_in_the_clean_reference_fails_its_clip_with_where_and_the_run_goes_on(bad):
    """A dataset plugin's clip (the folder reader already refuses such files):
    STOI and ESTOI raised "window shape cannot be larger than input array
    shape" and the SI-SDR check ended the whole run (issue 22)."""
    good = sources(2)
    clean, noise = tone_and_noise(5)
    broken = clean.copy()
    broken[100] = bad
    clips = [good[0], in_memory_source("broken", clean + noise, broken), good[1]]
    outcomes = list(run_engine(EngineRun(engine_spec(lambda o: Passthrough()), {}, metrics("stoi", "estoi", "si_sdr")), clips))
    assert [outcome.record.clip_id for outcome in outcomes] == ["clip0", "broken", "clip1"]
    failed = outcomes[1].record
    assert failed.error == "the clean reference has 1 NaN or Inf sample (the first at sample 100)"
    assert failed.scores == {}
    for outcome in (outcomes[0], outcomes[2]):
        assert outcome.record.error is None and set(outcome.record.scores) == {"stoi", "estoi", "si_sdr"}


def test_nan_in_the_noisy_input_fails_its_clip_too():
    clean, noise = tone_and_noise(6)
    noisy = clean + noise
    noisy[7:10] = np.nan
    [outcome] = run_engine(EngineRun(engine_spec(lambda o: Passthrough()), {}, metrics("si_sdr")), [in_memory_source("n", noisy, clean)])
    assert outcome.record.error == "the noisy input has 3 NaN or Inf samples (the first at sample 7)"
