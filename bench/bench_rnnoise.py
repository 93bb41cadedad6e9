#!/usr/bin/env python3
"""The default ``rnnoise`` engine's CPU RTF against the RNNoise library's own
cost, in one run.

    python bench/bench_rnnoise.py [--clips 12]

On the same demo clips, alternating clip by clip:

* library: pyrnnoise's ``librnnoise.so`` called in this process on the clip's
  48 kHz int16 frames (``nsbench.builtin.engines.rnnoise_demo.denoise``): no harness;
* served: the default engine through the runner's ``process`` (its timing
  boundary: resampling in and out, the program's CPU included);
* per clip: the same program started once per clip (``--rnnoise-demo-path``'s
  way, and the default before issue 13).

Prints each one's median CPU RTF and the ratios to the library's.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nsbench.audio.files import resample  # noqa: E402
from nsbench.audio.frames import to_int16  # noqa: E402
from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402
from nsbench.run.clips import process  # noqa: E402
from nsbench.run.engine_run import EngineHolder  # noqa: E402
from nsbench.builtin.engines import rnnoise_demo  # noqa: E402

DATASET = "demo"  # the default set, real voices since issue 11


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=12)
    args = parser.parse_args()
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    spec = registry.engines.get("rnnoise").spec
    sources = registry.datasets.get(DATASET).spec.clips({"demo_seed": 2020})[: args.clips]
    clips = [source.load() for source in sources]
    library = rnnoise_demo.load_library()
    served = EngineHolder(spec, {})
    per_clip_spec = dataclasses.replace(spec, factory=per_clip_engine)
    per_clip = EngineHolder(per_clip_spec, {})
    rtf: dict[str, list[float]] = {"library": [], "served": [], "per clip": []}
    try:
        for clip in clips:
            pcm = to_int16(resample(clip.noisy, clip.sample_rate, 48000))
            start = time.process_time()
            rnnoise_demo.denoise(pcm, library)
            rtf["library"].append((time.process_time() - start) / clip.duration)
            for label, holder in (("served", served), ("per clip", per_clip)):
                rtf[label].append(process(holder, clip)[1] / clip.duration)
    finally:
        served.discard()
        per_clip.discard()
    base = statistics.median(rtf["library"])
    print(f"rnnoise CPU RTF, median over {len(clips)} demo clips of {clips[0].duration:g} s "
          f"(pyrnnoise {rnnoise_demo.INSTALL.split('==')[1]})")
    for label, values in rtf.items():
        print(f"{label:9s} {statistics.median(values):.4f}  ({statistics.median(values) / base:.2f}x the library)")


def per_clip_engine(options):
    """The default program, run once per clip."""
    from nsbench.builtin.engines import rnnoise

    argv = [sys.executable, "-m", "nsbench.builtin.engines.rnnoise_demo"]
    return rnnoise.RNNoiseDemo(argv, "per clip", rnnoise.DEFAULT_TIMEOUT, cwd=REPO)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
