"""One run under way: its frozen plan, the writer of its files, where its
clips run, and the little that changes as it goes (``RunState``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nsbench.run.engine_run import EngineHolder
from nsbench.run.interrupts import Interrupted
from nsbench.session.plan import RunPlan
from nsbench.run.runner import Executor
from nsbench.report.writer import ResultsWriter
from nsbench.plugins.specs import EngineSpec


@dataclass
class RunState:
    """What changes while the run goes, and only that: the cache warnings
    already printed (each is said once per run), and the engine built ahead
    for the next turn while this one's clips run in workers
    (nsbench.session.engine_turn.build_next_engine)."""

    warned: set[str] = field(default_factory=set)
    built_ahead: dict[str, EngineHolder] = field(default_factory=dict)

    def take_built(self, engine: EngineSpec) -> EngineHolder | None:
        return self.built_ahead.pop(engine.name, None)

    def discard_built(self) -> None:
        """Closes what was built ahead for an engine that did not run."""
        for holder in self.built_ahead.values():
            holder.discard()
        self.built_ahead.clear()


@dataclass(frozen=True)
class Run:
    plan: RunPlan
    writer: ResultsWriter
    executor: Executor | None  # how clips run (nsbench.run.executors.executor_for); None: here
    state: RunState = field(default_factory=RunState)


@dataclass
class Stopped:
    """An interrupt during an engine, and how far that engine got; between
    two engines, the next one, with no clip done; after the last, None."""

    signal: Interrupted
    engine: EngineSpec | None
    done: int
    planned: int
