"""Picovoice Koala, PyPI ``pvkoala`` (16 kHz, int16 frames of ``frame_length``).

Koala runs on the device but validates its AccessKey with Picovoice's servers
when it starts, so it needs ``--picovoice-access-key`` (or the environment
variable PICOVOICE_ACCESS_KEY, which keeps the key out of the command line that
result files record) and a network connection. It is not run by default: most
users have no key, and a default run should not end on a line about a vendor's
key. Name it: ``--engine koala --picovoice-access-key KEY``.

Frames are padded as Picovoice's own noise-suppression benchmark pads them
(zeros to whole frames after the harness has appended ``delay_sample`` zeros),
and the state is reset before each clip (their benchmark does not reset).
"""
from __future__ import annotations

import importlib.metadata
import os
import threading
from typing import Any, Callable, Mapping

import numpy as np

from nsbench.adapters import FrameStream, process_in_frames
from nsbench import MEASURED, Engine, EngineSpec, UserError, hookimpl

SAMPLE_RATE = 16000
KEY_VARIABLE = "PICOVOICE_ACCESS_KEY"
# pvkoala.create() contacts Picovoice's licence server; a network that drops
# packets silently could hold it for minutes, and a ctypes call cannot be
# interrupted, so it runs in a thread we stop waiting for.
CREATE_TIMEOUT_SECONDS = 30.0
INSTALL = "pip install pvkoala==3.0.1"


class Koala(Engine):
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.delay = handle.delay_sample  # known only once created: the spec says MEASURED
        self.frame_length = handle.frame_length

    def process(self, audio: np.ndarray) -> np.ndarray:
        self.handle.reset()  # each clip starts from a fresh state
        return process_in_frames(audio, self.frame_length, lambda frame: self.handle.process(frame.tolist()))

    def stream(self) -> FrameStream:
        self.handle.reset()
        return FrameStream(self.frame_length, lambda frame: self.handle.process(frame.tolist()))

    def close(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            handle.delete()


def call_with_timeout(function: Callable[[], Any], seconds: float, what: str) -> Any:
    """``function()``, or UserError if it has not returned after ``seconds``.
    The thread is left to finish on its own (daemon: it never blocks exit)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, name=what, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise UserError(
            f"{what} did not return within {seconds:g} s (it validates the AccessKey online: is the network up?)"
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def one_line(error: BaseException, secret: str) -> str:
    """pvkoala's errors span several lines and quote the key: one line, key hidden."""
    return " ".join(str(error).replace(secret, "***").split())


def build(options: Mapping[str, Any]) -> Koala:
    key = options.get("picovoice_access_key") or os.environ.get(KEY_VARIABLE)
    if not key:
        raise UserError(
            f"koala needs --picovoice-access-key KEY (or ${KEY_VARIABLE}); "
            "get a key at https://console.picovoice.ai/ (it is checked online)"
        )
    import pvkoala

    try:
        handle = call_with_timeout(lambda: pvkoala.create(access_key=key), CREATE_TIMEOUT_SECONDS, "pvkoala.create")
    except pvkoala.KoalaError as error:
        # "from None": the chained error, if ever printed, would quote the key.
        raise UserError(f"koala could not start: {type(error).__name__}: {one_line(error, key)}") from None
    return Koala(handle)


@hookimpl
def add_arguments(parser):
    parser.add_argument("--picovoice-access-key", metavar="KEY",
                        help=f"AccessKey for Picovoice Koala (default: ${KEY_VARIABLE}); validated online")


@hookimpl
def register_engines(register):
    register(
        EngineSpec(
            name="koala",
            factory=build,
            description="Picovoice Koala (pvkoala); needs --picovoice-access-key and a network to start; "
            "delay: the SDK's delay_sample, read at start",
            sample_rate=SAMPLE_RATE,
            delay=MEASURED,  # delay_sample, known only after create()
            requires=("pvkoala",),
            install=INSTALL,
            version=lambda: importlib.metadata.version("pvkoala"),
            default=False,
        )
    )
