"""The connection to a PostgreSQL server: told by its class, or opened for the CLI from a
``postgresql://`` URI (empty: libpq's environment variables, PGHOST, PGDATABASE, ...)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ...errors import EngineError, InputError


def is_connection(con: Any) -> bool:
    """Whether ``con`` is a psycopg (3) connection (told by its class: psycopg is an extra)."""
    return type(con).__module__.startswith("psycopg") and hasattr(con, "info") and hasattr(con, "adapters")


@contextlib.contextmanager
def connect(db: str, *, read_only: bool = False, master: str | None = None,
            missing_ok: bool = False) -> Iterator[Any]:
    """The CLI's connection to the server ``db`` names (a ``postgresql://`` URI or a libpq
    ``key=value`` string; ``:memory:``, the CLI's default, means libpq's environment
    variables). Commands that only read write nothing but the session's TEMP tables (a
    read-only transaction refuses even those, so the session is not made read-only). Closed
    at the end. ``missing_ok`` changes nothing: a server's database exists or is refused."""
    if master:
        raise InputError("--spark-master needs --engine spark")
    try:
        import psycopg
    except ImportError as err:
        raise EngineError("--engine postgres needs psycopg: pip install 'anon-duck[postgres]'") from err
    conninfo = "" if db == ":memory:" else db
    try:
        con = psycopg.connect(conninfo)
    except psycopg.Error as err:
        raise InputError(f"--db {db}: cannot connect to PostgreSQL (nothing was run): {str(err).strip()}") from err
    with con:
        yield con
