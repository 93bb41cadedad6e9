#!/usr/bin/env python3
"""Entry point: ``python benchmark.py --engine X --dataset D``. See README.md."""
import sys

from nsbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
