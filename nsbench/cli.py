"""``python benchmark.py``: parse the flags, then list (``--list``,
nsbench.listing), clear the cache, or hand a frozen RunConfig to the run
(nsbench.session.loop.benchmark); and the three commands, ``new-plugin``, ``listen`` and ``rank``.

Flag names follow Picovoice's benchmark where it has them (``--engine``,
``--dataset``, ``--data-folder``, ``--output-folder``). ``main(argv)`` takes a
list so tests call the CLI directly (as museval does), and ``plugins``: plugin
objects registered for that call alone, on a fresh plugin manager (as pluggy's
and llm's tests do), so a test adds its plugin without patching anything.
"""
from __future__ import annotations

import sys
from typing import Iterable, Sequence

from nsbench.store import cache, eviction
from nsbench.run import malloc_tuning
from nsbench.config import RunConfig
from nsbench.run.interrupts import Interrupted, as_interrupted, signals_interrupt
from nsbench.session.loop import benchmark
from nsbench.flags import parse_flags
from nsbench.listing import list_text, list_width
from nsbench.plugins.registry import build_registry
from nsbench.plugins.errors import UserError

EXIT_USER_ERROR = 2


def main(argv: Sequence[str] | None = None, plugins: Iterable[object] = ()) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    malloc_tuning.keep_freed_memory()  # before any worker forks (nsbench.run.malloc_tuning says why)
    with signals_interrupt():
        try:
            return run_cli(argv, tuple(plugins))
        except UserError as error:
            print(f"nsbench: error: {error}", file=sys.stderr)
            return EXIT_USER_ERROR
        except (Interrupted, KeyboardInterrupt) as error:
            stop = as_interrupted(error)
            if not getattr(stop, "reported", False):  # before or between engines: nothing partial to save
                print(f"nsbench: interrupted by {stop.name}", file=sys.stderr)
            return stop.exit_code


def run_cli(argv: list[str], plugins: tuple[object, ...] = ()) -> int:
    if argv[:1] == ["new-plugin"]:  # a command; anything else is the benchmark's flags
        from nsbench.plugins.scaffold import new_plugin

        return new_plugin(argv[1:])
    if argv[:1] == ["listen"]:  # a blind listening test from a results folder (nsbench.listen)
        from nsbench.listen import main as listen

        return listen(argv[1:])
    if argv[:1] == ["rank"]:  # rank a table of per-system means by URGENT's rule (nsbench.ranking)
        from nsbench.rank_command import main as rank

        return rank(argv[1:])
    manager, args = parse_flags(argv, plugins)
    registry = build_registry(manager)
    if args.clear_cache:
        print(cache.clear(cache.cache_root()))
        return 0
    if args.list == "cache":
        print(cache.usage_text(cache.cache_root(), eviction.max_size_setting(args.cache_max_size)))
        return 0
    if args.list:
        print(list_text(args.list, registry, manager, width=None if args.verbose else list_width()))
        return 0
    return benchmark(RunConfig.from_args(args, argv), registry)
