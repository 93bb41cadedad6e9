"""The golden score table: every score of every engine and metric on a subset
of the synthetic demo set, as computed before the metric stage was sped up
(issue 13). tests/metrics/test_golden_scores.py recomputes it and compares.

Regenerate (only when a score is meant to change, and say why in the commit):

    NSBENCH_CACHE=/tmp/nsbench-golden python tests/helpers/golden_scores.py

It writes tests/data/golden_scores.json. Engines that need an argument, a key
or a network (python, command, koala) and unavailable ones are left out, and so
are the timing metrics (rtf_cpu, rtf_wall), which no two runs share.

The table is compared within a tolerance per engine and metric, in the
metric's unit (``tolerance``), because floating-point results differ between
CPUs: numpy, OpenBLAS, onnxruntime and the engines' own libraries pick their
kernels by instruction set. The figures below were measured, each comparing
this table (computed on another machine) with a recomputation on a 2-core AMD
EPYC with AVX-512, on all seven clips, unless said otherwise.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN_PATH = Path(__file__).resolve().parents[1] / "data" / "golden_scores.json"
# The dataset the table was computed on: the synthetic set, named "demo"
# then and "demo-tts" since the default demo speaks with real voices (issue 11).
DATASET = "demo-tts"
DATASET_OPTIONS = {"demo_seed": 2020}
# Indices into the demo's clip order: white, pink, babble, hum and transient
# noise at several SNRs, a music-only clip and a clean-voice clip.
CLIP_INDICES = (0, 5, 10, 15, 20, 24, 25)
SKIPPED_ENGINES = ("python", "command", "koala")
# wer came later (issue 15) and needs its recogniser bound by the CLI.
SKIPPED_METRICS = ("rtf_cpu", "rtf_wall", "wer")

# Metric arithmetic in numpy on the same engine output: float64 sums whose
# order depends on the kernel. Largest differences seen across numpy's
# AVX-512/AVX2 kernels (NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL
# AVX512_SPR") and OpenBLAS's Haswell/SkylakeX kernels (OPENBLAS_CORETYPE):
# 4.7e-13 dB, 6.9e-13 relative. A float64 sum of N terms, summed pairwise,
# is off by at most about log2(N) * 1.1e-16 relative (3e-15 for a minute at
# 48 kHz); a dB value is 4.34 times that in dB, plus cancellation where
# si_sdri subtracts two levels. 1e-9 relative plus 1e-9 in the unit (dB, or
# STOI's 0-1, or MOS) leaves a margin of a thousand over what was seen and is
# still a million times finer than any engine difference below.
NUMERIC_REL = 1e-9
NUMERIC_ABS = 1e-9
# An engine whose library dispatches on the CPU may be off by at most ten
# times the largest difference seen (in the metric's unit).
SEEN_FACTOR = 10
DNSMOS = ("dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl")
# DNSMOS runs in onnxruntime, whose kernels differ by CPU: on passthrough's
# output (the same samples on every machine) its scores moved by up to this.
DNSMOS_SEEN = 4.7e-7
# DeepFilterNet's Rust runtime (tract) picks SIMD kernels at run time: the
# largest difference seen per metric.
DEEPFILTERNET_SEEN = {
    "si_sdr": 3.5e-6, "si_sdr_zm": 3.5e-6, "si_sdri": 1.4e-6, "snr": 2.5e-6,
    "stoi": 1.9e-8, "estoi": 4.1e-8, "voice_level_db": 9.1e-7, "music_attenuation_db": 6.8e-6,
    "pesq_wb": 3.5e-6, "pesq_nb": 4.8e-7, "mdx_sdr_voice": 2.5e-6, "mdx_sdr_music": 6.8e-6,
    "mdx_sdr": 1.1e-6, "dnsmos_sig": 2.1e-6, "dnsmos_bak": 1.7e-6, "dnsmos_ovrl": 2.3e-6,
}
# RNNoise (pyrnnoise's C library) matched this table to the last bit here,
# but moved si_sdri by 4.6e-4 dB on an Intel Xeon with AVX-512 (issue 22). The
# other metrics' share of such a change was measured by moving every float
# RNNoise reads by one float32 step (x * (1 + 2**-22)), which moves si_sdri
# by 2.16e-3 dB: RNNOISE_STEP is the largest change per metric then, and each
# metric is allowed SEEN_FACTOR times its step scaled to the Xeon's si_sdri.
RNNOISE_SEEN_SI_SDRI = 4.6e-4
RNNOISE_STEP = {
    "si_sdr": 2.16e-3, "si_sdr_zm": 2.16e-3, "si_sdri": 2.16e-3, "snr": 6.5e-4,
    "stoi": 2.8e-4, "estoi": 1.4e-4, "voice_level_db": 8.6e-3, "music_attenuation_db": 5.1e-3,
    "pesq_wb": 9.4e-4, "pesq_nb": 1.16e-2, "mdx_sdr_voice": 6.5e-4, "mdx_sdr_music": 1.9e-3,
    "mdx_sdr": 6.5e-4, "dnsmos_sig": 7.1e-3, "dnsmos_bak": 3.62e-2, "dnsmos_ovrl": 1.87e-2,
}


def largest_seen(engine: str, metric: str) -> float:
    """The largest difference between two CPUs seen (or, for RNNoise,
    estimated) for this engine and metric, in the metric's unit; 0 where the
    engine's output was the same to the last bit on every kernel tried."""
    seen = DNSMOS_SEEN if metric in DNSMOS else 0.0
    if engine == "deepfilternet":
        seen = max(seen, DEEPFILTERNET_SEEN.get(metric, 0.0))
    if engine == "rnnoise":
        seen = max(seen, RNNOISE_STEP.get(metric, 0.0) * RNNOISE_SEEN_SI_SDRI / RNNOISE_STEP["si_sdri"])
    return seen


def tolerance(engine: str, metric: str, expected: float) -> float:
    """How far a recomputed score may be from ``expected``, in the metric's unit."""
    return max(NUMERIC_REL * abs(expected) + NUMERIC_ABS, SEEN_FACTOR * largest_seen(engine, metric))


def mismatches(engine: str, clip_id: str, expected: dict[str, Any], record: dict[str, Any]) -> list[str]:
    """One line per difference between a stored record and a recomputed one:
    errors and undefined reasons must be equal, scores within ``tolerance``."""
    found = [f"{engine} {clip_id} {part}: {record[part]!r} != {expected[part]!r}"
             for part in ("error", "undefined") if record[part] != expected[part]]
    if set(record["scores"]) != set(expected["scores"]):
        found.append(f"{engine} {clip_id} scores: metrics {sorted(record['scores'])} != {sorted(expected['scores'])}")
    for name in sorted(set(record["scores"]) & set(expected["scores"])):
        value, wanted = record["scores"][name], expected["scores"][name]
        allowed = tolerance(engine, name, wanted)
        if not abs(value - wanted) <= allowed:  # also catches NaN
            found.append(f"{engine} {clip_id} {name}: {value!r} is {abs(value - wanted):.3g} from {wanted!r} (tolerance {allowed:.3g})")
    return found


def compute(clip_indices: tuple[int, ...] = CLIP_INDICES, skipped_metrics: tuple[str, ...] = ()) -> dict[str, Any]:
    """{"engines": {engine: {clip: {"scores": {...}, "undefined": {...}, "error": ...}}}},
    on the clips at ``clip_indices`` with every metric but ``skipped_metrics``
    (and the timing metrics)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry
    from nsbench.run.engine_run import EngineRun
    from nsbench.run.runner import run_engine
    from nsbench.plugins.records import ENHANCEMENT

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    sources = registry.datasets.get(DATASET).spec.clips(DATASET_OPTIONS)
    sources = [sources[index] for index in clip_indices]
    skipped = SKIPPED_METRICS + skipped_metrics
    metrics = [
        record.spec for record in registry.metrics
        if record.available and ENHANCEMENT in record.spec.tasks and record.spec.name not in skipped
    ]
    engines = [record.spec for record in registry.engines if record.available and record.spec.name not in SKIPPED_ENGINES]
    table: dict[str, Any] = {}
    for engine in engines:
        records = [outcome.record for outcome in run_engine(EngineRun(engine, {}, metrics), sources)]
        table[engine.name] = {
            record.clip_id: {"scores": record.scores, "undefined": record.undefined, "error": record.error}
            for record in records
        }
    return {"dataset": DATASET, "clips": [source.clip_id for source in sources],
            "metrics": [metric.name for metric in metrics], "engines": table}


def main() -> None:
    GOLDEN_PATH.parent.mkdir(parents=True, exist_ok=True)
    # repr-exact floats: json writes the shortest string that reads back the same double
    GOLDEN_PATH.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN_PATH}")


if __name__ == "__main__":
    main()
