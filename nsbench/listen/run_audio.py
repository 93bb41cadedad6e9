"""The audio of a finished run, read back after it: each clip's noisy input and
clean reference from its dataset, each engine's output from the cache (or from
``--output-folder`` where the run kept them there).

It takes the run's own path: the command line recorded in the provenance is
parsed again by the CLI's parser, the clips come from the dataset adapter as
the run listed them, and an output's cache key is made by the run's own
``cache_identity`` (nsbench.session.plan), as the run made it. What the report's
listening grid receives while the run is on (a ``read_output(engine, run)``
callback and the clip sources) is what this gives afterwards.

A results folder is data: nothing it names is imported or run. The plugins
the run loaded are the ones the user names again (``--plugin``); those the
command line records are only compared with them.
"""
from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nsbench.plugins.errors import ClipError, UserError
from nsbench.plugins.records import ClipSource
from nsbench.report.layout import View, read_view

Output = tuple[np.ndarray, int]


@dataclass
class FinishedRun:
    """One results folder: its engines' JSON, their clip lines, and the ways to their audio."""

    folder: Path
    results: list[dict[str, Any]]
    records: dict[str, list[dict[str, Any]]]  # engine -> its .clips.jsonl lines
    sources: dict[str, ClipSource] = field(default_factory=dict)
    read_output: Callable[[str, str], Output | None] = lambda engine, run: None
    command: str = ""  # the run's command line, to say what provides a missing output
    view: View | None = None  # where the specs place engines (nsbench.report.layout): reopen reads the plugins'

    @property
    def dataset(self) -> str:
        return str(self.results[0].get("dataset", "")) if self.results else ""


def read_results(folder: Path) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The engines' JSON files (those with an "engine" key) and their .clips.jsonl lines."""
    if not folder.is_dir():
        raise UserError(f"{folder}: no such results folder")
    results, records = [], {}
    for path in sorted(folder.glob("*.json")):
        try:
            payload = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise UserError(f"{path}: not a readable results file ({error})") from None
        if not (isinstance(payload, dict) and "engine" in payload and "provenance" in payload):
            continue  # another file of the run's (the listening key, say)
        if not isinstance(payload["engine"], str) or not isinstance(payload["provenance"], dict):
            say(f"{path}: its engine or provenance is not as nsbench writes them; left out")
            continue
        results.append(payload)
        records[payload["engine"]] = read_records(path.with_name(f"{path.stem}.clips.jsonl"))
    if not results:
        raise UserError(f"{folder}: no engine results (<engine>.json) here; run python benchmark.py first")
    return results, records


def read_records(path: Path) -> list[dict[str, Any]]:
    """An engine's clip lines; one that is not a clip's record (a log cut short) is named and skipped."""
    if not path.is_file():
        return []
    records = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and isinstance(record.get("clip_id"), str):
            records.append(record)
        else:
            say(f"{path}:{number}: not a clip's record (cut short?); skipped")
    return records


def say(line: str) -> None:
    print(f"nsbench listen: {line}", file=sys.stderr)


def reopen(folder: Path, plugins: Sequence[str] = ()) -> FinishedRun:
    """The run behind ``folder``, with its clip sources and an output reader.
    ``plugins``: the ``--plugin`` files or modules the user names, which must be the run's."""
    results, records = read_results(folder)
    argv = recorded_command(results[0], folder)
    # The command that fills the cache with this run's outputs: the run's own, minus what keeps them out of it.
    refill = [arg for arg in argv if arg not in ("--no-cache", "--rerun")]
    run = FinishedRun(folder, results, records, command="python benchmark.py " + shlex.join(refill))
    from nsbench.flags import RecordedCommandLine, named_plugins, parse_recorded  # the run's own parser, only when a test is built
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.config import RunConfig
    from nsbench.plugins.registry import build_registry

    try:
        recorded = named_plugins(argv, RecordedCommandLine)
    except UserError as error:
        raise no_longer_parses(run, error) from None
    check_plugins(recorded, plugins, folder)
    manager = get_plugin_manager(plugins)
    try:
        args = parse_recorded(argv, manager)
    except UserError as error:
        raise no_longer_parses(run, error) from None
    config = RunConfig.from_args(args, argv)
    registry = build_registry(manager)
    run.sources = run_sources(config, registry)
    run.read_output = output_reader(config, registry, results)
    run.view = read_view(registry)
    return run


def no_longer_parses(run: FinishedRun, error: UserError) -> UserError:
    return UserError(f"{run.folder}: the recorded command line no longer parses ({error}): {run.command}")


def recorded_command(result: Mapping[str, Any], folder: Path) -> list[str]:
    """The flags of the run's command line (provenance.command_line without the program)."""
    command = result["provenance"].get("command_line")
    if not isinstance(command, list) or not command or not all(isinstance(word, str) for word in command):
        raise UserError(f"{folder}: {result['engine']}'s provenance.command_line is not a command line (a list of words)")
    return command[1:]


def check_plugins(recorded: Sequence[str], given: Sequence[str], folder: Path) -> None:
    """Each plugin the run loaded is named now, and each named now the run loaded (alike: the same module,
    or a file of the same name, which the run may have named from another folder). listen loads none that
    a results folder names: what it needs of them, the user names."""
    missing = [plugin for plugin in recorded if not any(same_plugin(plugin, mine) for mine in given)]
    if missing:
        again = " ".join(f"--plugin {shlex.quote(plugin)}" for plugin in missing)
        raise UserError(f"{folder}: the run loaded {again}; listen loads no plugin a results folder names: "
                        f"name what you trust yourself (nsbench listen {folder} {again})")
    for mine in given:
        if not any(same_plugin(plugin, mine) for plugin in recorded):
            raise UserError(f"--plugin {mine}: the run in {folder} did not load it "
                            f"(it loaded {', '.join(recorded) or 'no plugin'})")


def same_plugin(recorded: str, given: str) -> bool:
    if recorded == given:
        return True
    return recorded.endswith(".py") and given.endswith(".py") and Path(recorded).name == Path(given).name


def run_sources(config: Any, registry: Any) -> dict[str, ClipSource]:
    """The clips as the run listed them (its --limit and --condition included)."""
    from nsbench.store import cache
    from nsbench.run import conditions
    from nsbench.session.plan import dataset_of

    dataset = dataset_of(config, registry)
    sources = dataset.clips(config.dataset_options(registry.datasets.get(dataset.name).plugin))[: config.limit]
    chosen = conditions.resolve(list(config.conditions), registry.conditions)
    if chosen:
        sources = conditions.conditioned_sources(sources, chosen, (str(cache.cache_root()), True, config.cache_max_size))
    return {source.clip_id: source for source in sources}


def output_reader(config: Any, registry: Any, results: list[dict[str, Any]]) -> Callable[[str, str], Output | None]:
    """``read(engine, run_id)``: the output kept in --output-folder, else the cache's, else None."""
    from nsbench.store import cache
    from nsbench.store.keys import Identity
    from nsbench.report.listening_grid import read_excerpt
    from nsbench.report.model import file_stem
    from nsbench.session.plan import cache_identity

    store = cache.Cache(cache.cache_root())
    identities: dict[tuple[str, Any], str] = {}

    def identity(engine: str, seed: Any) -> str | None:
        if (engine, seed) not in identities:
            try:
                registered = registry.engines.get(engine)
                options = {**config.engine_options(registered.plugin), "seed": seed}
                identities[engine, seed] = cache_identity(registered.spec, options, registry, {}).engine
            except (UserError, KeyError, AttributeError):
                identities[engine, seed] = ""
        return identities[engine, seed] or None

    def read(engine: str, run_id: str, clip: Any = None, seed: Any = None, rate: int = 0) -> Output | None:
        if config.output_folder:
            kept = read_excerpt(Path(config.output_folder) / file_stem(engine) / f"{run_id}.wav")
            if kept is not None:
                return kept
        key = identity(engine, seed)
        if clip is None or key is None:
            return None
        cached = store.get_output(Identity(key).output_key(clip))
        return (cached.audio, clip.sample_rate) if cached is not None else None

    return read


def load_clip(sources: Mapping[str, ClipSource], clip_id: str) -> Any:
    """The loaded clip, or None where the dataset no longer has it."""
    source = sources.get(clip_id)
    try:
        return source.load() if source else None
    except ClipError:
        return None
