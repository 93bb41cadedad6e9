#!/usr/bin/env python3
"""The VoiceBank-DEMAND paper row's cost per clip, nsbench against pysepm's own
code on the same clips, in the same run, with their values compared.

    python bench/bench_paper_metrics.py --pysepm PATH [--cmgan PATH] [--repeats N]

``--pysepm`` is a checkout of schmiph2/pysepm, the same one
tests/programs/make_paper_metrics_expected.py takes (pysepm is not on PyPI); it
is imported from a temporary copy with that script's two fixes (np.NaN, and an
``__init__`` without SRMRpy). Without it this script says so and exits 0.
``--cmgan``, a checkout of ruizhecao96/CMGAN, adds its compute_metrics.py
(pure Python loops over frames) as a third column.

Clips: tests/helpers/paper_cases.py's 15 cases (the demo bundle's readers
mixed at VoiceBank-DEMAND's SNRs, as they are and through Speex and WebRTC; 3 s
at 16 kHz). Per clip, CPU seconds (process time) around:

* the whole row: nsbench's pesq_wb, csig, cbak, covl, ssnr, stoi as a run
  scores them (one MetricInputs, so PESQ and the frames are computed once);
  pysepm's ``pesq`` (wide band), ``composite`` (which runs PESQ again),
  ``SNRseg`` and ``stoi`` (pystoi); CMGAN's ``compute_metrics`` (PESQ once, its
  own STOI);
* one PESQ call (the ITU C code both pay: nsbench once per clip, pysepm
  twice), and the row without it;
* the composite's parts without PESQ: nsbench's segSNR, LLR and WSS (one
  frame set, one FFT per signal) against pysepm's ``SNRseg``, ``llr`` and
  ``wss`` (the Python and numba loops over frames).

One BLAS thread, as a run scores; the best of ``--repeats`` passes over the
clips; pysepm's numba functions are compiled by a first call before timing
(the compile's own time is printed). Values: the largest difference between
nsbench (vbd flavour) and pysepm on each value of the row, over the clips whose
clean voice has no digital silence (on the padded case pysepm's LLR takes
frames without an LPC model as 1000 or inf: docs/metrics.md).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nsbench.plugins.manager import get_plugin_manager  # noqa: E402
from nsbench.plugins.records import MetricInputs  # noqa: E402
from nsbench.plugins.registry import build_registry  # noqa: E402
from nsbench.run.clips import one_blas_thread  # noqa: E402
from nsbench.builtin.metrics import loizou  # noqa: E402
from tests.helpers.paper_cases import RATE, cases  # noqa: E402
from tests.programs.make_paper_metrics_expected import fixed_pysepm, module_from  # noqa: E402

ROW = ("pesq_wb", "csig", "cbak", "covl", "ssnr", "stoi")
INT16 = 32768.0


def nsbench_row(functions, case) -> dict[str, float]:
    inputs = MetricInputs(output=case.output, clean=case.clean, noisy=case.noisy, sample_rate=RATE)
    return {name: functions[name](inputs) for name in ROW}


def pysepm_row(pysepm, case) -> dict[str, float]:
    clean, output = (np.asarray(x, np.float64) * INT16 for x in (case.clean, case.output))
    _, pesq = pysepm.pesq(clean, output, RATE)
    csig, cbak, covl = pysepm.composite(clean, output, RATE)
    return {"pesq_wb": pesq, "csig": csig, "cbak": cbak, "covl": covl, "ssnr": pysepm.SNRseg(clean, output, RATE),
            "stoi": pysepm.stoi(clean, output, RATE)}


def cmgan_row(cmgan, case) -> dict[str, float]:
    clean, output = (np.asarray(x, np.float64) * INT16 for x in (case.clean, case.output))
    return dict(zip(ROW, cmgan.compute_metrics(clean, output, RATE, 0)))


def nsbench_parts(case) -> None:
    clean, output = (np.asarray(x, np.float64) * INT16 for x in (case.clean, case.output))
    loizou.composite_parts(clean, output, RATE)


def pysepm_parts(pysepm, case) -> None:
    clean, output = (np.asarray(x, np.float64) * INT16 for x in (case.clean, case.output))
    pysepm.SNRseg(clean, output, RATE), pysepm.llr(clean, output, RATE, used_for_composite=True), pysepm.wss(clean, output, RATE)


def pesq_call(case) -> None:
    import pesq

    pesq.pesq(RATE, case.clean, case.output, "wb")


def per_clip(run, clips, repeats: int) -> float:
    """The best pass's CPU seconds per clip."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for case in clips:
            run(case)
        best = min(best, (time.process_time() - start) / len(clips))
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pysepm", type=Path, help="a checkout of schmiph2/pysepm (as tests/programs/make_paper_metrics_expected.py takes)")
    parser.add_argument("--cmgan", type=Path, help="a checkout of ruizhecao96/CMGAN, for its compute_metrics.py")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.pysepm is None:
        print("bench_paper_metrics: needs a checkout of schmiph2/pysepm (--pysepm PATH, the one "
              "tests/programs/make_paper_metrics_expected.py takes); nothing to compare against, nothing run")
        return 0
    registry = build_registry(get_plugin_manager(load_entry_points=False))
    functions = {name: registry.metrics.require_available(name).spec.func for name in ROW}
    clips = cases()
    with tempfile.TemporaryDirectory() as folder, one_blas_thread():
        pysepm = fixed_pysepm(args.pysepm, Path(folder))
        start = time.process_time()
        pysepm_row(pysepm, clips[0])  # numba compiles lpcoeff and find_loc_peaks here
        compile_seconds = time.process_time() - start
        timings = {
            "whole row": {"nsbench": per_clip(lambda c: nsbench_row(functions, c), clips, args.repeats),
                          "pysepm": per_clip(lambda c: pysepm_row(pysepm, c), clips, args.repeats)},
            "segSNR, LLR, WSS": {"nsbench": per_clip(nsbench_parts, clips, args.repeats),
                                 "pysepm": per_clip(lambda c: pysepm_parts(pysepm, c), clips, args.repeats)},
        }
        pesq_seconds = per_clip(pesq_call, clips, args.repeats)
        timings["row without PESQ"] = {"nsbench": timings["whole row"]["nsbench"] - pesq_seconds,
                                       "pysepm": timings["whole row"]["pysepm"] - 2 * pesq_seconds}
        if args.cmgan:
            cmgan = module_from(args.cmgan / "src" / "tools" / "compute_metrics.py", "cmgan_compute_metrics")
            timings["whole row"]["CMGAN"] = per_clip(lambda c: cmgan_row(cmgan, c), clips, 1)
        differences = {name: 0.0 for name in ROW}
        for case in clips:
            if case.name.split("/")[0].endswith("_padded"):
                continue
            ours, theirs = nsbench_row(functions, case), pysepm_row(pysepm, case)
            for name in ROW:
                differences[name] = max(differences[name], abs(ours[name] - theirs[name]) / abs(theirs[name]))
    print(f"{len(clips)} clips of {len(clips[0].clean) / RATE:g} s at {RATE} Hz; CPU s per clip, best of {args.repeats}, "
          f"one BLAS thread (pysepm's numba compile before timing: {compile_seconds:.1f} s)")
    print(f"  one PESQ call (pesq.pesq, wide band): {pesq_seconds:.4f}; nsbench makes one per clip, pysepm two")
    for what, times in timings.items():
        others = "  ".join(f"{name} {value:.4f} ({value / times['nsbench']:.1f}x nsbench)" for name, value in times.items() if name != "nsbench")
        print(f"  {what:<18} nsbench {times['nsbench']:.4f}  {others}")
    print("largest relative difference, nsbench (vbd) against pysepm, clips without digital silence: "
          + ", ".join(f"{name} {value:.1e}" for name, value in differences.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
