"""Shared test fixtures: paths, a fresh in-memory DuckDB per test, job loading."""
from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from anon_duck.backend.duckdb import DuckDBBackend

from anon_duck.job import Job, load_job

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
JOBS = FIXTURES / "jobs"
# Every fixture job, but artuc_informs_uc2..uc9: they differ from uc1 only in their utility
# constraints (the same code path, 10-15 s each), and uc1 stands for them
ALL_JOBS = [p for p in sorted(JOBS.glob("*.toml")) if not p.name.startswith("artuc_informs_uc") or
            p.name == "artuc_informs_uc1.toml"]


@pytest.fixture
def con():
    c = duckdb.connect()
    yield c
    c.close()


@pytest.fixture
def job_file():
    def load(name: str) -> Job:
        return load_job(JOBS / name)
    return load


def table_fingerprint(con: duckdb.DuckDBPyConnection, table: str) -> tuple:
    """Row count and an order-independent checksum of every row: proves a table unchanged."""
    from anon_duck.sqlrender import render
    return con.execute(render("util/fingerprint.sql.j2", relation=(table,))).fetchone()


def user_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every table and view this connection sees: the database's and its own TEMP tables (where
    a run keeps its scratch), so "nothing left behind" checks can see leftover scratch."""
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name IN (current_database(), 'temp') UNION ALL "
        "SELECT view_name FROM duckdb_views() WHERE database_name IN (current_database(), 'temp') AND NOT internal"
    ).fetchall()}


@pytest.fixture
def backend():
    b = DuckDBBackend(duckdb.connect())
    yield b
    b.con.close()


def put(backend: DuckDBBackend, name, columns: dict[str, list]) -> None:
    """Create a table from Python lists (strings become VARCHAR, None becomes NULL)."""
    arrays = {}
    for c, values in columns.items():
        kinds = {type(v) for v in values if v is not None}
        arrays[c] = np.array(values, dtype=object if (str in kinds or None in values) else None)
    backend.write_table(name, arrays)


@pytest.fixture(scope="session")
def postgres_server():
    """The URI of a throwaway PostgreSQL server for the whole session (tests/pg_server.py);
    a test that needs it is skipped, saying why, only when none can start."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[postgres]'")
    from pg_server import start
    with start() as (uri, how):
        if uri is None:
            pytest.skip(f"no PostgreSQL server could start: {how}")
        yield uri


@pytest.fixture
def pg(postgres_server, request):
    """A psycopg connection to a fresh database of its own (dropped at the end)."""
    import psycopg
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:55]
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 LC_COLLATE "C.UTF-8" LC_CTYPE "C.UTF-8"')
    uri = postgres_server.replace("/postgres?", f"/{name}?")
    c = psycopg.connect(uri)
    yield c
    c.close()
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
