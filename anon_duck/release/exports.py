"""``export``: only the release tables and analyst views, in release order, to a new folder of
Parquet or CSV files or a new DuckDB file: the same files from every engine, all or nothing."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backend.base import Backend
from ..errors import InputError
from ..job import Job
from ..scratch import scratch
from ..sqlrender import render
from .catalog import meta_list, meta_value, previous_release, release_tables
from .names import ReleaseNames
from .order import chunk_count, copy_chunks, copy_in_order


def export(engine: Backend, job: Job, to: str | Path, *, views: bool = True) -> list[Path]:
    """Write only the release tables and return the files written. ``to`` is what is created,
    and its suffix (any case) picks the format: a new folder of Parquet files (``release/`` or
    ``release.parquet``), a new folder of CSV files (``release.csv``), or a new DuckDB file
    (``release.duckdb``/``.db``). Never source tables, ids or dropped columns: only the tables
    and analyst views the release's metadata lists, which the publisher built from the staged
    release; every table in release order (sql/lib/release_order.jinja), the same files from
    every engine. ``views=False`` leaves the analyst views out: a view is computed when it is
    read, and disassociation's support view pairs every code of a cluster with every other,
    billions of rows on a dense release (docs/analyst.md, "What the support view costs").

    All or nothing, and never over an earlier export: everything is written into a hidden
    sibling that is renamed into place at the end, and removed if anything fails."""
    target = Path(to)
    suffix = target.suffix.lower()     # out.CSV is CSV too
    is_db = suffix in (".duckdb", ".db")
    fmt = "csv" if suffix == ".csv" else "parquet"
    if target.exists():
        raise InputError(f"export: {target} exists; anon_duck never writes over an earlier export: remove it "
                         "or export to a new path")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    release = ReleaseNames.of(job)
    names = [release.table(s) for s in release_tables(engine, job)] + [release.meta] + \
        (previous_release(engine, release).views if views else [])     # the analyst views, as tables
    order = _release_order(engine, release)
    with engine.local_copy(names, release.schema or "main") as backend:
        _write_export(backend, names, order, partial, target, fmt, is_db)
    return [target] if is_db else [target / f"{name}.{fmt}" for name in names]


@dataclass(frozen=True)
class _Order:
    """How a release's tables are ordered (sql/lib/release_order.jinja): in the seeded order of
    ``seed``, except the tables in ``sorted`` (and the metadata table), sorted by their columns."""

    seed: str
    sorted: frozenset[str]
    # the analyst views: in a file, written from a scratch copy as a table is (_export_file);
    # in a DuckDB file, copied in one statement (a chunked copy reads row ids, which a view lacks)
    views: frozenset[str] = frozenset()

    def context(self, backend: Backend, name: str, source: tuple[str, ...] | None = None) -> dict[str, Any]:
        """release_order's context for table ``name`` as ``backend`` holds it (or as its copy
        ``source`` does)."""
        columns = list(backend.columns(f"export: columns of {name}", source or (name,)).items())
        return {"columns": columns, "seeded": name not in self.sorted, "seed": self.seed}


def _release_order(backend: Backend, names: ReleaseNames) -> _Order:
    seed = meta_value(backend, names, "seed")
    return _Order(str(seed), frozenset([names.meta, *meta_list(backend, names, "sorted_table")]),
                  frozenset(meta_list(backend, names, "view")))


def _write_export(backend: Backend, names: list[str], order: _Order, partial: Path, target: Path, fmt: str,
                  is_db: bool) -> None:
    """Write the tables ``names`` to ``partial`` in release order, then rename it to ``target``
    (all or nothing)."""
    try:
        if is_db:
            _export_database(backend, names, order, partial)
        else:
            partial.mkdir(parents=True)
            for name in names:
                _export_file(backend, name, order, partial / f"{name}.{fmt}", fmt)
        os.replace(partial, target)
    except BaseException:
        if partial.is_dir():
            shutil.rmtree(partial)
        partial.unlink(missing_ok=True)
        raise


def _export_file(backend: Backend, name: str, order: _Order, path: Path, fmt: str) -> None:
    """Write table or analyst view ``name`` to ``path`` in release order. A view is first copied
    into a scratch table and written from it as a table is (release/copy_view.sql.j2 says why):
    another engine's release reaches DuckDB's writers as tables (``local_copy``), so this is what
    makes its Parquet files DuckDB's bytes."""
    if name not in order.views:
        _write_file(backend, name, (name,), order, path, fmt)
        return
    copy = scratch("export_view")
    backend.run(f"export {name}: copy", render("release/copy_view.sql.j2", target=copy, source=(name,)))
    try:
        _write_file(backend, name, copy, order, path, fmt, chunked=False)
    finally:
        backend.run(f"export {name}: drop copy", render("release/drop_table.sql.j2", target=copy))


def _write_file(backend: Backend, name: str, source: tuple[str, ...], order: _Order, path: Path, fmt: str, *,
                chunked: bool = True) -> None:
    """Write table ``source`` (release table ``name`` or an analyst view's copy) to ``path`` in
    release order. A seeded table beyond one sort budget is first copied in order into a scratch
    table in chunks (:func:`copy_chunks`), which the file then takes as stored (DuckDB keeps a
    table's insertion order in a plain scan): the file's rows are never sorted in one piece.
    A view's copy (``chunked`` False) is written in one statement, as the view was before it
    was copied: its budget would cost one more pass over its row text."""
    context = order.context(backend, name, source)
    chunks = chunk_count(backend, f"export {name}", source, context["columns"]) \
        if context["seeded"] and chunked else None
    if chunks is None:
        backend.run(f"export {name}", render("release/export_file.sql.j2", source=source, format=fmt, path=str(path),
                                             ordered=False, **context))
        return
    ordered = scratch("export_ordered")
    copy_chunks(backend, f"export {name}", ordered, source, context["columns"], context["seed"], chunks)
    backend.run(f"export {name}", render("release/export_file.sql.j2", source=ordered, format=fmt, path=str(path),
                                         ordered=True))
    backend.run(f"export {name}: drop copy", render("release/drop_table.sql.j2", target=ordered))


def _export_database(backend: Backend, names: list[str], order: _Order, path: Path) -> None:
    alias = "anon_duck_export"
    backend.run("export: attach", render("release/attach.sql.j2", alias=alias, path=str(path)))
    try:
        for name in names:
            context = order.context(backend, name)
            seeded = context["seeded"] and name not in order.views
            copy_in_order(backend, f"export {name}", (alias, "main", name), (name,), seeded, context["seed"])
    finally:
        backend.run("export: detach", render("release/detach.sql.j2", alias=alias))
