"""Small programs nsbench runs as subprocesses (``python -m nsbench.tools.NAME``)."""
