"""A child process for the interrupt tests: ``python tests/interrupt_at.py STAGE DELAY ARGS...``
runs ``anon-duck ARGS...`` (the console script's entry, anon_duck/__main__.py) and sends
itself SIGINT at a named point of the run, as a user's Ctrl-C would arrive:

- ``import``: while the CLI's modules are being imported (start-up);
- any other STAGE: DELAY seconds into the first statement whose stage name starts with STAGE
  (0: before it starts), on whichever engine the run uses.

Prints ``interrupting at <stage>`` to stderr when it fires, so a test knows the point was
reached."""
from __future__ import annotations

import os
import signal
import sys
import threading

from anon_duck import __main__ as entry


def _interrupt(delay: float) -> None:
    if delay > 0:
        threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)).start()
    else:
        os.kill(os.getpid(), signal.SIGINT)


def _at_stage(cls: type, prefix: str, delay: float, fired: list[str]) -> None:
    real = cls.run, cls.rows, cls.fetch

    def wrap(method):
        def wrapped(self, stage, sql, params=None):
            if stage.startswith(prefix) and not fired:
                fired.append(stage)
                print(f"interrupting at {stage}", file=sys.stderr, flush=True)
                _interrupt(delay)
            return method(self, stage, sql, params)
        return wrapped
    cls.run, cls.rows, cls.fetch = (wrap(m) for m in real)


def main() -> int:
    stage, delay, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    if stage == "import":
        real_import = entry._import_cli

        def interrupted_import():
            print("interrupting at import", file=sys.stderr, flush=True)
            _interrupt(0)
            return real_import()
        entry._import_cli = interrupted_import
        return entry.main(argv)
    fired: list[str] = []
    from anon_duck.backend.duckdb import DuckDBBackend
    _at_stage(DuckDBBackend, stage, delay, fired)
    if "spark" in argv:
        from anon_duck.backend.spark import SparkBackend
        _at_stage(SparkBackend, stage, delay, fired)
    return entry.main(argv)


if __name__ == "__main__":
    sys.exit(main())
