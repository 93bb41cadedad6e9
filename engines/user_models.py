"""Your own model, without writing a plugin.

``--engine python:package.module:attribute``: a function ``f(audio, sample_rate)
-> audio`` (float32 mono in and out), or a class whose instances have
``process(audio)`` and ``close()`` (and optionally ``sample_rate`` and ``delay``).

``--engine python:path/to/file.py:attribute`` loads the file itself.

``--engine 'command:tool --in {input} --out {output}'``: a program run once per
clip, without a shell: the template is split like a shell would split it, then
``{input}`` and ``{output}`` are replaced inside each argument, so a path with
spaces, quotes or ``;`` stays one argument. It runs in the folder the user ran
nsbench from, so relative paths mean what they mean in the user's shell, and a
bare program name is looked up in the folder of nsbench's own interpreter first
(``python3`` in a template is the virtual environment's, activated or not). It reads and writes audio files in
the format ``--command-format`` at ``--command-rate``. ``--command-delay``
declares the samples its output lags (the spec's delay, removed by the
harness); ``--command-name`` names it in the reports.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import shlex
import shutil
import sys
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import soundfile

from nsbench.adapters import PrivateFolder, files_digest, read_failure, run_program
from nsbench import MEASURED, ClipError, Engine, EngineSpec, UserError, hookimpl

DEFAULT_RATE = 16000
# --command-format -> soundfile subtype of the input file we write.
COMMAND_FORMATS = {"wav-float": "FLOAT", "wav-pcm16": "PCM_16"}
COMMAND_FLAGS = ("command_rate", "command_format", "command_timeout", "command_delay", "command_name")


class FunctionEngine(Engine):
    """Wraps ``f(audio, sample_rate) -> audio``."""

    def __init__(self, function: Callable[[np.ndarray, int], np.ndarray], sample_rate: int, delay: int):
        self.function, self.sample_rate, self.delay = function, sample_rate, delay

    def process(self, audio: np.ndarray) -> np.ndarray:
        return self.function(audio, self.sample_rate)


def import_attribute(target: str) -> Any:
    module_name, _, attribute = target.rpartition(":")
    if not module_name or not attribute:
        raise UserError(f"--engine python:{target}: expected python:package.module:function or python:path/to/file.py:function")
    module = import_file(target, module_name) if is_file_target(module_name) else import_module(target, module_name)
    try:
        return getattr(module, attribute)
    except AttributeError as error:
        raise UserError(f"--engine python:{target}: {module_name} has no attribute {attribute}") from error


def is_file_target(module_name: str) -> bool:
    """``./mygate.py`` or ``models/gate.py`` names a file; ``pkg.mod`` a module."""
    return module_name.endswith(".py") or "/" in module_name or os.sep in module_name


def import_module(target: str, module_name: str) -> Any:
    # The working directory first, as `python -m` would, so a user's model file is found.
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(
            f"--engine python:{target}: cannot import {module_name} ({error}); modules are looked up in the "
            f"current folder ({Path.cwd()}) and on PYTHONPATH, or name the file: python:path/to/file.py:function"
        ) from error


def import_file(target: str, module_name: str) -> Any:
    """The module a file path names, loaded once per process under a name of its own."""
    path = Path(module_name).resolve()
    if not path.is_file():
        raise UserError(f"--engine python:{target}: no such file {path}")
    name = f"nsbench_user_model_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it, as import does, so pickling finds its functions
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise UserError(f"--engine python:{target}: {path.name} raised {type(error).__name__}: {error}") from error
    return module


def check_python(options: Mapping[str, Any]) -> None:
    """Before the first clip, in the parent: the model imports and names a
    function or a class, so a typo stops the run before the baseline runs.
    A class is not instantiated here: its model may be large, and each
    worker builds its own."""
    model_object(options["engine_argument"])


def model_object(target: str) -> Any:
    obj = import_attribute(target)
    if not (inspect.isclass(obj) or callable(obj)):
        raise UserError(f"--engine python:{target}: {type(obj).__name__} is neither a function nor a class")
    return obj


def build_python(options: Mapping[str, Any]) -> Any:
    target = options["engine_argument"]
    obj = model_object(target)
    rate = options.get("python_rate") or DEFAULT_RATE
    if inspect.isclass(obj):
        engine = obj()
        if not callable(getattr(engine, "process", None)):
            raise UserError(f"--engine python:{target}: the class has no process(audio) method")
        engine.sample_rate = getattr(engine, "sample_rate", rate)
        engine.delay = getattr(engine, "delay", 0)
        if not callable(getattr(engine, "close", None)):
            engine.close = lambda: None
        return engine
    return FunctionEngine(obj, rate, 0)


def python_fingerprint(options: Mapping[str, Any]) -> str:
    """The model's module file: an edited model gets new cache keys."""
    module_name = options["engine_argument"].rpartition(":")[0]
    if is_file_target(module_name):
        path = Path(module_name)
        return files_digest([path]) if path.is_file() else ""
    try:
        origin = module_file(module_name)
    except (ImportError, ValueError):
        return ""  # building the engine will say what is wrong
    return files_digest([origin]) if origin else ""


def module_file(module_name: str) -> str | None:
    """The file import_attribute imports (the working folder first), found
    without importing it or its packages (find_spec of a.b runs a's
    __init__): nsbench listen keys an engine a results folder names."""
    top, *inner = module_name.split(".")
    spec = PathFinder.find_spec(top, [str(Path.cwd()), *sys.path]) or importlib.util.find_spec(top)
    for name in inner:
        where = spec.submodule_search_locations if spec else None
        spec = PathFinder.find_spec(f"{spec.name}.{name}", list(where)) if spec and where else None
    return spec.origin if spec else None


def command_fingerprint(options: Mapping[str, Any]) -> str:
    """Every file the command line names (the program, a script, a model):
    a rebuilt program gets new cache keys."""
    argv = shlex.split(options["engine_argument"])
    return files_digest([program_path(argv[0]), *argv[1:]]) if argv else ""


def program_path(program: str) -> str:
    """A bare name (``python3``) as found first beside nsbench's own interpreter,
    then on PATH: run as ``.venv/bin/python benchmark.py``, a template's
    ``python3`` is the virtual environment's even when it is not activated."""
    if os.sep in program:
        return program
    interpreter_folder = str(Path(sys.executable).parent)
    return shutil.which(program, path=os.pathsep.join([interpreter_folder, os.environ.get("PATH", "")])) or program


class CommandEngine(Engine):
    """Runs a program per clip on audio files in a private temporary folder,
    from the folder the user ran nsbench in."""

    def __init__(self, template: str, sample_rate: int, file_format: str, timeout: float):
        self.argv = shlex.split(template)
        if not any("{input}" in arg for arg in self.argv) or not any("{output}" in arg for arg in self.argv):
            raise UserError(f"--engine command:{template}: the command needs {{input}} and {{output}}")
        self.argv[0] = program_path(self.argv[0])
        self.sample_rate = sample_rate  # the delay is the spec's (--command-delay, declared_by)
        self.subtype, self.timeout = COMMAND_FORMATS[file_format], timeout
        self.folder = PrivateFolder("nsbench-command-")
        # Where the user stands: relative paths in the template mean what they mean in the user's shell.
        self.cwd = Path.cwd()

    def process(self, audio: np.ndarray) -> np.ndarray:
        source, target = self.folder.path / "input.wav", self.folder.path / "output.wav"
        target.unlink(missing_ok=True)  # a stale output must never pass for this clip's
        soundfile.write(str(source), audio, self.sample_rate, subtype=self.subtype)
        argv = [arg.replace("{input}", str(source)).replace("{output}", str(target)) for arg in self.argv]
        run_program(argv, self.timeout, cwd=self.cwd)
        if not target.is_file():
            raise ClipError(f"{Path(argv[0]).name} exited without writing {{output}}")
        return self.read_output(target, Path(argv[0]).name)

    def read_output(self, target: Path, program: str) -> np.ndarray:
        """The file as written: one channel is mono; several stay (sources,
        samples) for the harness to accept on a separation clip or refuse.
        NaN, Inf and the length are checked by the harness like any output."""
        try:
            data, rate = soundfile.read(str(target), dtype="float32", always_2d=True)
        except Exception as error:  # soundfile raises several types for bad files
            raise ClipError(f"{program} wrote an {{output}} that is not audio: {read_failure(target, error)}") from error
        if rate != self.sample_rate:
            raise ClipError(f"{program} wrote {rate} Hz audio, expected {self.sample_rate} Hz")
        return data[:, 0] if data.shape[1] == 1 else data.T

    def close(self) -> None:
        self.folder.close()


def command_declared(options: Mapping[str, Any]) -> dict[str, Any]:
    """--command-delay into the spec's delay (samples at --command-rate, which
    the harness removes as it removes any engine's), --command-name into its
    name; the whole command line stays in the description (the JSON's engine_info)."""
    delay = options.get("command_delay") or 0
    if delay < 0:
        raise UserError(f"--command-delay must be at least 0 samples, got {delay}")
    declared: dict[str, Any] = {"delay": delay} if delay else {}
    name = (options.get("command_name") or "").strip()
    if name:
        if ":" in name:
            raise UserError(f"--command-name {name!r}: a name without ':' (that prefix names an engine family)")
        declared |= {"name": name, "description": f"your program, per clip: {options['engine_argument']}"}
    return declared


def build_command(options: Mapping[str, Any]) -> CommandEngine:
    return CommandEngine(
        options["engine_argument"],
        options.get("command_rate") or DEFAULT_RATE,
        options.get("command_format") or "wav-float",
        options.get("command_timeout") or 60.0,
    )


@hookimpl
def add_arguments(parser):
    group = parser.add_argument_group("your own model (--engine python:... or command:...)")
    group.add_argument("--python-rate", type=int, default=DEFAULT_RATE, help="sample rate a python: function expects")
    group.add_argument("--command-rate", type=int, default=DEFAULT_RATE, help="sample rate a command: engine reads and writes")
    group.add_argument("--command-format", choices=sorted(COMMAND_FORMATS), default="wav-float", help="file format written for a command: engine")
    group.add_argument("--command-timeout", type=float, default=60.0, help="seconds before a command: engine is killed (per clip)")
    group.add_argument("--command-delay", type=int, default=0, metavar="SAMPLES",
                       help="samples (at --command-rate) a command: engine's output lags its input; the harness removes them")
    group.add_argument("--command-name", metavar="NAME",
                       help="the name a command: engine has in the reports instead of its whole command line")


@hookimpl
def register_engines(register):
    # The rate comes from --python-rate / --command-rate (or the user's class), so the built engine has it.
    common = {"sample_rate": MEASURED, "default": False, "takes_argument": True}
    # One plugin, two families: each takes its own flags (--command-name beside a python: engine is refused).
    register(EngineSpec(name="python", factory=build_python, delay=MEASURED, fingerprint=python_fingerprint, check=check_python,
                        description="your Python function or class: --engine python:package.module:name",
                        takes_flags=("python_rate",), **common))
    register(EngineSpec(name="command", factory=build_command, delay=0, fingerprint=command_fingerprint, declared_by=command_declared,
                        description="your program, per clip: --engine 'command:tool --in {input} --out {output}'",
                        takes_flags=COMMAND_FLAGS, **common))
