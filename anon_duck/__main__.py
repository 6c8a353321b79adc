"""``anon-duck`` and ``python -m anon_duck``: the CLI, with Ctrl-C during start-up held.

Importing the CLI loads DuckDB, numpy and the methods, about a second of start-up. A Ctrl-C in
that second used to end the process by the signal (or abort it inside DuckDB's extension
import) rather than as the CLI's interrupt: it is held until the imports are done, then
reported as every other interrupt is, "interrupted; nothing was published" and exit 130."""
from __future__ import annotations

import sys
from types import ModuleType
from typing import Sequence

from . import interrupts

INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    with interrupts.held() as held:
        cli = _import_cli()
    if held:
        print("anon-duck: interrupted; nothing was published", file=sys.stderr)
        return INTERRUPTED
    return cli.main(argv)


def _import_cli() -> ModuleType:
    from . import cli
    return cli


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
