"""The three exceptions a plugin raises, each with its own consequence for the run."""
from __future__ import annotations


class UserError(Exception):
    """An expected problem (bad flag, missing folder): one line for the user, no traceback."""


class ClipError(Exception):
    """A problem confined to one clip (unreadable file, engine returned NaN): recorded, run goes on."""


class MetricUndefined(Exception):
    """The metric has no value on this clip (for example no voice-silent segment); the reason is kept."""

