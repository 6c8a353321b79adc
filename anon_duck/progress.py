"""Progress of long loops: a one-line bar on a TTY, nothing otherwise (CI logs stay clean)."""
from __future__ import annotations

import sys
import time


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
