"""Model files shipped in wheels, checked by digest, and the one-thread ONNX session every ONNX engine runs.

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.model_files import package_file, verified, engine_session

__all__ = ["package_file", "verified", "engine_session"]
