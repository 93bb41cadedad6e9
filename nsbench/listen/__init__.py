"""``nsbench listen``: blind listening tests built from a run, and their answers
set against the run's metrics.

- ``nsbench listen RESULTS_FOLDER`` builds the test folder (nsbench.listen.build);
- ``nsbench listen --collect FILES...`` reads the listeners' answers
  (nsbench.listen.collect) and writes ``listening-results.json`` and ``.md``
  beside the key, and a section of report.md and report.html.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from nsbench.plugins.errors import UserError
from nsbench.text import plural

EXIT_USER_ERROR = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nsbench listen", description=(
        "Build a blind listening test from a results folder (MUSHRA where the set has clean references, "
        "else P.835), or --collect the answers listeners saved."))
    p.add_argument("results", nargs="?", type=Path, help="a results folder, e.g. results/demo")
    p.add_argument("--output", type=Path, help="where the test folder goes (default: RESULTS/listening-test)")
    p.add_argument("--method", choices=("mushra", "p835"), help="default: mushra where the set has clean references, else p835")
    p.add_argument("--engine", action="append", default=[], help="engine to include (repeatable; default: all but passthrough)")
    p.add_argument("--clips-per-cell", type=int, default=1, help="clips drawn at random in each cell (default: 1)")
    p.add_argument("--seconds", type=float, default=8.0, help="length of each excerpt, from the clip's start (default: 8)")
    p.add_argument("--seed", type=int, default=0, help="seed of the clip draw (default: 0)")
    p.add_argument("--max-trials", type=int, default=12, help="trials per part at most (default: 12)")
    p.add_argument("--parts", type=int, help="split into this many per-listener parts (default: from --max-trials)")
    p.add_argument("--plugin", action="append", default=[], help=(
        "a plugin the run loaded, named again (repeatable): path/to/file.py or package.module; "
        "listen loads none that a results folder names"))
    p.add_argument("--collect", nargs="+", type=Path, metavar="FILE", help="answer files to collect (.json)")
    p.add_argument("--key", type=Path, help="with --collect: the test's listening-key.json (default: found under RESULTS or ./results)")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        if args.collect:
            from nsbench.listen.collect import collect_command

            return collect_command(args.collect, args.key, args.results)
        if args.results is None:
            raise UserError("nsbench listen needs a results folder (e.g. results/demo) or --collect FILES")
        return build_command(args)
    except UserError as error:
        print(f"nsbench listen: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR


def build_command(args: argparse.Namespace) -> int:
    from nsbench.listen.build import Options, build

    if args.clips_per_cell < 1 or args.max_trials < 1 or (args.parts is not None and args.parts < 1) or args.seconds < 1:
        raise UserError("--clips-per-cell, --max-trials and --parts must be 1 or more, --seconds at least 1")
    built = build(args.results, args.output, Options(args.method, args.engine, args.clips_per_cell, args.seconds,
                                                      args.seed, args.max_trials, args.parts, args.plugin))
    lowered = {clip: db for clip, db in built.lowered.items() if db > 0.05}
    print(f"nsbench listen: a {built.method.upper()} test of {plural(built.clips, 'clip')} x {plural(len(built.conditions), 'condition')} "
          f"in {plural(built.parts, 'part')}: open {built.folder / 'index.html'} in a browser (no server needed)")
    print(f"  conditions: {', '.join(built.conditions)}")
    if lowered:
        print(f"  {len(lowered)} trial(s) lowered below -26 LUFS so no stimulus peaks above -1 dBFS "
              f"(most: {max(lowered.values()):.1f} dB)")
    print(f"  the key stays in {built.key}; send listeners the folder, one part each, in turn; "
          f"then: nsbench listen --collect answers-*.json")
    return 0
