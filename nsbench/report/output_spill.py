"""report.html's copy of every output, kept until the listening grid has picked
its clips (nsbench.report.listening_grid says why every output is kept).

Each engine's outputs are appended to one file of its own, a record each: a
header (the run id's length, the rate, channels and frames), the run id, then
the listening excerpt as 16-bit PCM, converted by soundfile as a WAV file of
it would be. A file per output cost a cold demo run 1,560 files made, written,
closed and deleted (1.9 CPU s of its harness); appending costs 1.25 s, most
of it soundfile's conversion to 16 bits, kept so the grid hears the same bits.
The grid asks for a few dozen outputs at the end, each found by walking that
engine's headers (seeking past the audio), so nothing is held in memory per
clip, whatever the number of clips.
"""
from __future__ import annotations

import io
import shutil
import struct
import tempfile
import weakref
from pathlib import Path
from typing import BinaryIO

import numpy as np
import soundfile

from nsbench.report.listening_grid import as_signal, heard_excerpt

HEADER = struct.Struct("<IIIQ")  # run id's length in bytes, rate, channels, frames
SUBTYPE, SAMPLE_BYTES = "PCM_16", 2


class OutputSpill:
    """Outputs by engine and run id, in a temporary folder removed by ``close``
    (or when the spill is collected, or the process exits)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="nsbench-outputs-"))
        self._files: dict[str, BinaryIO] = {}
        self._finalizer = weakref.finalize(self, remove, self.folder, self._files)

    def keep(self, engine: str, run: str, audio: np.ndarray, rate: int) -> None:
        """The output's excerpt, clipped to full scale as the grid plays it."""
        heard = heard_excerpt(audio, rate)
        channels = 1 if heard.ndim == 1 else heard.shape[0]
        pcm = io.BytesIO()
        soundfile.write(pcm, heard.T, rate, format="RAW", subtype=SUBTYPE)
        name = run.encode()
        self._file(engine).write(HEADER.pack(len(name), rate, channels, heard.shape[-1]) + name + pcm.getvalue())

    def read(self, engine: str, run: str) -> tuple[np.ndarray, int] | None:
        """The kept excerpt as (samples,) or (channels, samples) float32, and its
        rate, as read back from a 16-bit WAV file; None if it was not kept."""
        file = self._files.get(engine)
        if file is None:
            return None
        file.flush()
        wanted = run.encode()
        with open(file.name, "rb") as reader:
            while header := reader.read(HEADER.size):
                length, rate, channels, frames = HEADER.unpack(header)
                size = frames * channels * SAMPLE_BYTES
                if reader.read(length) != wanted:
                    reader.seek(size, io.SEEK_CUR)
                    continue
                audio, _ = soundfile.read(io.BytesIO(reader.read(size)), dtype="float32", always_2d=True, format="RAW",
                                          subtype=SUBTYPE, samplerate=rate, channels=channels)
                return as_signal(audio), rate
        return None

    def close(self) -> None:
        self._finalizer()

    def _file(self, engine: str) -> BinaryIO:
        if engine not in self._files:
            self._files[engine] = open(self.folder / f"{len(self._files)}.pcm", "ab")  # engine names need not be file names
        return self._files[engine]


def remove(folder: Path, files: dict[str, BinaryIO]) -> None:
    for file in files.values():
        file.close()
    files.clear()
    shutil.rmtree(folder, ignore_errors=True)
