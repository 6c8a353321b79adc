"""What a database holds of a release, read from its ``<release>_meta`` table: the tables and
views an earlier run published, the method that made it, its scalar metadata.

``<release>_meta`` is trusted only when it has anon_duck's shape: publication drops what it
lists, so a user's table of that name must never steer what is dropped."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..backend.base import Backend
from ..errors import InputError
from ..job import Job
from ..sqlrender import render
from .names import ReleaseNames


@dataclass(frozen=True)
class Earlier:
    """What an earlier run of a release published: its tables and analyst views (meta aside)."""

    tables: list[str]
    views: list[str]


def meta_value(backend: Backend, names: ReleaseNames, key: str) -> Any:
    """One scalar entry of ``<release>_meta`` (None when absent)."""
    return backend.scalar(f"release: {key}", render("release/meta_value.sql.j2", meta=names.where(names.meta)),
                          {"key": key})


def meta_list(backend: Backend, names: ReleaseNames, key: str) -> list[str]:
    """Every value of a repeated ``<release>_meta`` entry (``table``, ``view``, ``sorted_table``)."""
    return [r[0] for r in backend.rows(f"release: {key} rows",
                                       render("release/meta_tables.sql.j2", meta=names.where(names.meta), key=key))]


def previous_release(backend: Backend, names: ReleaseNames) -> Earlier | None:
    """The tables and views of an earlier run of release ``name``, or None if there was none.

    A ``<name>_meta`` table is trusted only if it has anon_duck's shape (key, value VARCHAR
    with an ``anon_duck_version`` row) and lists only ``<name>_*`` tables (and views named
    ``<name>`` or ``<name>_*``)."""
    name = names.release
    if not backend.table_exists(names.meta, names.schema or "main"):
        return None
    columns = backend.columns("release: meta columns", names.where(names.meta))
    ours = list(columns.items()) == [("key", "VARCHAR"), ("value", "VARCHAR")] and \
        meta_value(backend, names, "anon_duck_version") is not None
    listed = {key: meta_list(backend, names, key) if ours else [] for key in ("table", "view")}
    if not ours or not all(map(names.owns_table, listed["table"])) or not all(map(names.owns_view, listed["view"])):
        raise InputError(f"table {names.meta!r} exists but was not written by anon_duck for release {name!r}; "
                         "choose another release.name")
    return Earlier(listed["table"], listed["view"])


def release_tables(backend: Backend, job: Job) -> dict[str, tuple[str, ...]]:
    """suffix → qualified name of each published table, from ``<release>_meta``; refuses a
    release another method made (its verifier would read tables it does not know)."""
    names = ReleaseNames.of(job)
    earlier = previous_release(backend, names)
    if earlier is None:
        raise InputError(f"release {job.release.name!r} is not in this database (no table {names.meta!r}); "
                         "run the job first")
    made_by = meta_value(backend, names, "method")
    if made_by != job.method:
        raise InputError(f"release {job.release.name!r} was made by method {made_by!r}, not by this job's "
                         f"method.name = {job.method!r}")
    return {names.suffix(t): names.where(t) for t in earlier.tables}


def read_meta(backend: Backend, names: ReleaseNames) -> dict[str, Any]:
    """The scalar entries of ``<release>_meta``, the JSON ones parsed."""
    value = {key: meta_value(backend, names, key)
             for key in ("method", "seed", "anon_duck_version", "params", "verified", "facts")}
    return {**value, **{key: json.loads(value[key] or "{}") for key in ("params", "verified", "facts")}}
