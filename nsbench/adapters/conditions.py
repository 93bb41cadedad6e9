"""Input conditions (--condition).

Public (docs/adapters.md): import these from ``nsbench.adapters``."""
from __future__ import annotations

from nsbench.plugins.specs import NO_CONDITION

__all__ = ["NO_CONDITION"]
