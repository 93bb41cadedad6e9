"""The run: from the parsed flags to each engine's records.

- config: the flags parsed once (RunConfig, frozen; the parser holds the defaults)
- plan: what the run will do, decided once (RunPlan, frozen)
- session: the run under way (plan, writer, executor) and RunState, the little that changes
- loop: the run's top, each engine in turn, then the files and the summary
- engine_turn: one engine's turn (clips logged as they come, the lag pass, its summary)
- runner: one engine over its clips (cache first, then the executor); engine_run: its records
- clips: one clip (load, produce, checks on the output); scoring: its scores and flags
- executors, dask_executor: where clips run; streaming: --block-size; conditions: --condition
"""
