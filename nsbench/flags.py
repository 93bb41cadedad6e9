"""The command line's flags: the parser (the harness's own flags, then each
plugin's), read in two passes because ``--plugin`` may add flags.

Kept apart from nsbench.cli so that what re-reads a recorded command line
(nsbench.listen) parses it as a run did, without importing the CLI, and without
loading the plugins it names (``parse_recorded``).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Iterable, NoReturn

from nsbench.listing import LIST_CHOICES
from nsbench.plugins.errors import UserError
from nsbench.plugins.manager import get_plugin_manager
from nsbench.audio import checks
from nsbench.report.writer import add_arguments as add_report_arguments
from nsbench.report.run_ranking import add_arguments as add_ranking_arguments
from nsbench.run import clip_timeout, streaming
from nsbench.session import engine_turn
from nsbench.store import eviction


def parse_flags(argv: list[str], plugins: Iterable[object] = ()) -> tuple[Any, argparse.Namespace]:
    """The plugin manager (built-ins, entry points, ``plugins``, ``--plugin`` files) and the parsed flags."""
    manager = get_plugin_manager(named_plugins(argv), plugins=plugins)
    return manager, build_parser(manager).parse_args(argv)


class FlagParser(argparse.ArgumentParser):
    """An ArgumentParser whose result also says which flags the command line
    gave, whatever their values (``given_flags``: option name -> flag): a
    dataset's or an engine's flag that nothing in the run takes is refused
    (nsbench.run.flag_use), also when typed with its default value."""

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        parsed, extras = super().parse_known_args(args, namespace)
        parsed.given_flags = self.given_flags(args)
        return parsed, extras

    def given_flags(self, args: Any) -> dict[str, str]:
        # Parsed again from a namespace where every option is None already:
        # argparse then fills in no default, so what is set was typed
        # (append and count actions start from None as from nothing).
        blank = argparse.Namespace(**{action.dest: None for action in self._actions})
        typed, _ = super().parse_known_args(args, blank)
        return {action.dest: max(action.option_strings, key=len) for action in self._actions
                if action.option_strings and getattr(typed, action.dest, None) is not None}


class RecordedCommandLine(FlagParser):
    """The parser of a command line read back from a results folder: no help
    flag, nothing printed, and what does not parse a UserError, not an exit."""

    def __init__(self, **options: Any):
        super().__init__(**{**options, "add_help": False})

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


class OneLineErrors(FlagParser):
    """A bad flag is one line and a hint, not the whole usage before it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help lists the flags)\n")


def parse_recorded(argv: list[str], manager) -> argparse.Namespace:
    """A run's recorded command line parsed with ``manager``'s flags (the
    plugins the user names now): its own ``--plugin`` values stay text, never
    loaded, for a results folder is data (nsbench.listen)."""
    return build_parser(manager, RecordedCommandLine).parse_args(argv)


def named_plugins(argv: list[str], parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> list[str]:
    """The ``--plugin`` values of a command line, read as a run reads them; nothing is loaded here."""
    early = parser_class(add_help=False)
    early.add_argument("--plugin", action="append", default=[])
    return early.parse_known_args(argv)[0].plugin


def build_parser(manager, parser_class: type[argparse.ArgumentParser] | None = None) -> argparse.ArgumentParser:
    parser = (parser_class or OneLineErrors)(
        # "nsbench" when installed, "benchmark.py" from the checkout: the name the user typed.
        prog=Path(sys.argv[0]).name if sys.argv[0].endswith("benchmark.py") else "nsbench",
        description="Compare noise-suppression engines on a test set. Also: nsbench new-plugin NAME; nsbench listen RESULTS_FOLDER; nsbench rank TABLE.csv.",
    )
    parser.add_argument("--engine", action="append", default=[], help="engine to run (repeatable); default: all available")
    parser.add_argument("--dataset", help="dataset to run on (default: the built-in demo set, generated locally)")
    parser.add_argument("--data-folder", help="root folder of the dataset, where it needs one")
    parser.add_argument("--output-folder", help="save each engine's processed audio here")
    parser.add_argument("--results-folder", default="results", help="where result files go (default: results)")
    parser.add_argument("--metric", action="append", default=[], help="metric to compute, or a named set of them such as vbd-row (repeatable; --list metrics shows both); default: all available")
    parser.add_argument("--condition", action="append", default=[], metavar="NAME[+NAME...]",
                        help="run the set once per input condition (repeatable; a+b applies a, then b); "
                             "'none', the input as it is, is always added; --list conditions shows them")
    parser.add_argument("--limit", type=int, help="run only the first N clips (the demo set orders them to cover every cell early)")
    parser.add_argument("--plugin", action="append", default=[], help="load a plugin: path/to/file.py or package.module")
    parser.add_argument("--list", choices=LIST_CHOICES, help="list what is registered and exit")
    parser.add_argument(
        "--jobs", type=int, default=usable_cores(),
        help=f"worker processes for the clips (default: the {usable_cores()} usable cores; 1 runs serially, e.g. for a GPU model)",
    )
    parser.add_argument("--clip-timeout", type=seconds_argument, default=clip_timeout.DEFAULT_SECONDS, metavar="SECONDS",
                        help=f"seconds a clip may take (or {clip_timeout.LENGTH_FACTOR:g} times its length if longer) before "
                             f"its worker process is killed and the clip fails (default {clip_timeout.DEFAULT_SECONDS:g}); "
                             "with --jobs 1 the clips then run in one worker process; 0: no bound, and --jobs 1 runs here")
    parser.add_argument("--executor", choices=("local", "dask"), default="local",
                        help="local: --jobs worker processes here; dask: tasks on a Dask cluster (--scheduler, "
                             "or a local cluster of --jobs workers)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="with --executor dask: an existing scheduler, e.g. tcp://host:8786")
    parser.add_argument("--seeds", type=parse_seeds, help="run seeded engines once per seed: 0-9, or 0,3,7")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary at the end")
    parser.add_argument("--verbose", action="store_true", help="print the whole of report.md at the end, before the summary; "
                             "with --list, every cell whole instead of cut to the terminal's width (piped output is whole)")
    cache = parser.add_argument_group("cache (outputs and scores are kept by content, so a rerun or a resumed run recomputes only what is missing)")
    cache.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    cache.add_argument("--rerun", action="store_true", help="recompute everything, replacing what the cache holds")
    cache.add_argument("--clear-cache", action="store_true", help="empty the cache and exit (--list cache shows where and how big)")
    cache.add_argument("--cache-max-size", type=eviction.size_argument, metavar="SIZE",  # nsbench.store.eviction
                       help="cap the cache of outputs and scores, e.g. 2GB or 500MB: the least recently used go first "
                            f"(default: ${eviction.MAX_SIZE_VARIABLE}, else no cap)")
    # Each module that owns a behaviour defines its flags: the lag pass (the
    # session's engine turn), the voice-drop check, the reports, the ranking, the streaming.
    engine_turn.add_arguments(parser)
    checks.add_arguments(parser)
    add_report_arguments(parser)
    add_ranking_arguments(parser)
    streaming.add_arguments(parser)
    # The flags so far shape the run, not an engine's output: the cache keys
    # leave them out. Plugins' flags (an engine's options) go in.
    parser.set_defaults(harness_options=frozenset(action.dest for action in parser._actions))
    parser.set_defaults(plugin_options=add_plugin_arguments(manager, parser))
    return parser


def add_plugin_arguments(manager, parser: argparse.ArgumentParser) -> dict[str, frozenset[str]]:
    """Each plugin's flags, by plugin name: an engine, dataset or metric receives its own plugin's only."""
    added: dict[str, frozenset[str]] = {}
    for impl in manager.hook.add_arguments.get_hookimpls():
        before = {action.dest for action in parser._actions}
        impl.function(parser=parser)
        added[manager.get_name(impl.plugin)] = frozenset(action.dest for action in parser._actions) - before
    return added


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def seconds_argument(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds (0 or more), got {text!r}")
    return seconds


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            seeds += list(range(int(first), int(last or first) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 0-9 or 0,3,7, got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}")
    return seeds


