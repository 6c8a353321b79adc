"""The PostgreSQL backend: the same templates, written once in DuckDB's dialect, run on a
PostgreSQL server through psycopg (docs/postgres.md).

Each statement is written for PostgreSQL by :mod:`.statements` (cached per statement text and
parameter types) and run with PostgreSQL's own positional parameters (psycopg's RawCursor).
Scratch tables are the session's TEMP tables; a release is written into the connection's
current schema. Outside a publication every statement runs on its own (autocommit), so the
caller's connection is left with no transaction open; the caller's autocommit setting is given
back after each statement."""
from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Iterator, Mapping, Sequence

import duckdb
import numpy as np

from ...csvoptions import CsvOptions
from ...errors import AnonDuckError, InputError
from ...sqlrender import render
from ..duckdb import DuckDBBackend
from .statements import SCRATCH_CATALOG, resolved, to_postgres
from .types import arrow_type, column, duckdb_type, numpy_type, param_type, plain


class PostgresBackend:
    """Wraps a psycopg (3) connection passed in by the caller. ``trace`` collects (stage,
    seconds) pairs as the DuckDB backend's does."""

    engine = "postgres"

    def __init__(self, con: Any, *, threads: int | None = None) -> None:
        self.con = con
        self.trace: list[tuple[str, float]] = []
        self._threads = threads
        self._publishing = False

    # -- the session ---------------------------------------------------------------------
    def restore_settings(self) -> None:
        """Nothing to give back: no session setting is changed, and autocommit is restored
        after each statement."""

    def threads(self) -> int:
        """The threads of a Python stage: the job's ``[settings] threads``, else this machine's cores."""
        return self._threads or os.cpu_count() or 1

    def sort_budget(self) -> None:
        """PostgreSQL's sort spills beyond work_mem: a release table is published in one statement."""
        return None

    def in_transaction(self) -> bool:
        """Whether the caller holds a transaction open on this connection (psycopg knows
        without asking the server)."""
        from psycopg.pq import TransactionStatus

        return self.con.info.transaction_status != TransactionStatus.IDLE

    def writable(self, schema: str = "main") -> bool:
        """Whether a release can be written: the session may write, and the role may CREATE in
        the schema it publishes into (``main``: the current one; one not there yet: the role may
        create schemas in the database). A role without CREATE is refused here, before any work,
        with the privilege named. Inside the caller's open transaction nothing is asked: the
        call refuses that transaction next (in_transaction), and a statement would join it."""
        if self.in_transaction():
            return True
        name, present, can_create, writable = self.rows("database: privileges", render("engines/postgres/privileges.sql.j2"),
                                               {"schema": schema})[0]
        if writable and not can_create and present:
            raise InputError(f"PostgreSQL schema {name!r}: the role {self.con.info.user!r} lacks the CREATE "
                             f"privilege on it, which publishing a release needs (GRANT CREATE ON SCHEMA "
                             f"{name} TO {self.con.info.user}); nothing was run")
        if writable and not can_create:
            raise InputError(f"PostgreSQL schema {name!r} does not exist and the role {self.con.info.user!r} lacks the "
                             f"CREATE privilege on database {self.con.info.dbname!r}, which creating it needs (create "
                             f"the schema and GRANT CREATE ON SCHEMA {name} TO {self.con.info.user}); nothing was run")
        return bool(writable)

    # -- statements ----------------------------------------------------------------------
    @contextlib.contextmanager
    def _own_statement(self) -> Iterator[None]:
        """Outside a publication, one statement on its own: autocommit for its time, the
        caller's setting back after it."""
        if self._publishing or self.con.autocommit:
            yield
            return
        self.con.autocommit = True
        try:
            yield
        finally:
            self.con.autocommit = False

    def _cursor(self, stage: str, sql: str, params: Mapping[str, Any] | None) -> Any:
        """Run every statement of ``sql``; the cursor of the last one."""
        import psycopg

        values = {k: plain(v) for k, v in (params or {}).items()}
        types = tuple(sorted((k, t) for k, v in values.items() if (t := param_type(v)) is not None))
        t0 = time.perf_counter()
        cur = psycopg.RawCursor(self.con)
        try:
            with self._own_statement():
                for statement in to_postgres(sql, types):
                    statement = resolved(statement, self._table_columns)
                    cur.execute(statement.text, [values[n] for n in statement.names] or None)
        except psycopg.errors.QueryCanceled as err:
            raise KeyboardInterrupt(f"{stage}: interrupted") from err
        except psycopg.Error as err:
            raise AnonDuckError(f"{stage}: {str(err).strip()}") from err
        self.trace.append((stage, time.perf_counter() - t0))
        return cur

    def run(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> None:
        self._cursor(stage, sql, params)

    def rows(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        cur = self._cursor(stage, sql, params)
        return [tuple(plain(v) for v in row) for row in cur.fetchall()]

    def scalar(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        rows = self.rows(stage, sql, params)
        return rows[0][0] if rows else None

    def fetch(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        cur = self._cursor(stage, sql, params)
        rows = cur.fetchall()
        kinds = self._kinds(cur)
        return {name: column([r[i] for r in rows], kind) for i, (name, kind) in enumerate(kinds.items())}

    def _kinds(self, cur: Any) -> dict[str, str]:
        """The result's columns and their types, spelled as DuckDB does."""
        out = {}
        for col in cur.description:
            info = self.con.adapters.types.get(col.type_code)     # an array's oid gives its element's info
            name = info.name if info is not None else str(col.type_code)
            out[col.name] = duckdb_type("_" + name if info is not None and info.array_oid == col.type_code else name,
                                        col.precision, col.scale)
        return out

    # -- tables --------------------------------------------------------------------------
    def write_table(self, name: Sequence[str] | str, columns: Mapping[str, np.ndarray | list]) -> None:
        """A table from numpy columns: created with their types, filled by one COPY."""
        arrays = {k: np.asarray(v) for k, v in columns.items()}
        target = (name,) if isinstance(name, str) else tuple(name)
        self.run(f"write {'.'.join(target)}", render("engines/postgres/create_table.sql.j2", target=target,
                                                      columns=[(k, numpy_type(a)) for k, a in arrays.items()]))
        self._copy_rows(f"write {'.'.join(target)}", target, list(arrays), zip(*(a.tolist() for a in arrays.values())))

    def _copy_rows(self, stage: str, target: Sequence[str], names: Sequence[str], rows: Any) -> None:
        """Rows into an existing table through COPY (the statement a sqlglot tree)."""
        import psycopg
        from psycopg import sql as pgsql

        table = pgsql.Identifier("pg_temp", target[-1]) if target[0] == SCRATCH_CATALOG else \
            pgsql.Identifier(*(p for p in target if p != "main"))
        copy = pgsql.SQL("COPY {} ({}) FROM STDIN").format(table, pgsql.SQL(", ").join(map(pgsql.Identifier, names)))
        t0 = time.perf_counter()
        try:
            with self._own_statement(), self.con.cursor() as cur, cur.copy(copy) as out:
                for row in rows:
                    out.write_row([plain(v) for v in row])
        except psycopg.Error as err:
            raise AnonDuckError(f"{stage}: {str(err).strip()}") from err
        self.trace.append((stage, time.perf_counter() - t0))

    def load_file(self, stage: str, target: Sequence[str], path: str, fmt: str, text_columns: Sequence[str],
                  csv: CsvOptions | None = None) -> None:
        """DuckDB's reader (the same types and ``csv`` options as on DuckDB), the rows copied
        into scratch ``target``."""
        with duckdb.connect() as local:
            reader = DuckDBBackend(local)
            reader.load_file(stage, ("temp", "main", "_ad_file"), path, fmt, text_columns, csv)
            kinds = reader.columns(stage, ("temp", "main", "_ad_file"))
            rows = local.execute(render("engines/postgres/all_rows.sql.j2", relation=("temp", "main", "_ad_file"))).fetchall()
        self.run(stage, render("engines/postgres/create_table.sql.j2", target=tuple(target),
                               columns=list(kinds.items())))
        self._copy_rows(stage, target, list(kinds), rows)

    def case_sensitive(self) -> bool:
        """PostgreSQL folds unquoted names to lower case and keeps quoted ones as written; anon_duck
        quotes every name as it finds it, so it looks names up without regard to case (a table
        holding both spellings is refused as ambiguous) and an export's PERSON_ID is found."""
        return False

    def cleanup(self, work: Callable[[], None]) -> None:
        """psycopg's connection survives an interrupt (the server cancels the statement): the
        work runs here."""
        work()

    def columns(self, stage: str, relation: Sequence[str] | str) -> dict[str, str]:
        return self._kinds(self._cursor(stage, render("engines/postgres/no_rows.sql.j2", relation=relation), None))

    def _table_columns(self, table: Any) -> list[str]:
        """The columns of a table a statement reads (a sqlglot Table, already written for PostgreSQL)."""
        from psycopg import sql as pgsql

        with self.con.cursor() as cur:
            cur.execute(pgsql.SQL("SELECT * FROM {} LIMIT 0").format(
                pgsql.Identifier(*(p.name for p in table.parts))))
            return [c.name for c in cur.description]

    def table_exists(self, name: str, schema: str = "main") -> bool:
        return bool(self.scalar("release: exists", render("engines/postgres/table_exists.sql.j2"),
                                {"name": name, "schema": schema}))

    def scratch_tables(self, where: Sequence[str]) -> list[str]:
        return [t for (t,) in self.rows("scratch: list", render("engines/postgres/scratch_tables.sql.j2"),
                                        {"prefix": where[-1]})]

    def scratch_exists(self, name: Sequence[str]) -> bool:
        return bool(self.scalar("scratch: exists", render("engines/postgres/temp_table_exists.sql.j2"),
                                {"name": name[-1]}))

    # -- publication and export ------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One PostgreSQL transaction: readers see the old release or the new one, never a mix."""
        self._publishing = True
        try:
            with self.con.transaction():
                yield
        finally:
            self._publishing = False

    @contextlib.contextmanager
    def local_copy(self, tables: Sequence[str], schema: str = "main") -> Iterator[DuckDBBackend]:
        """The release tables in an in-memory DuckDB with DuckDB's types, through Arrow: every
        engine exports with DuckDB's writers, so the files are the same."""
        import pyarrow as pa

        with duckdb.connect() as local:
            copy = DuckDBBackend(local)
            for table in tables:
                cur = self._cursor(f"export: read {table}", render("engines/postgres/all_rows.sql.j2", relation=(schema, table)),
                                   None)
                rows = cur.fetchall()
                kinds = self._kinds(cur)
                arrow = pa.table({name: pa.array([r[i] for r in rows], type=arrow_type(kind))
                                  for i, (name, kind) in enumerate(kinds.items())})
                copy.write_arrow(f"export: copy {table}", ("main", table), arrow)
            yield copy
