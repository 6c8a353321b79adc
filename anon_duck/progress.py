"""Progress of long loops on stderr: a one-line bar on a TTY, and otherwise (a log file, CI, a
job scheduler) a line now and then with the rate and an ETA, so a long run's position is
known without a terminal."""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


class TerminalProgress:
    """Callable ``(phase, done, total)``; redraws at most 10 times a second."""

    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self._last = 0.0

    @classmethod
    def if_tty(cls) -> "TerminalProgress | None":
        return cls() if sys.stderr.isatty() else None

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / total) if total else width
        self.stream.write(f"\r{phase:<24} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


class LogProgress:
    """Callable ``(phase, done, total)`` for a stream that is not a terminal: one line when a
    phase has run ``after`` seconds, then one every ``every`` seconds, and one when it ends
    (only if a line was written for it), each with the share done, the time spent and an ETA
    from the phase's rate so far. A phase that ends within ``after`` seconds writes nothing,
    so short runs keep their output as it was."""

    def __init__(self, stream: TextIO = sys.stderr, *, every: float = 30.0, after: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.every, self.after, self.clock = stream, every, after, clock
        self._phase: str | None = None
        self._start = self._next = 0.0
        self._written = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = self.clock()
        if phase != self._phase:
            self._phase, self._start, self._next, self._written = phase, now, now + self.after, False
        if done >= total:
            if self._written:
                self._line(phase, done, total, now)
            self._phase = None
        elif now >= self._next:
            self._line(phase, done, total, now)
            self._next = now + self.every

    def _line(self, phase: str, done: int, total: int, now: float) -> None:
        spent = now - self._start
        share = f"{done}/{total} ({100 * done / total:.0f}%)" if total else f"{done}"
        if done >= total:
            tail = "done"
        elif done > 0:
            tail = f"ETA {_duration(spent * (total - done) / done)}"
        else:
            tail = "ETA unknown"
        self.stream.write(f"{phase}: {share}, {_duration(spent)} elapsed, {tail}\n")
        self.stream.flush()
        self._written = True


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def for_stderr() -> "TerminalProgress | LogProgress":
    """The CLI's progress: a bar on a terminal, timed lines otherwise."""
    return TerminalProgress() if sys.stderr.isatty() else LogProgress()
