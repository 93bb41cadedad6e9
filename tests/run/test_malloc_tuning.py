"""nsbench.run.malloc_tuning: freed blocks stay in the process, so a second clip's
temporaries do not page-fault afresh. Measured in fresh processes, with the
kernel's count of page faults."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# A clip's worth of scoring temporaries, made and freed 40 times; prints the
# page faults of the last 30 rounds (the first rounds warm up either way).
CODE = """
import resource, sys
import numpy as np
from nsbench.run import malloc_tuning
tuned = malloc_tuning.keep_freed_memory() if sys.argv[1] == "tuned" else False
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for round in range(40):
    if round == 10:
        start = faults()
    signal = np.ones(160000)
    copies = [signal * k for k in range(1, 6)]
    del signal, copies
print(tuned, faults() - start)
"""


def page_faults(mode: str) -> tuple[bool, int]:
    done = subprocess.run([sys.executable, "-c", CODE, mode], cwd=REPO, capture_output=True, text=True, check=True, timeout=60)
    tuned, faults = done.stdout.split()
    return tuned == "True", int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_freed_blocks_are_reused_without_fresh_page_faults():
    tuned, with_tuning = page_faults("tuned")
    if not tuned:
        pytest.skip("this C library has no mallopt (not glibc)")
    _, without = page_faults("plain")
    # 30 rounds of five 1.25 MB arrays: ~300 pages each when mapped afresh.
    assert without > 10_000, without
    assert with_tuning < without / 20, (with_tuning, without)
