#!/usr/bin/env python3
"""Entry point: ``python benchmark.py --engine X --dataset D``. See README.md."""
import sys

try:
    from nsbench.cli import main
except ModuleNotFoundError as error:
    if (error.name or "").split(".")[0] == "nsbench":
        raise  # a broken checkout, not a missing install: show where
    print(
        f"benchmark.py: error: {sys.executable} has no {error.name}: install nsbench's requirements "
        "(the README's quick start: python3 -m venv .venv && .venv/bin/pip install -r requirements.txt "
        "&& .venv/bin/pip install --no-deps -r requirements-nodeps.txt), then run .venv/bin/python benchmark.py "
        "or activate the environment first (. .venv/bin/activate)",
        file=sys.stderr,
    )
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main())
