"""The session: one run from the parsed flags to its files, above both
``nsbench.run`` (which executes clips and returns records) and
``nsbench.report`` (functions from results to files and text).

- plan: what the run will do, decided once (RunPlan, frozen)
- state: the run under way (plan, writer, executor) and RunState, the little that changes
- loop: the run's top, each engine in turn, then the files and the summary
- engine_turn: one engine's turn (clips logged as they come, the lag pass, its summary)

docs/architecture.md walks one run through the layers.
"""
