"""The run's configuration: the command line parsed once into a frozen record.

The argparse Namespace stops at the CLI. Everything after it reads a
RunConfig: the run's plan (nsbench.session.plan), the results writer, the
executors. Every plugin gets only its own plugin's flags (PLUGIN_API 4): an
engine (``engine_options``), a metric (``plugin_flags``), a dataset
(``dataset_options``: with the data folder).

Below both the run and the report, which read it alike; so are ``Blocks``,
what ``--block-size``/``--block-ms`` ask (streamed by nsbench.run.streaming,
described by nsbench.report.streaming_summary).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from nsbench.plugins.errors import UserError
from nsbench.store import eviction


@dataclass(frozen=True)
class RunConfig:
    """The flags as parsed. No field has a default: the parser's defaults
    (nsbench.cli.build_parser) are the only ones, so the two cannot disagree;
    ``from_args`` is how a RunConfig is made."""

    dataset: str | None  # --dataset; None: the registry's default (nsbench.session.plan.dataset_of)
    data_folder: str | None
    engines: tuple[str, ...]  # --engine, in order; empty: every available default engine
    metrics: tuple[str, ...]  # --metric; empty: every available default metric
    limit: int | None
    conditions: tuple[str, ...]  # --condition, as typed (nsbench.run.conditions resolves them)
    results_folder: Path
    output_folder: str | None
    jobs: int
    clip_timeout: float  # --clip-timeout, seconds (nsbench.run.clip_timeout); 0: no bound
    executor: str
    scheduler: str | None
    seeds: tuple[int, ...]  # --seeds; empty: seeded engines run once, unseeded
    quiet: bool
    verbose: bool  # report.md printed at the end
    use_cache: bool  # not --no-cache
    rerun: bool
    align_constant_lag: bool
    compare: str | None
    compare_tolerance: tuple[str, ...]
    voice_drop_db: float
    plots: bool
    html: bool
    # Each plugin's flags, by plugin name: what its engines, datasets and metrics receive.
    plugin_options: Mapping[str, Mapping[str, Any]]
    # The flags the command line gave (option name -> flag, nsbench.flags.FlagParser),
    # whatever their values: what nsbench.run.flag_use checks the run takes.
    given_flags: Mapping[str, str]
    argv: tuple[str, ...]  # as typed, for the provenance (secrets masked there)
    block_size: int | None  # --block-size (nsbench.run.streaming)
    block_ms: float | None  # --block-ms
    rank_categories: tuple[str, ...]  # --rank-category, as typed (nsbench.report.run_ranking parses them)
    rank_ties: str  # --rank-ties
    rank_decimals: int | None  # --rank-decimals
    # --cache-max-size, else $NSBENCH_CACHE_MAX_SIZE, in bytes (nsbench.store.eviction); None: no cap.
    cache_max_size: int | None

    @classmethod
    def from_args(cls, args: argparse.Namespace, argv: list[str]) -> RunConfig:
        flags = vars(args)
        plugin_options = {
            plugin: MappingProxyType({name: flags[name] for name in sorted(names)})
            for plugin, names in args.plugin_options.items()
        }
        return cls(
            dataset=args.dataset, data_folder=args.data_folder, engines=tuple(args.engine), metrics=tuple(args.metric),
            limit=args.limit, conditions=tuple(args.condition), results_folder=Path(args.results_folder), output_folder=args.output_folder, jobs=args.jobs,
            clip_timeout=args.clip_timeout,
            executor=args.executor, scheduler=args.scheduler, seeds=tuple(args.seeds or ()), quiet=args.quiet, verbose=args.verbose,
            use_cache=not args.no_cache, rerun=args.rerun, align_constant_lag=args.align_constant_lag,
            compare=args.compare, compare_tolerance=tuple(args.compare_tolerance), voice_drop_db=args.voice_drop_db,
            plots=not args.no_plots, html=not args.no_html, plugin_options=MappingProxyType(plugin_options),
            given_flags=MappingProxyType(dict(args.given_flags)),
            argv=tuple(argv),
            block_size=args.block_size, block_ms=args.block_ms,
            rank_categories=tuple(args.rank_category), rank_ties=args.rank_ties, rank_decimals=args.rank_decimals,
            cache_max_size=cache_max_size(args.cache_max_size),
        )

    def engine_options(self, plugin: str) -> dict[str, Any]:
        """What an engine's factory receives from the command line: the flags
        its plugin added (the run adds ``seed``; a family, ``engine_argument``)."""
        return self.plugin_flags(plugin)

    def plugin_flags(self, plugin: str) -> dict[str, Any]:
        """The flags a plugin added (``--my-flag`` as ``my_flag``), and no other."""
        return dict(self.plugin_options.get(plugin, {}))

    def dataset_options(self, plugin: str) -> dict[str, Any]:
        """What a dataset's ``clips`` and ``describe`` receive: its plugin's
        flags and ``data_folder`` (--data-folder, None without it)."""
        return {**self.plugin_flags(plugin), "data_folder": self.data_folder}


@dataclass(frozen=True)
class Blocks:
    """--block-size N (samples at the clip's rate) or --block-ms: one of the two."""

    size: int | None = None
    ms: float | None = None

    def samples(self, sample_rate: int) -> int:
        return self.size if self.size else max(1, round(self.ms * sample_rate / 1000))

    @property
    def flag(self) -> str:
        return f"--block-size {self.size}" if self.size else f"--block-ms {self.ms:g}"


def blocks_from(args: Any) -> Blocks | None:
    """The run's blocks; None: whole clips. Raises UserError for a size below one sample."""
    if args.block_size is not None and args.block_size < 1:
        raise UserError(f"--block-size must be at least 1 sample, got {args.block_size}")
    if args.block_ms is not None and not args.block_ms > 0:
        raise UserError(f"--block-ms must be more than 0, got {args.block_ms:g}")
    if args.block_size is None and args.block_ms is None:
        return None
    return Blocks(args.block_size, args.block_ms)


def cache_max_size(flag: str | None) -> int | None:
    """The cache's cap in bytes (nsbench.store.eviction.max_size_setting); a bad
    $NSBENCH_CACHE_MAX_SIZE is the user's input: one line naming it (the flag's type checked the flag)."""
    try:
        return eviction.max_size_of(eviction.max_size_setting(flag))
    except ValueError as error:
        raise UserError(f"${eviction.MAX_SIZE_VARIABLE}: {error}") from None
