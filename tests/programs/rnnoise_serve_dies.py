"""``python rnnoise_serve_dies.py MARKER [hang] --serve``: nsbench's served
rnnoise program, which SIGKILLs itself once, for real (or with ``hang``, stops
answering), in the middle of the second clip it is sent (the first is the
engine's calibration probe), after answering that clip's first block, unless
MARKER exists; it creates MARKER first, so the fresh program that takes the
next clips lives."""
from __future__ import annotations

import io
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for nsbench

from nsbench.builtin.engines import rnnoise_demo  # noqa: E402


class DiesMidClip(io.RawIOBase):
    """stdin, counting the protocol's messages as the program reads them."""

    def __init__(self, stream, marker: Path, hang: bool):
        self.stream, self.marker, self.hang = stream, marker, hang
        self.new_clips = self.blocks_of_second_clip = 0

    def read(self, count: int = -1) -> bytes:
        data = self.stream.read(count)
        if count == rnnoise_demo.HEADER.size and data:
            kind = data[:1]
            self.new_clips += kind == b"N"
            if self.new_clips == 2 and kind == b"A":
                self.blocks_of_second_clip += 1
                if self.blocks_of_second_clip == 2 and not self.marker.exists():
                    self.marker.touch()
                    if self.hang:
                        time.sleep(300)
                    os.kill(os.getpid(), signal.SIGKILL)
        return data


if __name__ == "__main__":
    marker = Path(sys.argv[1])
    sys.exit(rnnoise_demo.serve(DiesMidClip(sys.stdin.buffer, marker, "hang" in sys.argv[2:]), sys.stdout.buffer))
