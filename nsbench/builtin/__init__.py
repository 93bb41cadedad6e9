"""The built-in adapters, imported through the core.

The repository keeps them in top-level ``engines/``, ``datasets/``,
``metrics/`` and ``conditions/`` folders with no ``__init__.py``. In a checkout,
pointing this package's ``__path__`` at the repository root makes them importable as
``nsbench.builtin.engines.passthrough`` and so on, while a bare
``import datasets`` (Hugging Face, which transformers imports) still finds the
installed package: a folder without ``__init__.py`` loses to a regular package.
Real module names keep pickling and worker processes working. An installed
nsbench (``pip install .``) has the folders copied here by pyproject.toml's
package-dir mapping, and this package's own ``__path__`` finds them.
"""
from __future__ import annotations

from pathlib import Path

# The folder that holds the nsbench package: the checkout, or site-packages
# once installed (``python -m nsbench...`` works from there).
REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALLED = (Path(__file__).resolve().parent / "engines").is_dir()
if not INSTALLED:
    __path__ = [str(REPO_ROOT)]

# Folder -> built-in modules, in the order they register. Each module defines
# hook implementations at module level; helper modules beside them without
# hooks (datasets/demo_tts.py, generated_set.py, dns2020_remix.py,
# engines/rnnoise_demo.py, metrics/loizou.py) are imported by the adapter that uses them, and are
# not plugins.
BUILTIN_MODULES = {
    "engines": ["passthrough", "user_models", "rnnoise", "deepfilternet", "noisereduce_gate", "webrtc_ns", "speex_ns", "nsnet2", "gtcrn", "dtln", "hush", "oracle_masks", "koala"],
    "datasets": ["demo", "folder", "dns2020", "dns2020_real", "dns2020_blind", "voicebank", "musdb", "biodenoising", "fuss", "rated", "p835_reference"],
    "metrics": ["sisdr", "intelligibility", "levels", "realtime", "pesq_metric", "composite", "spectral_distance", "bss_eval", "dnsmos", "speech_gated", "demixing", "fuss_sisnr", "wer", "urgent"],
    "conditions": ["processing", "codecs"],
}


def module_names() -> list[str]:
    return [
        f"{__name__}.{folder}.{module}"
        for folder, modules in BUILTIN_MODULES.items()
        for module in modules
    ]
