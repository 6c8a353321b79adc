"""Ctrl-C held for a moment: SIGINT inside :func:`held` is recorded instead of raised, and the
caller decides what it means once the block is done. Start-up (anon_duck/__main__.py: the
imports) and a call's cleanup (session.py: scratch tables, the caller's settings) use it, so
an interrupt never lands half-way through either."""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


@contextlib.contextmanager
def held() -> Iterator[list[int]]:
    """SIGINT inside the block is appended to the yielded list, not raised; the handler that
    was in place (Python's, or PySpark's) comes back after. Only the main thread receives
    signals and may set a handler: elsewhere the block runs as it is."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)
