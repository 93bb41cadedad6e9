#!/usr/bin/env python3
"""Your own model as a program: reads one audio file, writes another.

    python benchmark.py --engine "command:python3 examples/command_model.py --in {input} --out {output}"

nsbench runs it once per clip, without a shell, on files in a private folder.
"""
import argparse

import numpy as np
import soundfile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--in", dest="source", required=True)
    parser.add_argument("--out", dest="target", required=True)
    args = parser.parse_args()
    audio, rate = soundfile.read(args.source, dtype="float32")
    # A downward expander: attenuate 20 ms frames quieter than the clip's 30th percentile.
    frame = rate // 50
    frames = len(audio) // frame
    energy = np.array([np.mean(audio[i * frame : (i + 1) * frame] ** 2) for i in range(frames)])
    threshold = np.percentile(energy, 30) if frames else 0.0
    gain = np.ones(len(audio), dtype=np.float32)
    for i in np.flatnonzero(energy < threshold):
        gain[i * frame : (i + 1) * frame] = 0.3
    soundfile.write(args.target, audio * gain, rate, subtype="FLOAT")


if __name__ == "__main__":
    main()
