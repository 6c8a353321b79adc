"""The PostgreSQL engine: the connection (:mod:`.session`), PostgreSQL as anon_duck writes it
(:mod:`.dialect`), statements (:mod:`.statements`), the backend (:mod:`.backend`) and values
(:mod:`.types`). docs/postgres.md."""
from typing import Any

from .backend import PostgresBackend
from .session import connect, is_connection


def backend(con: Any, job: Any) -> PostgresBackend:
    """The backend of a caller's connection; a job's ``[settings] threads`` bounds its Python stages."""
    return PostgresBackend(con, threads=job.settings.threads if job is not None else None)


__all__ = ["PostgresBackend", "backend", "connect", "is_connection"]
