"""Registration: built-ins, entry points, --plugin files, misspelled hooks, names."""
from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nsbench.plugins import hookspecs
from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.plugins.types import EngineSpec, UserError

from tests.helpers.paths import REPO_ROOT

EXAMPLE_PLUGIN = REPO_ROOT / "examples" / "spectral_subtraction_plugin.py"


def registry_for(*local_plugins: str, entry_points: bool = False):
    return build_registry(get_plugin_manager(local_plugins, load_entry_points=entry_points))


def test_builtins_register_through_the_hooks():
    registry = registry_for()
    assert "passthrough" in registry.engines
    assert {"demo", "folder"} <= set(registry.datasets.entries)
    assert {"si_sdr", "si_sdr_zm", "si_sdri", "stoi", "estoi", "voice_level_db", "music_attenuation_db", "rtf_cpu"} <= set(
        registry.metrics.entries
    )
    assert registry.engines.get("passthrough").origin == "built-in"


def test_unknown_name_suggests_the_right_one():
    registry = registry_for()
    with pytest.raises(UserError, match=r"Unknown engine 'pasthrough'\. Did you mean: passthrough\? Available: "):
        registry.engines.get("pasthrough")
    with pytest.raises(UserError, match=r"Unknown dataset 'dmo'\. Did you mean: demo\?"):
        registry.datasets.get("dmo")


def test_cli_unknown_engine_is_one_line_and_exit_2(capsys):
    assert main(["--engine", "rnoise-xyz-passthru", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Unknown engine 'rnoise-xyz-passthru'" in err[0]


def test_misspelled_hook_fails_loudly(tmp_path):
    plugin = tmp_path / "typo_plugin.py"
    plugin.write_text(
        textwrap.dedent(
            """
            from nsbench.plugins.hookspecs import hookimpl

            @hookimpl
            def register_engine(register):  # missing the final s
                pass
            """
        )
    )
    with pytest.raises(UserError, match="register_engine"):
        get_plugin_manager([str(plugin)], load_entry_points=False)


def test_local_plugin_file_registers_its_engine():
    record = registry_for(str(EXAMPLE_PLUGIN)).engines.get("spectral-subtraction")
    assert record.origin == f"--plugin {EXAMPLE_PLUGIN}"


def test_local_plugin_by_module_name(tmp_path, monkeypatch):
    (tmp_path / "my_nsbench_plugin.py").write_text(EXAMPLE_PLUGIN.read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "spectral-subtraction" in registry_for("my_nsbench_plugin").engines


def test_missing_plugin_file_is_a_user_error():
    with pytest.raises(UserError, match="no such file"):
        get_plugin_manager(["nowhere/plugin.py"], load_entry_points=False)


def make_distribution(root: Path) -> None:
    """An installed distribution 'nsbench-testplugin' with an nsbench entry point."""
    package = root / "nsbench_testplugin"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from nsbench.plugins.hookspecs import hookimpl
            from nsbench.plugins.types import EngineSpec
            from nsbench.builtin.engines.passthrough import Passthrough

            @hookimpl
            def register_engines(register):
                register(EngineSpec(name="from-entry-point", factory=lambda options: Passthrough(),
                                    description="test", sample_rate=16000, delay=0))
            """
        )
    )
    dist_info = root / "nsbench_testplugin-0.3.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: nsbench-testplugin\nVersion: 0.3\n")
    (dist_info / "entry_points.txt").write_text("[nsbench]\ntestplugin = nsbench_testplugin\n")


def test_entry_point_plugin_loads(tmp_path, monkeypatch, capsys):
    make_distribution(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    record = registry_for(entry_points=True).engines.get("from-entry-point")
    assert record.origin == "entry point (nsbench-testplugin)"
    assert record.version == "0.3"
    assert main(["--list", "plugins"]) == 0
    assert "entry point (nsbench-testplugin)" in capsys.readouterr().out


def test_duplicate_names_are_refused():
    class Twin:
        @hookimpl
        def register_engines(self, register):
            register(EngineSpec(name="passthrough", factory=lambda o: None, description="", sample_rate=16000, delay=0))

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(Twin())
    with pytest.raises(UserError, match="'passthrough' is registered twice"):
        build_registry(manager)


def test_unavailable_engine_lists_its_install_line(capsys):
    class NeedsMissing:
        @hookimpl
        def register_engines(self, register):
            register(
                EngineSpec(name="ghost", factory=lambda o: None, description="needs a missing package",
                           sample_rate=16000, delay=0, requires=("no_such_module_xyz",), install="pip install ghost==1.0")
            )

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(NeedsMissing())
    record = build_registry(manager).engines.get("ghost")
    assert not record.available and record.missing_modules == ["no_such_module_xyz"]
    with pytest.raises(UserError, match=r"engine 'ghost' is unavailable: missing no_such_module_xyz\. Install: pip install ghost==1\.0"):
        build_registry(manager).engines.require_available("ghost")


def test_list_engines_shows_rate_delay_and_status(capsys):
    assert main(["--list", "engines"]) == 0
    out = capsys.readouterr().out
    header, *rows = out.strip().splitlines()
    assert header.split()[:7] == ["name", "status", "version", "from", "rate", "delay", "oracle"]
    passthrough = next(row for row in rows if row.startswith("passthrough "))
    assert passthrough.split()[1:5] == ["available", "0.1.0", "built-in", "any"]


def test_list_metrics_shows_what_each_ignores(capsys):
    assert main(["--list", "metrics"]) == 0
    si_sdr = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("si_sdr "))
    assert "dB" in si_sdr and "higher" in si_sdr and "scale" in si_sdr.lower()


def test_import_datasets_is_not_our_folder(tmp_path):
    """`python benchmark.py` puts the repo root first on sys.path; a user model
    importing Hugging Face `datasets` must still get the installed package."""
    installed = tmp_path / "site" / "datasets"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("WHO = 'installed'\n")
    code = (
        "import datasets, nsbench.builtin.datasets.demo as demo; "
        "print(datasets.__file__); print(demo.__file__)"
    )
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
    )
    datasets_file, demo_file = result.stdout.split()
    assert Path(datasets_file) == installed / "__init__.py"
    assert Path(demo_file) == REPO_ROOT / "datasets" / "demo.py"
    assert not (REPO_ROOT / "datasets" / "__init__.py").exists()


def test_every_hook_is_tested_and_documented():
    """As datasette does: a new hook without a test or a README entry fails here."""
    hooks = [name for name, value in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(value, "nsbench_spec")]
    assert set(hooks) == {"register_engines", "register_datasets", "register_metrics", "register_conditions", "register_recognisers", "add_arguments"}
    readme = (REPO_ROOT / "README.md").read_text()
    test_sources = "".join(p.read_text() for p in (REPO_ROOT / "tests").rglob("test_*.py") if p.name != "test_plugins.py")
    for hook in hooks:
        assert f"| `{hook}(" in readme, f"hook {hook} is not in the README hooks table"
        assert hook in test_sources, f"hook {hook} is not exercised by a test outside test_plugins.py"


def test_every_exported_name_is_documented_in_the_plugin_api_section():
    """The plugin API is nsbench.__all__: each name has a row in the README's
    "Plugin API" section, which states the current PLUGIN_API version."""
    import nsbench

    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("\n## Plugin API\n")[1].split("\n## ")[0]
    assert f"`PLUGIN_API = {nsbench.PLUGIN_API}`" in section
    assert isinstance(nsbench.PLUGIN_API, int) and nsbench.PLUGIN_API >= 1
    for name in nsbench.__all__:
        assert getattr(nsbench, name) is not None
        assert f"| `{name}` |" in section, f"nsbench.{name} is exported but not in the README's Plugin API table"
    # Internal records stay out of the API.
    assert "ClipRecord" not in nsbench.__all__


def test_import_nsbench_stays_light():
    """A plugin imports nsbench at start-up: no engine's or plot's package comes with it."""
    code = "import sys, nsbench; print(sorted(m for m in ('scipy', 'matplotlib', 'onnxruntime', 'soundfile', 'soxr', 'distributed', 'av') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
