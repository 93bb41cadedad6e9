"""The conformance kit: what a plugin author calls from their own tests.

    from nsbench.testing import check_engine

    def test_my_engine_conforms():
        check_engine("my-engine")          # or check_engine(MY_SPEC, options={...})

``check_engine`` runs the engine on a few generated clips, by itself at its
own rate and through nsbench's real run loop, and checks what the harness
relies on: the output has the input's length and is finite; the declared
delay matches the lag measured by cross-correlation; two runs on the same
clip agree (or the spec says ``seeded`` and the same seed gives the same
output); ``close()`` is called for every engine built. It raises
``ConformanceError`` (an AssertionError, so pytest shows it) listing every
fault in one line each. ``check_dataset`` and ``check_metric`` do the same
for datasets and metrics. nsbench's own built-ins pass the same kit.
"""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nsbench.text import plural
from nsbench.plugins.engine import MEASURED
from nsbench.plugins.records import Clip, ClipSource, MetricInputs
from nsbench.plugins.specs import DatasetSpec, EngineSpec, MetricSpec
from nsbench.plugins.errors import MetricUndefined

CLIP_SECONDS = 1.0
CLIP_COUNT = 2
DEFAULT_RATE = 16000  # for an engine that works at any rate
INPUT_SNR_DB = 10.0
# Declared and measured delay may differ by this much: a filter's phase
# (WebRTC's high-pass) moves the cross-correlation peak by a few samples,
# while a wrong delay is off by a frame or more (2.5 ms and up).
DELAY_TOLERANCE_SECONDS = 0.0005
# A measured lag is sought within this window (nsbench.audio.alignment's).
MAX_LAG_SECONDS = 0.1


class ConformanceError(AssertionError):
    """The plugin breaks the contract; the message lists each fault."""


@dataclass
class Findings:
    """What a check found: ``faults`` break the contract; ``facts`` are for the author."""

    name: str
    faults: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)

    def raise_if_faulty(self, noun: str) -> Findings:
        if self.faults:
            lines = "\n".join(f"  - {fault}" for fault in self.faults)
            raise ConformanceError(f"{noun} '{self.name}' fails nsbench's conformance checks:\n{lines}")
        return self


# --------------------------------------------------------------------------- clips


def generated_clip(index: int, rate: int, seconds: float = CLIP_SECONDS) -> Clip:
    """A voice-like signal (noise shaped by a syllable rhythm, plus a gliding
    harmonic tone: aperiodic enough for an unambiguous lag) in white noise."""
    rng = np.random.default_rng(1000 + index)
    count = int(seconds * rate)
    time = np.arange(count) / rate
    syllables = np.abs(np.sin(2 * np.pi * (2.5 + index) * time)) ** 2
    pitch = 140 + 40 * index + 20 * np.sin(2 * np.pi * 1.3 * time)
    tone = sum(np.sin(2 * np.pi * harmonic * np.cumsum(pitch) / rate) / harmonic for harmonic in (1, 2, 3, 4))
    breath = np.convolve(rng.standard_normal(count), np.ones(4) / 4, mode="same")
    clean = 0.05 * syllables * (tone + 0.5 * breath)
    noise = rng.standard_normal(count)
    noise *= np.sqrt(np.mean(clean**2) / np.mean(noise**2)) * 10 ** (-INPUT_SNR_DB / 20)
    return Clip(
        clip_id=f"generated-{index}",
        noisy=(clean + noise).astype(np.float32),
        clean=clean.astype(np.float32),
        sample_rate=rate,
        noise=noise.astype(np.float32),
        labels={"kind": "generated"},
    )


def _keep(clip: Clip) -> Callable[[], Clip]:
    return lambda: clip


def generated_sources(rate: int, count: int = CLIP_COUNT) -> list[ClipSource]:
    return [ClipSource(clip.clip_id, _keep(clip), dict(clip.labels)) for clip in (generated_clip(i, rate) for i in range(count))]


# --------------------------------------------------------------------------- engines


def check_engine(spec_or_name: EngineSpec | str, options: Mapping[str, Any] | None = None) -> Findings:
    """Checks an engine against the contract (module docstring); returns the
    findings, or raises ConformanceError naming each fault. ``options`` are
    what its factory receives (its flags' values; ``seed`` is added)."""
    spec = _engine_spec(spec_or_name)
    options = {"seed": 0 if spec.seeded else None, **(options or {})}
    findings = Findings(spec.name)
    engine = spec.factory(options)
    try:
        spec.declare_on(engine)
        rate = spec.rate_of(engine) or DEFAULT_RATE
        delay = spec.delay_of(engine)
        findings.facts.append(f"rate {rate} Hz, delay {delay} samples" + (" (measured by the engine)" if spec.delay == MEASURED else ""))
        clips = [generated_clip(index, rate) for index in range(CLIP_COUNT)]
        outputs = [_run_alone(engine, spec, clip, delay, findings) for clip in clips]
        if all(output is not None for output in outputs):
            _check_delay(outputs, clips, delay, rate, findings)
            _check_repeatable(engine, spec, options, clips[0], delay, outputs[0], findings)
    finally:
        engine.close()
    _check_in_run_loop(spec, options, findings)
    return findings.raise_if_faulty("engine")


def _engine_spec(spec_or_name: EngineSpec | str) -> EngineSpec:
    if isinstance(spec_or_name, EngineSpec):
        return spec_or_name
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry

    return build_registry(get_plugin_manager()).engines.require_available(spec_or_name).spec


def _process(engine: Any, spec: EngineSpec, clip: Clip, delay: int) -> Any:
    """As the harness calls it: ``delay`` zeros appended, the clean reference for an oracle."""
    reference = {"clean": np.pad(clip.clean, (0, delay))} if spec.oracle else {}
    getattr(engine, "prepare", lambda: None)()
    return engine.process(np.pad(clip.noisy, (0, delay)), **reference)


def _run_alone(engine: Any, spec: EngineSpec, clip: Clip, delay: int, findings: Findings) -> np.ndarray | None:
    """The raw output, or None after noting why it is unusable."""
    expected = len(clip.noisy) + delay
    try:
        output = _process(engine, spec, clip, delay)
    except Exception as error:
        findings.faults.append(f"process() raised {type(error).__name__}: {error} on {clip.clip_id}")
        return None
    if not isinstance(output, np.ndarray) or not np.issubdtype(output.dtype, np.floating):
        findings.faults.append(f"process() returned {type(output).__name__} {getattr(output, 'dtype', '')}, expected a float numpy array")
        return None
    if output.ndim != 1 or output.shape[-1] != expected:
        findings.faults.append(f"output length: process() returned shape {output.shape} for {expected} samples in; expected ({expected},)")
        return None
    bad = int(np.count_nonzero(~np.isfinite(output)))
    if bad:
        findings.faults.append(f"output not finite: {plural(bad, 'NaN or Inf sample')} on {clip.clip_id}")
        return None
    return output


def _check_delay(outputs: Sequence[np.ndarray], clips: Sequence[Clip], delay: int, rate: int, findings: Findings) -> None:
    from nsbench.audio.alignment import estimate_lag

    max_lag = int(MAX_LAG_SECONDS * rate)
    lags = [estimate_lag(output[: len(clip.clean)], clip.clean, max_lag) for output, clip in zip(outputs, clips)]
    measured = sorted(lag for lag in lags if lag is not None)
    if not measured:
        findings.facts.append("delay not measurable: the output does not follow the input's voice")
        return
    lag = measured[len(measured) // 2]
    findings.facts.append(f"measured lag {lag} samples at {rate} Hz")
    if abs(lag - delay) > DELAY_TOLERANCE_SECONDS * rate:
        findings.faults.append(
            f"declared delay {delay} samples at {rate} Hz, but the output lags the input by {lag} "
            f"(cross-correlation on {len(measured)} generated clips): declare delay={lag} on the EngineSpec"
        )


def _check_repeatable(engine: Any, spec: EngineSpec, options: Mapping[str, Any], clip: Clip, delay: int,
                      first: np.ndarray, findings: Findings) -> None:
    """Deterministic engines give the same output twice; seeded ones, for the same seed."""
    if spec.seeded:
        twin = spec.factory(options)
        try:
            spec.declare_on(twin)
            again = _process(twin, spec, clip, delay)
        finally:
            twin.close()
        what = f"two engines built with seed {options.get('seed')}"
    else:
        again = _process(engine, spec, clip, delay)
        what = "two runs on the same clip"
    if not np.array_equal(np.asarray(again), first):
        difference = float(np.max(np.abs(np.asarray(again, dtype=np.float64) - first)))
        hint = "read options['seed']" if spec.seeded else "make it deterministic (a fresh state in prepare()), or declare seeded=True"
        findings.faults.append(f"not repeatable: {what} differ (largest difference {difference:.3g}): {hint}")


def _check_in_run_loop(spec: EngineSpec, options: Mapping[str, Any], findings: Findings) -> None:
    """Through nsbench's run loop: every clip runs, and every engine built is closed."""
    from nsbench.run.engine_run import EngineRun
    from nsbench.run.runner import run_engine

    built, closed = [], []

    def counting_factory(factory_options: Mapping[str, Any]) -> Any:
        engine = spec.factory(factory_options)
        built.append(engine)
        close = engine.close
        engine.close = lambda: (closed.append(engine), close())[1]
        return engine

    counted = dataclasses.replace(spec, factory=counting_factory)
    rate = spec.sample_rate if isinstance(spec.sample_rate, int) else DEFAULT_RATE
    try:
        outcomes = list(run_engine(EngineRun(counted, options, []), generated_sources(rate)))
    except Exception as error:
        findings.faults.append(f"the run loop could not run it: {type(error).__name__}: {error}")
        return
    for outcome in outcomes:
        if outcome.record.failed:
            findings.faults.append(f"in the run loop, {outcome.record.clip_id} failed: {outcome.record.error}")
    missing = [engine for engine in built if engine not in closed]
    if missing:
        findings.faults.append(f"close() was not called on {len(missing)} of {plural(len(built), 'engine')} built (does the engine replace close?)")


# --------------------------------------------------------------------------- datasets


def check_dataset(spec_or_name: DatasetSpec | str, options: Mapping[str, Any] | None = None, limit: int = 5) -> Findings:
    """Loads the first ``limit`` clips: float32 mono arrays of one length, finite,
    a positive rate, the cell keys among the labels, unique ids, sources that
    pickle (worker processes receive them). ``options`` are what a run gives
    ``clips``: the flags the dataset's plugin added and ``data_folder``,
    nothing else (PLUGIN_API 4)."""
    spec = spec_or_name if isinstance(spec_or_name, DatasetSpec) else _registry().datasets.require_available(spec_or_name).spec
    findings = Findings(spec.name)
    sources = spec.clips(dict(options or {}))
    if not sources:
        findings.faults.append("clips(options) returned no clips")
    ids = [source.clip_id for source in sources]
    if len(set(ids)) != len(ids):
        findings.faults.append("clip ids are not unique")
    for source in sources[:limit]:
        _check_source(spec, source, findings)
    return findings.raise_if_faulty("dataset")


def _check_source(spec: DatasetSpec, source: ClipSource, findings: Findings) -> None:
    missing = [key for key in spec.cell_keys if key not in source.labels]
    if missing:
        findings.faults.append(f"{source.clip_id}: labels lack the cell keys {missing}")
    try:
        pickle.dumps(source)
    except Exception as error:
        findings.faults.append(f"{source.clip_id}: the ClipSource does not pickle ({error}): use a module-level function or a partial")
    clip = source.load()
    if not isinstance(clip, Clip):
        findings.faults.append(f"{source.clip_id}: load() returned {type(clip).__name__}, expected a Clip")
        return
    if clip.clean is None and source.has_reference:
        findings.faults.append(f"{source.clip_id}: clean is None but its ClipSource says has_reference=True")
    for role in ("noisy", "clean") if clip.clean is not None else ("noisy",):  # clean None: no reference (PLUGIN_API 3)
        array = getattr(clip, role)
        if not isinstance(array, np.ndarray) or array.dtype != np.float32 or array.ndim != 1:
            findings.faults.append(f"{source.clip_id}: {role} must be a float32 1-D array, got {getattr(array, 'dtype', type(array))} {getattr(array, 'shape', '')}")
        elif not np.all(np.isfinite(array)):
            findings.faults.append(f"{source.clip_id}: {role} holds NaN or Inf samples")
    if clip.clean is not None and len(clip.noisy) != len(clip.clean):
        findings.faults.append(f"{source.clip_id}: noisy has {len(clip.noisy)} samples, clean {len(clip.clean)}")
    if not isinstance(clip.sample_rate, int) or clip.sample_rate <= 0:
        findings.faults.append(f"{source.clip_id}: sample_rate {clip.sample_rate!r} is not a positive int")


# --------------------------------------------------------------------------- metrics


def check_metric(spec_or_name: MetricSpec | str) -> Findings:
    """On generated clips: the function returns a finite float (or raises
    MetricUndefined with a reason), the same value twice, and does not change
    its inputs."""
    spec = spec_or_name if isinstance(spec_or_name, MetricSpec) else _registry().metrics.require_available(spec_or_name).spec
    findings = Findings(spec.name)
    for clip in (generated_clip(index, DEFAULT_RATE) for index in range(CLIP_COUNT)):
        output = (0.5 * clip.noisy + 0.5 * clip.clean).astype(np.float32)  # a plausible engine output
        inputs = MetricInputs(output=output, clean=clip.clean, noisy=clip.noisy, sample_rate=clip.sample_rate,
                              cpu_seconds=0.01, wall_seconds=0.01)
        copies = [array.copy() for array in (output, clip.clean, clip.noisy)]
        values = []
        for _ in range(2):
            try:
                values.append(spec.func(inputs))
            except MetricUndefined as reason:
                if not str(reason):
                    findings.faults.append("MetricUndefined raised without a reason")
                values.append(None)
            except Exception as error:
                findings.faults.append(f"{clip.clip_id}: raised {type(error).__name__}: {error}")
                return findings.raise_if_faulty("metric")
        if any(not np.array_equal(a, b) for a, b in zip(copies, (output, clip.clean, clip.noisy))):
            findings.faults.append("the metric changed its input arrays")
        first, second = values
        if first is not None and not (isinstance(first, (float, int, np.floating)) and np.isfinite(first)):
            findings.faults.append(f"{clip.clip_id}: returned {first!r}, expected a finite float")
        elif first != second:
            findings.faults.append(f"{clip.clip_id}: not repeatable ({first!r}, then {second!r})")
    if not spec.needs_reference:
        without_reference(spec, findings)
    return findings.raise_if_faulty("metric")


def without_reference(spec: MetricSpec, findings: Findings) -> None:
    """A metric that says needs_reference=False must work with ``clean=None``
    (the clips it is there for have none)."""
    clip = generated_clip(0, DEFAULT_RATE)
    output = (0.5 * clip.noisy + 0.5 * clip.clean).astype(np.float32)
    inputs = MetricInputs(output=output, clean=None, noisy=clip.noisy, sample_rate=clip.sample_rate,
                          cpu_seconds=0.01, wall_seconds=0.01)
    try:
        spec.func(inputs)
    except MetricUndefined:
        pass
    except Exception as error:
        findings.faults.append(f"says needs_reference=False, but without the clean reference (clean=None) "
                               f"raised {type(error).__name__}: {error}")


def _registry():
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry

    return build_registry(get_plugin_manager())
