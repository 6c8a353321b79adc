"""Names of a run's scratch objects, and their cleanup: the one place that knows them.

Scratch tables are DuckDB TEMP tables: they live only in the connection that made them, so
a killed process leaves nothing behind in the database file, and two runs on two
connections never see each other's scratch. They are also dropped explicitly at the end of
every run. The ``_ad_`` prefix keeps them from shadowing a user's own tables, and tells the
cleanup which tables are ours.
"""
from __future__ import annotations

from .backend.base import Backend
from .errors import AnonDuckError
from .sqlrender import render

PREFIX = "_ad_"


def scratch(name: str) -> tuple[str, str, str]:
    """Fully qualified name of a scratch table: ("temp", "main", "_ad_<name>")."""
    return ("temp", "main", PREFIX + name)


def staging(table: str, schema: str | None = None) -> tuple[str, str]:
    """Where a release table is written before it is published: beside its published name in
    the release's schema (``main``: the default one; a rename moves it there), under the scratch prefix. On DuckDB all of it is
    one transaction; on Spark, which has none, the previous release stays untouched until every
    staged table is written."""
    return (schema or "main", f"{PREFIX}staged_{table}")


def scratch_tables(backend: Backend, group: str = "") -> list[tuple[str, str, str]]:
    """The scratch tables this connection holds, all of them or those of one group (the
    tables named ``scratch(group + ...)``). Where to look and which prefix to match come from
    :func:`scratch` itself, so the cleanup cannot drift from the names the run gives."""
    database, schema, prefix = scratch(group)
    return [(database, schema, t) for t in backend.scratch_tables((database, schema, prefix))]


def drop_scratch(backend: Backend, group: str = "") -> None:
    """Drop this connection's scratch tables (or one group of them). A connection that can no
    longer run statements (e.g. interrupted) keeps them until it closes, and TEMP tables go
    with it."""
    try:
        for table in scratch_tables(backend, group):
            backend.run("scratch: drop", render("release/drop_table.sql.j2", target=table))
    except AnonDuckError:
        pass
