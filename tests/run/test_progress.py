"""Progress on stderr (nsbench.run.progress): lines on a pipe, a bar on a terminal."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

from nsbench.run.progress import NoProgress, PlainProgress, engine_progress


def test_plain_progress_prints_a_line_per_interval_and_one_at_the_end():
    now = [0.0]
    stream = io.StringIO()
    progress = PlainProgress(10, "speex", stream, interval=10.0, clock=lambda: now[0])
    for _ in range(4):
        now[0] += 3.0  # 4 clips in 12 s: one line, after the 10 s mark
        progress.update()
    for _ in range(6):
        now[0] += 1.0
        progress.update()
    progress.close()
    progress.close()  # once only
    assert stream.getvalue().splitlines() == [
        "nsbench: speex: 4/10 clips, 0.33 clips/s, ETA 18 s",
        "nsbench: speex: 10/10 clips, 0.56 clips/s, done in 18.0 s",
    ]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_rate_and_eta_and_a_pipe_gets_lines():
    bar = engine_progress(5, "speex", quiet=False, stream=Terminal())
    assert isinstance(bar, tqdm) and not bar.disable
    bar.update(2)
    shown = str(bar)
    bar.close()
    assert "speex" in shown and "2/5" in shown and "clip/s" in shown and "<" in shown  # elapsed<remaining
    assert isinstance(engine_progress(5, "speex", quiet=False, stream=io.StringIO()), PlainProgress)
    quiet = engine_progress(5, "speex", quiet=True, stream=Terminal())
    assert isinstance(quiet, NoProgress)


def test_quiet_and_logged_runs_do_not_import_tqdm():
    """Only a bar on a terminal needs tqdm (~35 ms of start-up); messages go
    through progress.say, which uses tqdm.write only when a bar may be drawn."""
    code = (
        "import io, sys\n"
        "from nsbench.run.progress import engine_progress, say\n"
        "engine_progress(3, 'speex', quiet=True).update()\n"
        "engine_progress(3, 'speex', quiet=False, stream=io.StringIO()).close()\n"
        "say('nsbench: a message')\n"
        "import nsbench.cli\n"
        "print('tqdm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "False" and done.stderr == "nsbench: a message\n"
