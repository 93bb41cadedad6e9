"""``nsbench new-plugin NAME``: a plugin package skeleton in ``./nsbench-NAME/``.

It holds a ``pyproject.toml`` declaring the ``nsbench`` entry point, an engine
module with a small working engine (spectral subtraction) for the author to
replace, and a test that runs nsbench's conformance kit on it. After
``pip install ./nsbench-NAME``, ``nsbench --list engines`` shows NAME and
``nsbench --engine NAME`` runs it.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Sequence

from nsbench.plugins.errors import UserError

NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "nsbench-{name}"
version = "0.1.0"
description = "{name}: a noise-suppression engine for nsbench"
requires-python = ">=3.11"
dependencies = ["nsbench>={version}"]

[project.optional-dependencies]
test = ["pytest"]

# nsbench finds the engine through this entry point once the package is installed.
[project.entry-points.nsbench]
{name} = "{module}"

[tool.setuptools]
packages = ["{module}"]
'''

ENGINE_MODULE = '''"""{name}: an nsbench engine. Replace ``process`` with your model.

nsbench resamples each clip to SAMPLE_RATE, calls ``process`` (float32 mono
in, the same length out), removes DELAY samples from the output's start, and
scores it. Plugin API {api}: see nsbench's manual, docs/plugins.md.
"""
from __future__ import annotations

import numpy as np
from scipy.signal import istft, stft

import nsbench

SAMPLE_RATE = 16000  # the rate process() receives and returns
DELAY = 0  # samples the output lags its input (nsbench.testing.check_engine measures it)
# Both are declared on the EngineSpec below, once: the harness sets them on the engine.


class {class_name}(nsbench.Engine):
    """Spectral subtraction: a placeholder that works, for you to replace.

    Load a model in ``__init__`` (outside the timer), reset per-clip state in
    ``prepare()``, release resources in ``close()``.
    """

    def process(self, audio: np.ndarray) -> np.ndarray:
        _, _, spectrum = stft(audio, nperseg=512)
        power = np.abs(spectrum) ** 2
        noise = np.percentile(power, 10, axis=1, keepdims=True)  # per-frequency noise floor
        gain = np.sqrt(np.clip(1 - noise / np.maximum(power, 1e-12), 0.05, 1))
        _, out = istft(spectrum * gain, nperseg=512)
        return np.pad(out[: len(audio)], (0, max(0, len(audio) - len(out)))).astype(np.float32)


@nsbench.hookimpl
def register_engines(register):
    register(nsbench.EngineSpec(
        name="{name}",
        factory=lambda options: {class_name}(),
        description="{name} (spectral subtraction placeholder)",
        sample_rate=SAMPLE_RATE,
        delay=DELAY,
    ))
'''

TEST_MODULE = '''"""nsbench's conformance kit on {name}: run with pytest after pip install."""
import nsbench
from nsbench.testing import check_engine


def test_{module}_conforms_to_nsbench():
    assert nsbench.PLUGIN_API >= {api}  # the API this plugin was written against
    check_engine("{name}")
'''

README = '''# nsbench-{name}

An engine for nsbench, the noise-suppression benchmark harness, made by
`nsbench new-plugin {name}` with nsbench {version} (plugin API {api}; nsbench's
manual describes the API in docs/plugins.md).

```sh
pip install ./nsbench-{name}          # nsbench finds it through its entry point
nsbench --list engines                # {name} is listed
pip install pytest                    # the tests need it; nsbench's quick start does not install it
python -m pytest nsbench-{name}/tests # nsbench's conformance kit on it
nsbench --engine {name} --limit 4     # a first result, in results/demo/
```

Edit `{module}/__init__.py`: `process` is your model; `SAMPLE_RATE` and `DELAY`
are declared once, on the EngineSpec (an engine that sets its own
`sample_rate` or `delay` too, to another value, is refused: say
`nsbench.MEASURED` on the spec to let the engine's own value stand). Flags
your plugin adds (`add_arguments`) reach your factory's `options`, and no
others.
'''


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nsbench new-plugin", description="Write an engine plugin package skeleton.")
    p.add_argument("name", help="the engine's name: lower case, digits and hyphens (my-engine)")
    p.add_argument("--folder", default=".", help="where to write nsbench-NAME/ (default: here)")
    return p


def new_plugin(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    target = write_skeleton(args.name, Path(args.folder))
    shown = target if target.is_absolute() else f"./{target}"
    print(f"wrote {shown}/: pip install {shown}, then nsbench --engine {args.name}; "
          f"its tests need pytest (pip install pytest), see {shown}/README.md")
    return 0


def write_skeleton(name: str, folder: Path) -> Path:
    from nsbench.version import PLUGIN_API, __version__

    if not NAME_PATTERN.fullmatch(name):
        raise UserError(f"new-plugin {name!r}: use lower-case letters, digits and hyphens, starting with a letter (my-engine)")
    target = folder / f"nsbench-{name}"
    if target.exists():
        raise UserError(f"{target} already exists: nothing written")
    module = "nsbench_" + name.replace("-", "_")
    fields = {
        "name": name, "module": module, "api": PLUGIN_API, "version": __version__,
        "class_name": "".join(part.capitalize() for part in name.split("-")) + "Engine",
    }
    files = {
        "pyproject.toml": PYPROJECT,
        f"{module}/__init__.py": ENGINE_MODULE,
        f"tests/test_{module}.py": TEST_MODULE,
        "README.md": README,
    }
    for relative, template in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fields))
    return target
