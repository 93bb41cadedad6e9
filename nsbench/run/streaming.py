"""``--block-size``: engines run block by block, as a real-time app runs them.

A real-time suppressor gets one small block at a time (128 samples in a Web
Audio worklet, 10 ms in a call) and must keep its state between blocks, with
frames that need not line up with the blocks. With ``--block-size N`` (samples
at the clip's rate) or ``--block-ms``, every engine that offers a stream
(``Engine.stream()``, see nsbench.plugins.engine) is fed the clip in blocks:

    block -> soxr.ResampleStream to the engine's rate, paced -> stream.process
          -> the declared delay dropped -> soxr.ResampleStream back -> output

then, after the last block, the rest: the input resampler drained, ``delay``
zeros fed (the whole-clip run appends them too, so the delayed output still
holds the clip's end), ``stream.flush()``, the output resampler drained. The
output is scored as usual. soxr's streaming resampler gives, concatenated, the
very samples its one-shot ``resample`` gives (checked in the tests), so a
correct stream gives the whole-clip output to the bit.

Timing: one clock reading between consecutive blocks, so each block's time is
everything the harness does for it (resampling in, the engine's call,
resampling out), the boundary RTF uses; the blocks' times and the final flush
add up to the clip's wall time exactly (the process's CPU time per block is
kept too: on a loaded machine it shows what contention adds to the wall
time). A block misses its deadline when it
took longer than it lasts (N / rate). The passthrough engine's stream gives
the harness's own share (bench/bench_streaming.py).

Delay: ``declared_delay_ms`` is the engine's ``delay``; ``buffering_ms`` is
measured, the most input the stream held back at the end of any block (input
fed minus output returned): the latency a fixed-block app must add on top to
never run dry (a 10 ms frame engine fed 128-sample blocks holds the whole
first block). ``algorithmic_delay_ms`` is their sum. The harness's two
resamplers buffer too (``resampler_delay_ms``, the same measure on each, added;
the input side includes the Pacer's wait, which turns soxr's 30 ms bursts
into a steady share per block): that is ours, not the engine's, and is
reported apart.

The per-engine figures and the report's streaming table are
nsbench.report.streaming_summary.
"""
from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import soxr

from nsbench.audio.files import RESAMPLE_QUALITY, fit_length
from nsbench.audio.blocks import arrays_equal, spans
from nsbench.store.digests import digest, nsbench_digest
from nsbench.audio.sdr import si_sdr
from nsbench.plugins.engine import Stream
from nsbench.plugins.errors import ClipError
from nsbench.record_terms import IDENTICAL



def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--block-size", type=int, metavar="N",
                       help="run every engine that can stream block by block, N samples at the clip's rate "
                            "(128: a Web Audio worklet); the others run whole clips, marked so")
    group.add_argument("--block-ms", type=float, metavar="MS",
                       help="--block-size in milliseconds (10: a call's frame), rounded to samples at the clip's rate")


def stream_key(whole_key: str, size: int) -> str:
    """A streamed output's cache key: the whole-clip output's, the block size,
    and this module's code."""
    return digest("streamed", whole_key, str(size), nsbench_digest(("run/streaming.py",)))


def open_stream(engine: Any, oracle: bool) -> Stream | None:
    """The engine's fresh stream, or None: it cannot stream. Oracles get the
    clean reference with the whole clip, so they never stream."""
    make = getattr(engine, "stream", None)
    return None if oracle or make is None else make()


def not_streamable(size: int, oracle: bool) -> dict[str, Any]:
    why = "an oracle reads the whole clean reference" if oracle else "the engine offers no stream"
    return {"streamable": False, "block_size": size, "why": why}


# --------------------------------------------------------------------- the loop


class Resampler:
    """soxr's streaming resampler, or nothing at equal rates; keeps the most
    input (in seconds) it held back at the end of a block. ``block``: the
    input block's length, to pace the output (Pacer)."""

    def __init__(self, from_rate: int, to_rate: int, block: int | None = None):
        self.from_rate, self.to_rate = from_rate, to_rate
        self.soxr = soxr.ResampleStream(from_rate, to_rate, 1, dtype="float32", quality=RESAMPLE_QUALITY) if from_rate != to_rate else None
        self.pacer = Pacer(block * to_rate / from_rate) if block and self.soxr else None
        self.backlog = Backlog(from_rate, to_rate)

    def __call__(self, audio: np.ndarray, last: bool = False) -> np.ndarray:
        if self.soxr is None:
            return audio
        result = self.soxr.resample_chunk(np.ascontiguousarray(audio, dtype=np.float32), last=last)
        if self.pacer:
            result = self.pacer(result, last)
        if not last:
            self.backlog.add(len(audio), len(result))
        return result


class Pacer:
    """soxr's streaming resampler returns its output in bursts (1468 samples
    at 48 kHz from 16 kHz, 30 ms, after every third or fourth 128-sample
    block), where an app's resampler gives each block its share. Bursts would
    hand an engine at 48 kHz three frames in one block and none in the next
    three: a p99 that is the harness's, not the engine's. So the resampled
    input waits here from the first burst on, and each block then gets its
    share (``per_block`` samples, cumulative, rounded; less if the next burst
    is late, made up in the next block). The wait is counted in the
    resampler's delay, not the engine's. The first burst is held one block
    more: bursts come at slightly irregular intervals, and one block's share
    kept in hand lets a late burst go unnoticed."""

    def __init__(self, per_block: float):
        self.per_block = per_block
        self.pending = np.zeros(0, np.float32)
        self.blocks = self.released = 0
        self.started = False

    def __call__(self, samples: np.ndarray, last: bool = False) -> np.ndarray:
        if len(samples):
            self.pending = np.concatenate([self.pending, samples])
        if last:
            count = len(self.pending)
        elif not self.started:  # the pace starts the block after the first burst
            self.started = len(self.pending) > 0
            return self.pending[:0]
        else:
            self.blocks += 1
            count = min(max(round(self.blocks * self.per_block) - self.released, 0), len(self.pending))
        released, self.pending = self.pending[:count], self.pending[count:]
        self.released += count
        return released


class Backlog:
    """Input fed minus output returned, in seconds: its largest value at the end of a block."""

    def __init__(self, in_rate: int, out_rate: int):
        self.in_rate, self.out_rate = in_rate, out_rate
        self.fed = self.returned = 0
        self.most = 0.0

    def add(self, fed: int, returned: int) -> None:
        self.fed += fed
        self.returned += returned
        self.most = max(self.most, self.fed / self.in_rate - self.returned / self.out_rate)


class DelayDrop:
    """Drops the first ``delay`` samples of what passes, as the whole-clip run trims them."""

    def __init__(self, delay: int):
        self.left = delay

    def __call__(self, audio: np.ndarray) -> np.ndarray:
        dropped = min(self.left, len(audio))
        self.left -= dropped
        return audio[dropped:]


def engine_output(result: object, stream_call: str) -> np.ndarray:
    if not isinstance(result, np.ndarray) or result.ndim != 1 or not np.issubdtype(result.dtype, np.floating):
        what = f"{result.dtype} {result.shape}" if isinstance(result, np.ndarray) else type(result).__name__
        raise ClipError(f"the engine's stream.{stream_call} returned {what}, expected mono (1-D) floating-point audio")
    return result.astype(np.float32, copy=False)


def run_stream(
    stream: Stream, audio: np.ndarray, clip_rate: int, rate: int, delay: int, size: int, cpu_seconds
) -> tuple[np.ndarray, float, float, dict[str, Any]]:
    """Feeds ``audio`` (at ``clip_rate``) to ``stream`` (at ``rate``) in blocks
    of ``size``; returns (output at ``clip_rate``, the clip's length; CPU s;
    wall s; the per-block figures for ClipRecord.streaming). ``cpu_seconds``
    is the run loop's CPU clock."""
    into, back = Resampler(clip_rate, rate, block=size), Resampler(rate, clip_rate)
    held, drop = Backlog(rate, rate), DelayDrop(delay)
    pieces: list[np.ndarray] = []
    engine_samples = [0, 0]  # fed, returned

    def step(block: np.ndarray, last: bool = False) -> None:
        samples = into(block, last)
        result = engine_output(stream.process(samples), "process")
        if last:  # the end: zeros for the delay, then whatever the stream still holds
            result = np.concatenate([result, engine_output(stream.process(np.zeros(delay, np.float32)), "process"),
                                     engine_output(stream.flush(), "flush")])
            engine_samples[0] += delay
        else:
            held.add(len(samples), len(result))
        engine_samples[0] += len(samples)
        engine_samples[1] += len(result)
        pieces.append(back(drop(result), last))

    cpu_start = cpu_seconds()
    marks, cpu_marks = [time.perf_counter()], [time.process_time()]
    try:
        for span in spans(len(audio), size):
            step(audio[span])
            marks.append(time.perf_counter())
            cpu_marks.append(time.process_time())
        step(np.zeros(0, np.float32), last=True)
        end = time.perf_counter()
    finally:
        getattr(stream, "close", lambda: None)()
    cpu = cpu_seconds() - cpu_start
    if engine_samples[1] != engine_samples[0]:
        raise ClipError(f"the engine's stream returned {engine_samples[1]} samples for {engine_samples[0]} in (after flush)")
    block_seconds = np.diff(marks)
    stats = {
        "streamable": True,
        "block_size": size,
        "block_ms": [1000 * seconds for seconds in block_seconds],
        # This process's CPU time per block (not a subprocess engine's): on a
        # loaded machine wall-clock block times grow with contention, these far less.
        "block_cpu_ms": [1000 * seconds for seconds in np.diff(cpu_marks)],
        "flush_ms": 1000 * (end - marks[-1]),
        "deadline_ms": 1000 * size / clip_rate,
        "declared_delay_ms": 1000 * delay / rate,
        "buffering_ms": 1000 * held.most,
        "resampler_delay_ms": 1000 * (into.backlog.most + back.backlog.most),
    }
    return fit_length(np.concatenate(pieces), len(audio)), cpu, end - marks[0], stats


# ----------------------------------------------------------- streamed vs whole


def versus_whole(streamed: np.ndarray, whole: np.ndarray) -> str | float:
    """"identical", or the SI-SDR (dB) of the streamed output against the
    whole-clip one: how far a stream's state handling takes it."""
    if arrays_equal(streamed, whole):
        return IDENTICAL
    return si_sdr(streamed, whole)
