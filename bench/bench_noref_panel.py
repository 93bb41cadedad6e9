#!/usr/bin/env python3
"""The no-reference panel's cost per clip and engine, beside the intrusive metrics',
and the speech-gated levels' agreement with the intrusive ones, in one run.

    python bench/bench_noref_panel.py [--engines a,b] [--cost-clips N] [--no-agreement] [--no-cost]

Cost: on the first ``--cost-clips`` clips of every paired cell of the demo set
(default 1: 16 clips of 4 s), each engine's real output is scored by each
metric family, timed in CPU seconds (process time) around the metric
functions, with the clip's reference-side features shared by the engines as a
run shares them (the VAD and STOI's clean-side features are computed by the
first engine and reused by the others; the first engine's cost is in the mean).
Families: DNSMOS P.835 (SIG, BAK and OVRL, one inference), DNSMOS P.808, VAD
levels (vad_voice_level_db and vad_attenuation_db, one detector run), SI-SDR
(si_sdr, si_sdr_input, si_sdri) and STOI. One BLAS thread, as the runner scores.

Agreement: on every paired clip of the demo (96: 4 noise categories x 4 SNRs x
6), per SNR and engine, the mean and mean absolute difference of
vad_voice_level_db - voice_level_db and vad_attenuation_db -
music_attenuation_db (nsbench.builtin.metrics.speech_gated.level_agreement),
and the per-clip Pearson correlation over all engines and clips.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402
from nsbench.run.clips import one_blas_thread, process  # noqa: E402
from nsbench.run.engine_run import EngineHolder  # noqa: E402
from nsbench.run.scoring import reference_features  # noqa: E402
from nsbench.plugins.records import MetricInputs  # noqa: E402
from nsbench.plugins.errors import MetricUndefined  # noqa: E402

ENGINES = ("passthrough", "speex", "nsnet2", "gtcrn", "rnnoise")
FAMILIES = {
    "DNSMOS P.835": ("dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl"),
    "DNSMOS P.808": ("dnsmos_p808",),
    "VAD levels": ("vad_voice_level_db", "vad_attenuation_db"),
    "SI-SDR": ("si_sdr", "si_sdr_input", "si_sdri"),
    "STOI": ("stoi",),
}
LEVELS = ("voice_level_db", "music_attenuation_db", "vad_voice_level_db", "vad_attenuation_db")


def paired_clips(registry, per_cell: int | None):
    """The demo's clips with voice and noise at an SNR (not music-only, not clean-voice), ``per_cell`` of each cell."""
    taken, counts = [], defaultdict(int)
    for source in registry.datasets.get("demo").spec.clips({}):
        cell = (source.labels["noise"], source.labels["snr_db"])
        if not cell[1].lstrip("-").isdigit() or (per_cell is not None and counts[cell] >= per_cell):
            continue
        counts[cell] += 1
        taken.append(source.load())
    return taken


def engine_outputs(registry, names, clips):
    outputs = {}
    for name in names:
        record = registry.engines.get(name)
        if not record.available:
            print(f"bench_noref_panel: {name} unavailable ({record.spec.install}); left out", file=sys.stderr)
            continue
        holder = EngineHolder(record.spec, {})
        try:
            outputs[name] = [process(holder, clip)[0] for clip in clips]
        finally:
            holder.discard()
    return outputs


def score(specs, clip, output, memo, names) -> tuple[dict[str, float], float]:
    inputs = MetricInputs(output=output, clean=clip.clean, noisy=clip.noisy, sample_rate=clip.sample_rate, reference=memo)
    values, start = {}, time.process_time()
    for name in names:
        try:
            result = specs[name].func(inputs)
        except MetricUndefined:
            continue
        values[name] = float(result[name] if isinstance(result, dict) else result)
    return values, time.process_time() - start


def bound_specs(registry, names):
    """Specs with their per-run options bound, as a run binds them (the model hashes checked)."""
    from nsbench.plugins.metric_options import bind_options, metric_context

    specs, _ = bind_options([registry.metrics.require_available(name).spec for name in names], lambda metric: {}, metric_context(registry))
    return {spec.name: spec for spec in specs}


def cost_table(registry, engines, per_cell: int) -> None:
    clips = paired_clips(registry, per_cell)
    outputs = engine_outputs(registry, engines, clips)
    specs = bound_specs(registry, [name for names in FAMILIES.values() for name in names])
    costs = defaultdict(list)
    for index, clip in enumerate(clips):
        memo = reference_features(clip, None)
        for engine in outputs:
            for family, names in FAMILIES.items():
                costs[family].append(score(specs, clip, outputs[engine][index], memo, names)[1])
    seconds = statistics.fmean(clip.duration for clip in clips)
    print(f"\nCPU seconds per clip and engine: {len(clips)} demo clips of {seconds:.1f} s x {len(outputs)} engines "
          f"({', '.join(outputs)}), reference features shared across engines as in a run")
    print(f"{'metric family':<14} {'mean':>8} {'median':>8} {'max':>8}  per second of audio")
    for family, values in costs.items():
        print(f"{family:<14} {statistics.fmean(values):8.4f} {statistics.median(values):8.4f} {max(values):8.4f}  "
              f"{statistics.fmean(values) / seconds:.4f}")


def agreement_table(registry, engines) -> None:
    from nsbench.builtin.metrics.speech_gated import level_agreement

    clips = paired_clips(registry, None)
    outputs = engine_outputs(registry, engines, clips)
    specs = bound_specs(registry, LEVELS)
    rows = []
    for index, clip in enumerate(clips):
        memo = reference_features(clip, None)
        for engine in outputs:
            values, _ = score(specs, clip, outputs[engine][index], memo, LEVELS)
            rows.append({"engine": engine, "snr_db": clip.labels["snr_db"], **values})
    agreement = level_agreement(rows)
    print(f"\nAgreement on {len(clips)} paired demo clips x {len(outputs)} engines: no-reference minus intrusive, dB")
    print(f"{'pair':<46} {'snr':>4} {'engine':<12} {'clips':>5} {'mean':>7} {'median':>7} {'mean |d|':>8}")
    for pair, by_snr in agreement["pairs"].items():
        for snr, by_engine in by_snr.items():
            for engine, stats in by_engine.items():
                print(f"{pair:<46} {snr:>4} {engine:<12} {stats['clips']:>5} {stats['mean']:7.2f} {stats['median']:7.2f} {stats['mean_abs']:8.2f}")
    for pair, r in agreement["pearson"].items():
        print(f"per-clip Pearson r, {pair}: {r:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--cost-clips", type=int, default=1, help="clips per paired demo cell for the cost table")
    parser.add_argument("--no-agreement", action="store_true")
    parser.add_argument("--no-cost", action="store_true")
    args = parser.parse_args()
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    engines = args.engines.split(",")
    with one_blas_thread():
        if not args.no_cost:
            cost_table(registry, engines, args.cost_clips)
        if not args.no_agreement:
            agreement_table(registry, engines)


if __name__ == "__main__":
    main()
