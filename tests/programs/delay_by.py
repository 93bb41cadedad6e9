"""A test stand-in for a user's program whose output lags its input:
``delay_by.py SAMPLES IN.wav OUT.wav`` writes its input SAMPLES samples late
(zeros first, the end cut), as long as it was, at its rate, in float."""
from __future__ import annotations

import sys

import numpy as np
import soundfile


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: delay_by.py <samples> <input> <output>", file=sys.stderr)
        return 1
    delay = int(argv[0])
    audio, rate = soundfile.read(argv[1], dtype="float32")
    late = np.concatenate([np.zeros(delay, dtype=np.float32), audio])[: len(audio)]
    soundfile.write(argv[2], late, rate, subtype="FLOAT")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
