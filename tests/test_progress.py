"""Progress on stderr when it is not a terminal (issue #31 item 3): timed lines with an ETA."""
from __future__ import annotations

import io
import subprocess
import sys

from anon_duck.progress import LogProgress, TerminalProgress, for_stderr


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_log_progress_writes_a_line_every_interval_with_an_eta():
    out, clock = io.StringIO(), Clock()
    p = LogProgress(out, every=30, after=10, clock=clock)
    p("MDAV'", 0, 1000)
    clock.now += 5
    p("MDAV'", 50, 1000)                      # before `after`: nothing yet
    assert out.getvalue() == ""
    clock.now += 5
    p("MDAV'", 100, 1000)                     # 10 s for 100 of 1000: 90 s to go
    clock.now += 10
    p("MDAV'", 150, 1000)                     # within `every` of the last line: nothing
    clock.now += 20
    p("MDAV'", 400, 1000)                     # 40 s for 400: 60 s to go
    clock.now += 3
    p("MDAV'", 1000, 1000)
    assert out.getvalue().splitlines() == [
        "MDAV': 100/1000 (10%), 10 s elapsed, ETA 1 min 30 s",
        "MDAV': 400/1000 (40%), 40 s elapsed, ETA 1 min 00 s",
        "MDAV': 1000/1000 (100%), 43 s elapsed, done"]


def test_a_short_phase_writes_nothing_and_a_new_phase_starts_its_own_clock():
    out, clock = io.StringIO(), Clock()
    p = LogProgress(out, every=30, after=10, clock=clock)
    for done in range(0, 11):
        p("partition: fragments", done, 10)
        clock.now += 0.5
    assert out.getvalue() == ""
    p("MDAV'", 0, 10)
    clock.now += 7200
    p("MDAV'", 1, 10)
    assert out.getvalue() == "MDAV': 1/10 (10%), 2 h 00 min elapsed, ETA 18 h 00 min\n"


def test_the_cli_writes_progress_lines_when_stderr_is_a_pipe():
    assert isinstance(for_stderr(), LogProgress)      # pytest captures stderr: not a terminal
    code = "import anon_duck.progress as p, sys; print(type(p.for_stderr()).__name__)"
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert got.strip() == "LogProgress"
    assert TerminalProgress.if_tty() is None
