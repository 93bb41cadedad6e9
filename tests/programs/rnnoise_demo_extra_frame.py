"""A test stand-in for a user's rnnoise_demo build with a different delay:
``rnnoise_demo_extra_frame.py IN.pcm OUT.pcm`` behaves like
``nsbench.builtin.engines.rnnoise_demo`` but its output comes one frame (480 samples at
48 kHz) later, and it writes the same number of samples."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for nsbench

from nsbench.builtin.engines.rnnoise_demo import FRAME, denoise, load_library  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: rnnoise_demo_extra_frame.py <noisy speech> <output denoised>", file=sys.stderr)
        return 1
    samples = np.fromfile(argv[0], dtype="<i2")
    usual_length = max(len(samples) // FRAME - 1, 0) * FRAME
    late = denoise(np.concatenate([np.zeros(FRAME, "<i2"), samples]), load_library())
    late[:usual_length].tofile(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
