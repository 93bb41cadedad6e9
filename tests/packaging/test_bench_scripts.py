"""The benchmark scripts in bench/ still import: they reach into nsbench's
internals (the run's clip functions, the cache), so a re-layering that moves a
name breaks them silently until someone measures. They are imported in one
fresh interpreter, as ``python bench/X.py`` would import them, without running
their main()."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers.paths import REPO_ROOT

IMPORT_EACH = """
import importlib, json, sys, traceback
sys.path[:0] = ['bench', '.']
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException:
        failed[name] = traceback.format_exc(limit=1).strip().splitlines()[-1]
print(json.dumps(failed))
"""


def test_every_bench_script_imports():
    scripts = sorted(path.stem for path in (REPO_ROOT / "bench").glob("*.py"))
    assert {"bench_cold_demo", "bench_metric_stage", "bench_equal_job"} <= set(scripts)
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH, *scripts], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == {}


def test_the_check_sees_a_broken_import(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "broken.py").write_text("from nsbench.run.runner import no_such_name\n")
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH, "broken"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=True, env={"PYTHONPATH": str(REPO_ROOT)})
    assert "no_such_name" in json.loads(done.stdout.splitlines()[-1])["broken"]
