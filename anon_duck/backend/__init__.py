"""Execution backends, and the one place where an engine is chosen.

Every engine is an :class:`~.base.Engine` in :data:`ENGINES`: :func:`backend_for` wraps what a
caller hands in (a ready :class:`~.base.Backend`, a DuckDB connection, a SparkSession, a psycopg connection), and
:func:`connect` opens an engine's connection from an engine name and ``--db`` for the CLI. No
module outside this package names a concrete backend (docs/ENGINES.md)."""
from __future__ import annotations

from typing import Any, ContextManager

from ..errors import EngineError, InputError
from . import duckdb as _duckdb
from . import duckdb_fragments as _duckdb_fragments
from . import postgres as _postgres
from . import spark as _spark
from .base import Backend, Engine, FragmentRunner

ENGINES: dict[str, Engine] = {
    "duckdb": Engine("duckdb", _duckdb.is_connection, _duckdb_fragments.backend, _duckdb.connect),
    "spark": Engine("spark", _spark.is_session, lambda con, job: _spark.SparkBackend(con), _spark.open_warehouse),
    "postgres": Engine("postgres", _postgres.is_connection, _postgres.backend, _postgres.connect),
}


def backend_for(con: Any, job: Any = None) -> Backend:
    """The backend of what the caller hands in: a :class:`Backend` as it is, or the backend of
    the engine whose connection ``con`` is (a DuckDB connection applies ``job``'s
    ``[settings]`` for the call; ``job`` None: none)."""
    for engine in ENGINES.values():
        if engine.accepts(con):
            return engine.backend(con, job)
    if isinstance(con, Backend):
        return con
    raise EngineError(f"a {type(con).__module__}.{type(con).__name__} is no connection anon_duck can run on: pass a "
                      f"connection of one of its engines ({', '.join(ENGINES)}) or a Backend")


def connect(engine: str, db: str, *, read_only: bool = False, master: str | None = None,
            missing_ok: bool = False) -> ContextManager[Any]:
    """A connection of engine ``engine`` to ``db`` (a DuckDB file, a Spark warehouse folder),
    opened read-only when the command only reads; closed (a session stopped) at the end.
    ``missing_ok``: a ``db`` that does not exist yet is an empty database, and is not created
    (commands that read only their input)."""
    if engine not in ENGINES:
        raise InputError(f"--engine {engine}: not an engine anon_duck knows ({', '.join(ENGINES)})")
    return ENGINES[engine].connect(db, read_only=read_only, master=master, missing_ok=missing_ok)


__all__ = ["Backend", "ENGINES", "Engine", "FragmentRunner", "backend_for", "connect"]
