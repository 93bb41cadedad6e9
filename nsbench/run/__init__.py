"""Running engines over clips: records in, nothing written but the cache.
The run's top (its plan, the loop, each engine's turn) is nsbench.session,
which hands the records to nsbench.report; nothing here imports either.

- runner: one engine over its clips (cache first, then the executor); engine_run: its records
- clips: one clip (load, produce, checks on the output); scoring: its scores and flags
- executors, dask_executor: where clips run; streaming: --block-size; conditions: --condition
- flag_use: the plugin flags the run takes; interrupts, progress, clip_timeout: the run's edges
"""
