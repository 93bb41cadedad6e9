"""``<engine>.clips.jsonl``: the results writer's (nsbench.report.writer) log
of each engine's clips, a line per clip as it is scored."""
from __future__ import annotations

import json
from pathlib import Path
from typing import BinaryIO

from nsbench.plugins.records import ClipRecord
from nsbench.store import folders


class ClipLog:
    """``<engine>.clips.jsonl``, one line per clip, written as each arrives so
    an interrupted run keeps every clip already scored (appended, so not
    through write_atomically). Each line is there whole or not at all: one
    that a full disk cuts short is cut off again, and the run stops in one line."""

    def __init__(self, path: Path):
        self.path = path
        self._file = None  # opened with the first record: an engine that never starts leaves no file

    def add(self, record: ClipRecord) -> int:
        """Writes the record's line; returns where it starts (RecordTable rereads it from there)."""
        line = (json.dumps(record.to_json()) + "\n").encode()
        with folders.stop_on_failure(self.path.parent, "the results folder", "the clip lines written before are whole"):
            if self._file is None:
                self._file = open_log(self.path)
            offset = self._file.tell()
            try:
                written = 0
                while written < len(line):  # unbuffered: a write may take only part of it
                    written += self._file.write(line[written:])
            except OSError as error:
                self._file.truncate(offset)
                self._file.seek(offset)
                raise OSError(error.errno, error.strerror, str(self.path)) from None
        return offset

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def open_log(path: Path) -> BinaryIO:
    """A .clips.jsonl, emptied, unbuffered: each line goes to the file system as one write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("wb", buffering=0)
