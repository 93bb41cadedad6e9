"""Writes tests/data/paper_metrics_expected.json: what the paper metrics'
reference code computes on the repository's own audio
(tests/helpers/paper_cases.py), for tests/metrics/test_paper_metrics.py.

Neither reference installs from a registry, and fetched code is never
committed, so this script takes local checkouts and runs them as they are:

* CMGAN's ``src/tools/compute_metrics.py`` (ruizhecao96/CMGAN): PESQ, CSIG,
  CBAK, COVL, SSNR on int16-scaled samples (the ``vbd`` flavour) and on
  samples in [-1, 1] (``float``), with its wss() and llr() trimmed as its
  compute_metrics() trims them;
* pysepm's ``qualityMeasures.py`` (schmiph2/pysepm): fwSNRseg,
  cepstrum_distance, composite, SNRseg, llr, wss on int16-scaled samples, as
  its own tests feed them. Two fixes go into a temporary copy, never the
  checkout: ``np.NaN`` becomes ``np.nan`` (NumPy 2 removed the alias), and its
  ``__init__`` imports only the quality and intelligibility measures
  (``reverberationMeasures`` needs SRMRpy, which installs from GitHub only);
* URGENT 2025's ``evaluation_metrics/calculate_intrusive_se_metrics.py``
  (urgent-challenge/urgent2025_challenge): its ``lsd_metric``, taken from the
  file's source alone (the module imports packages the metric does not use),
  on float64 and, as URGENT reads files, float32 samples; and the
  ``fast_bss_eval.bss_eval_sources`` call of its ``sdr_metric``
  (``clamp_db=50``) with two references, the speech and the noise, and two
  estimates, the output and the noise (the output's values do not depend on
  the second). Under NumPy 2 that
  call raises without ``compute_permutation``, so here it runs with it and
  the permutation found is checked to be the identity; with
  ``--numpy1-python`` (an interpreter with NumPy 1 and fast-bss-eval 0.1.4) the
  exact non-permuting call runs there too and both are recorded.

Two further checks run and are summarised in the file (their audio is not
committed): CMGAN's ``AudioSamples/`` (25 VoiceBank-DEMAND test pairs) against
its ``Noisy_metrics_results/python_noisy_metrics.log``, and pysepm's
``examples/`` against its ``tests/results.mat`` (Loizou's MATLAB values).

    git clone https://github.com/schmiph2/pysepm /tmp/pysepm
    git clone https://github.com/ruizhecao96/CMGAN /tmp/CMGAN
    git clone https://github.com/urgent-challenge/urgent2025_challenge /tmp/urgent
    python -m venv /tmp/np1 && /tmp/np1/bin/pip install numpy==1.26.4 scipy==1.13.1 fast-bss-eval==0.1.4  # optional
    python tests/programs/make_paper_metrics_expected.py --pysepm /tmp/pysepm --cmgan /tmp/CMGAN --urgent /tmp/urgent \
        [--numpy1-python /tmp/np1/bin/python]

Run with nsbench's own environment (numba for pysepm's jit, librosa for
URGENT's STFT) from the checkout; it takes a minute or two.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from tests.helpers.paper_cases import RATE, cases  # noqa: E402

OUTPUT = REPO_ROOT / "tests" / "data" / "paper_metrics_expected.json"
INT16 = 32768.0
CLAMP_DB = 50.0
PYSEPM_FIXES = (
    "pysepm/qualityMeasures.py: np.NaN -> np.nan (NumPy 2 removed the alias)",
    "pysepm/__init__.py: imports qualityMeasures and intelligibilityMeasures only (reverberationMeasures needs SRMRpy)",
)


# ----------------------------------------------------------------- loading the references


def commit_of(checkout: Path) -> str:
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def module_from(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fixed_pysepm(checkout: Path, folder: Path) -> Any:
    """pysepm imported from a temporary copy with the fixes of PYSEPM_FIXES."""
    package = folder / "pysepm"
    shutil.copytree(checkout / "pysepm", package)
    quality = package / "qualityMeasures.py"
    quality.write_text(quality.read_text().replace("np.NaN", "np.nan"))
    init = package / "__init__.py"
    init.write_text("\n".join(line for line in init.read_text().splitlines() if "reverberationMeasures" not in line) + "\n")
    sys.path.insert(0, str(folder))
    import pysepm

    return pysepm


def urgent_functions(checkout: Path) -> dict[str, Any]:
    """``lsd_metric`` from URGENT's script, its source run alone with what it uses."""
    import librosa

    path = checkout / "evaluation_metrics" / "calculate_intrusive_se_metrics.py"
    tree = ast.parse(path.read_text())
    chosen = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "lsd_metric"]
    namespace: dict[str, Any] = {"np": np, "librosa": librosa}
    exec(compile(ast.Module(body=chosen, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


# ----------------------------------------------------------------- the references' values


def trimmed(values: np.ndarray) -> float:
    """compute_metrics()'s trim of wss() and llr(): sorted, the first round(0.95 n) kept."""
    return float(np.mean(np.sort(values)[: round(np.size(values) * 0.95)]))


def cmgan_values(cmgan: Any, clean: np.ndarray, output: np.ndarray) -> dict[str, float]:
    pesq, csig, cbak, covl, ssnr, stoi = cmgan.compute_metrics(clean, output, RATE, 0)
    return {"pesq_wb": pesq, "csig": csig, "cbak": cbak, "covl": covl, "ssnr": ssnr, "stoi_cmgan": stoi,
            "llr": trimmed(cmgan.llr(clean, output, RATE)), "wss": trimmed(cmgan.wss(clean, output, RATE))}


def pysepm_values(pysepm: Any, clean: np.ndarray, output: np.ndarray) -> dict[str, float]:
    csig, cbak, covl = pysepm.composite(clean, output, RATE)
    return {"fwsegsnr": pysepm.fwSNRseg(clean, output, RATE), "cd": pysepm.cepstrum_distance(clean, output, RATE),
            "csig": csig, "cbak": cbak, "covl": covl, "ssnr": pysepm.SNRseg(clean, output, RATE),
            "llr_composite": pysepm.llr(clean, output, RATE, used_for_composite=True), "wss": pysepm.wss(clean, output, RATE)}


def bss_values(clean: np.ndarray, output: np.ndarray, noisy: np.ndarray) -> dict[str, float]:
    """URGENT's call, permuting (NumPy 2), with the identity checked."""
    import fast_bss_eval

    references, estimates = bss_inputs(clean, output, noisy)
    sdr, sir, sar, permutation = fast_bss_eval.bss_eval_sources(references, estimates, clamp_db=CLAMP_DB)
    assert list(permutation) == [0, 1], permutation
    return {"bss_sdr": sdr[0], "bss_sir": sir[0], "bss_sar": sar[0]}


def bss_inputs(clean: np.ndarray, output: np.ndarray, noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """References (speech, noise); estimates (output, noise): the output's values
    do not depend on the second estimate, which only lets the call run (the
    noisy input minus a passthrough's output is silence, which fails the
    permutation search)."""
    return np.stack([clean, noisy - clean]), np.stack([output, noisy - clean])


NUMPY1_PROGRAM = """
import sys, numpy as np, fast_bss_eval
data = np.load(sys.argv[1])
values = []
for index in range(len(data.files) // 2):
    sdr, sir, sar = fast_bss_eval.bss_eval_sources(data[f"references{index}"], data[f"estimates{index}"],
                                                   compute_permutation=False, clamp_db=50.0)
    values.append([sdr[0], sir[0], sar[0]])
np.save(sys.argv[2], np.array(values))
from importlib.metadata import version
print(np.__version__, "fast-bss-eval", version("fast-bss-eval"))
"""


def bss_without_permutation(python: str, inputs: list[tuple[np.ndarray, np.ndarray]], folder: Path) -> tuple[np.ndarray, str]:
    """URGENT's exact call (compute_permutation=False), in an interpreter with
    NumPy 1: (cases, 3) SDR, SIR, SAR of the first estimate."""
    source, result = folder / "bss_in.npz", folder / "bss_out.npy"
    arrays = {f"{role}{index}": array for index, pair in enumerate(inputs) for role, array in zip(("references", "estimates"), pair)}
    np.savez(source, **arrays)
    run = subprocess.run([python, "-c", NUMPY1_PROGRAM, str(source), str(result)], capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"{python} failed:\n{run.stderr}")
    return np.load(result), run.stdout.strip()


# ----------------------------------------------------------------- the further checks


def nsbench_values(clean: np.ndarray, output: np.ndarray, rate: int, flavour: str = "vbd") -> dict[str, float]:
    """nsbench's metrics of one pair, as a run computes them."""
    from nsbench.builtin.metrics import composite, intelligibility, pesq_metric
    from nsbench.plugins.records import MetricInputs

    inputs = MetricInputs(output=output, clean=clean, noisy=output, sample_rate=rate, options={"flavour": flavour})
    values = {name: composite.composite_metric(name, inputs) for name in ("csig", "cbak", "covl")}
    values.update({name: composite.part_metric(name, inputs) for name in ("ssnr", "llr", "wss")})
    values.update(pesq_wb=pesq_metric.pesq_wb_metric(inputs), stoi=intelligibility.stoi_metric(inputs),
                  fwsegsnr=composite.fwsegsnr_metric(inputs), cd=composite.cd_metric(inputs))
    return values


LOG_LINE = re.compile(r"Track name: (\S+)\s+PESQ: (\S+)\s+CSIG: (\S+)\s+CBAK: (\S+)\s+COVL: (\S+)\s+SSNR: (\S+)\s+STOI: (\S+)")


def cmgan_audio_samples(checkout: Path, cmgan: Any) -> dict[str, Any]:
    """nsbench (vbd) and CMGAN's own script on CMGAN's 25 VoiceBank-DEMAND pairs, against its log."""
    import soundfile

    log = {m[1]: [float(v) for v in m.groups()[1:]] for m in LOG_LINE.finditer((checkout / "src/tools/Noisy_metrics_results/python_noisy_metrics.log").read_text())}
    names = ("pesq_wb", "csig", "cbak", "covl", "ssnr", "stoi")
    ours, script, logged = [], [], []
    for path in sorted((checkout / "AudioSamples" / "clean").glob("*.wav")):
        clean, rate = soundfile.read(path, dtype="float32")
        noisy, _ = soundfile.read(checkout / "AudioSamples" / "noisy" / path.name, dtype="float32")
        values = nsbench_values(clean, noisy, rate)
        ours.append([values[name] for name in names])
        script.append(list(cmgan.compute_metrics(str(path), str(checkout / "AudioSamples" / "noisy" / path.name), rate, 1)))
        logged.append(log[path.stem])
    ours, script, logged = np.array(ours), np.array(script), np.array(logged)
    return {
        "pairs": len(logged),
        "columns": list(names),
        "logged_mean": logged.mean(axis=0).round(6).tolist(),
        "nsbench_mean": ours.mean(axis=0).tolist(),
        "max_abs_nsbench_minus_log": np.abs(ours - logged).max(axis=0).tolist(),
        "max_abs_script_minus_log": np.abs(script - logged).max(axis=0).tolist(),
        "note": "the log has 6 decimals; its STOI is CMGAN's own stoi(), nsbench's is pystoi's",
    }


def pysepm_results_mat(checkout: Path) -> dict[str, Any]:
    """nsbench on pysepm's example pairs against the MATLAB values of its tests/results.mat
    (rows 4 and 5: 16 kHz, speech against noisySpeech and against processed)."""
    import soundfile
    from scipy.io import loadmat

    matlab = loadmat(checkout / "tests" / "results.mat")["results"]
    columns = {"fwsegsnr": 0, "ssnr": 1, "wss": 3, "cd": 4, "pesq_wb": 10, "csig": 11, "cbak": 12, "covl": 13}
    found = {}
    for row, other in ((4, "noisySpeech"), (5, "processed")):
        clean, rate = soundfile.read(checkout / "examples" / "1_speech_16000_Hz.wav", dtype="float32")
        output, _ = soundfile.read(checkout / "examples" / f"1_{other}_16000_Hz.wav", dtype="float32")
        values = nsbench_values(clean, output, rate)
        found[other] = {name: {"matlab": float(matlab[row][column]), "nsbench": values[name]} for name, column in columns.items()}
    return found


# ----------------------------------------------------------------- main


def number(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def reference_values(case: Any, references: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    clean, output, noisy = (np.asarray(x, np.float64) for x in (case.clean, case.output, case.noisy))
    lsd = references["urgent"]["lsd_metric"]
    values = {
        "cmgan_vbd": cmgan_values(references["cmgan"], clean * INT16, output * INT16),
        "cmgan_float": cmgan_values(references["cmgan"], clean, output),
        "pysepm": pysepm_values(references["pysepm"], clean * INT16, output * INT16),
        "urgent": {"lsd": lsd(clean, output, RATE), "lsd_float32": lsd(case.clean, case.output, RATE)},
        "fast_bss_eval": bss_values(clean, output, noisy),
    }
    return {source: {name: number(value) for name, value in found.items()} for source, found in values.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pysepm", type=Path, required=True, help="a checkout of schmiph2/pysepm")
    parser.add_argument("--cmgan", type=Path, required=True, help="a checkout of ruizhecao96/CMGAN")
    parser.add_argument("--urgent", type=Path, required=True, help="a checkout of urgent-challenge/urgent2025_challenge")
    parser.add_argument("--numpy1-python", help="an interpreter with NumPy 1 and fast-bss-eval 0.1.4, for URGENT's exact call")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        references = {"pysepm": fixed_pysepm(args.pysepm, Path(folder)),
                      "cmgan": module_from(args.cmgan / "src" / "tools" / "compute_metrics.py", "cmgan_compute_metrics"),
                      "urgent": urgent_functions(args.urgent)}
        found = [{"case": case.name, "sha256": case.digest(), "values": reference_values(case, references)} for case in cases()]
        numpy1 = {}
        if args.numpy1_python:
            pairs = [bss_inputs(*(np.asarray(x, np.float64) for x in (c.clean, c.output, c.noisy))) for c in cases()]
            exact, versions = bss_without_permutation(args.numpy1_python, pairs, Path(folder))
            for entry, values in zip(found, exact):
                entry["values"]["fast_bss_eval_numpy1"] = dict(zip(("bss_sdr", "bss_sir", "bss_sar"), map(float, values)))
            numpy1 = {"numpy1_interpreter": f"numpy {versions}"}
        checks = {"cmgan_audio_samples": cmgan_audio_samples(args.cmgan, references["cmgan"]),
                  "pysepm_results_mat": pysepm_results_mat(args.pysepm)}
    OUTPUT.write_text(json.dumps({
        "made_by": "tests/programs/make_paper_metrics_expected.py: the reference code itself, run on tests/helpers/paper_cases.py",
        "commits": {"schmiph2/pysepm": commit_of(args.pysepm), "ruizhecao96/CMGAN": commit_of(args.cmgan),
                    "urgent-challenge/urgent2025_challenge": commit_of(args.urgent)},
        "pysepm_fixes": list(PYSEPM_FIXES),
        "versions": {name: metadata.version(name) for name in ("numpy", "scipy", "pesq", "numba", "librosa", "fast-bss-eval", "pystoi")},
        **numpy1,
        "cases": found,
        "checks": checks,
    }, indent=1) + "\n")
    print(f"wrote {OUTPUT}")
    print(json.dumps(checks, indent=1))


if __name__ == "__main__":
    main()
