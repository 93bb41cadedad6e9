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
from nsbench import Engine
from nsbench.plugins.specs import EngineSpec
from nsbench.plugins.errors import UserError

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
            from nsbench.plugins.specs import EngineSpec
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
    """As datasette does: a new hook without a test or a manual entry fails here."""
    hooks = [name for name, value in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(value, "nsbench_spec")]
    assert set(hooks) == {"register_engines", "register_datasets", "register_metrics", "register_metric_sets",
                          "register_conditions", "register_recognisers", "add_arguments"}
    readme = (REPO_ROOT / "docs" / "plugins.md").read_text()
    test_sources = "".join(p.read_text() for p in (REPO_ROOT / "tests").rglob("test_*.py") if p.name != "test_plugins.py")
    for hook in hooks:
        assert f"| `{hook}(" in readme, f"hook {hook} is not in docs/plugins.md's hooks table"
        assert hook in test_sources, f"hook {hook} is not exercised by a test outside test_plugins.py"


def test_every_exported_name_is_documented_in_the_plugin_api_section():
    """The plugin API is nsbench.__all__ and nsbench.adapters.__all__: each
    name has a row in docs/adapters.md, which states the current PLUGIN_API."""
    import nsbench
    from nsbench import adapters

    reference = (REPO_ROOT / "docs" / "adapters.md").read_text()
    assert f"`PLUGIN_API = {nsbench.PLUGIN_API}`" in reference
    assert isinstance(nsbench.PLUGIN_API, int) and nsbench.PLUGIN_API >= 1
    for name in nsbench.__all__:
        assert getattr(nsbench, name) is not None
        assert f"| `{name}` |" in reference, f"nsbench.{name} is exported but not in docs/adapters.md"
    for name in adapters.__all__:
        assert f"| `{name}` |" in reference, f"nsbench.adapters.{name} is exported but not in docs/adapters.md"
    # Internal records stay out of the API.
    assert "ClipRecord" not in nsbench.__all__


def test_import_nsbench_stays_light():
    """A plugin imports nsbench at start-up: no engine's or plot's package comes with it."""
    code = "import sys, nsbench; print(sorted(m for m in ('scipy', 'matplotlib', 'onnxruntime', 'soundfile', 'soxr', 'distributed', 'av') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------- PLUGIN_API 4


class OwnRate(Engine):
    sample_rate = 16000  # the engine's own, as a python: class declares it

    def process(self, audio):
        return audio


def own_rate_spec(**facts):
    return EngineSpec(name="own-rate", factory=lambda options: OwnRate(), description="", **{"sample_rate": 48000, "delay": 0, **facts})


def test_a_rate_declared_on_both_the_engine_and_its_spec_differently_is_refused_naming_both():
    engine = OwnRate()
    with pytest.raises(UserError, match=r"sample_rate is declared twice, 48000 on its EngineSpec and 16000 on OwnRate"):
        own_rate_spec().declare_on(engine)
    assert engine.sample_rate == 16000  # not silently overwritten


def test_a_fact_declared_in_one_place_stands():
    from nsbench import MEASURED

    measured = OwnRate()
    own_rate_spec(sample_rate=MEASURED).declare_on(measured)
    assert own_rate_spec(sample_rate=MEASURED).rate_of(measured) == 16000
    same = OwnRate()
    own_rate_spec(sample_rate=16000, delay=480).declare_on(same)  # the same rate twice, and the spec's delay
    assert (same.sample_rate, same.delay) == (16000, 480)
    with pytest.raises(UserError, match=r"delay is declared twice, 0 on its EngineSpec and 240"):
        instance = OwnRate()
        instance.delay = 240  # set in __init__ counts as the engine's own too
        own_rate_spec(sample_rate=16000).declare_on(instance)


def test_datasets_receive_their_own_plugin_s_flags_and_the_data_folder_only():
    from nsbench.flags import build_parser
    from nsbench.config import RunConfig

    manager = get_plugin_manager(load_entry_points=False)
    registry = build_registry(manager)
    argv = ["--dataset", "demo-tts", "--demo-seed", "7", "--musdb-rate", "16000"]
    config = RunConfig.from_args(build_parser(manager).parse_args(argv), argv)
    plugin = registry.datasets.get("demo-tts").plugin
    assert plugin == registry.datasets.get("demo").plugin  # the plugin that adds --demo-seed registers both sets
    assert config.dataset_options(plugin) == {"demo_seed": 7, "data_folder": None}
    assert "musdb_rate" in config.dataset_options(registry.datasets.get("musdb").plugin)


def test_a_metric_s_options_get_its_flags_and_a_metric_context_not_the_registry():
    import dataclasses

    from nsbench import MetricContext
    from nsbench.plugins.metric_options import bind_options, metric_context

    seen = {}

    def options(flags, context):
        seen.update(flags=dict(flags), context=context)
        return {"fingerprint": "x"}

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    spec = dataclasses.replace(registry.metrics.get("snr").spec, name="with-options", options=options)
    bind_options([spec], lambda metric: {"my_flag": 1}, metric_context(registry, use_cache=False, rerun=True))
    assert seen["flags"] == {"my_flag": 1}
    context = seen["context"]
    assert isinstance(context, MetricContext) and (context.use_cache, context.rerun) == (False, True)
    with pytest.raises(UserError, match="Unknown recogniser 'nope'"):
        context.recogniser("nope")
