"""Release safety, applied to every method through its toy job (fixtures/jobs/*_toy.toml):
no person id or dropped column is published, sources are untouched, the same seed gives the
same bytes, the published release verifies, export writes only release tables, and a
second run replaces the first cleanly."""
from __future__ import annotations

import dataclasses

import duckdb
import pytest

import anon_duck
from anon_duck.release import ReleaseNames, analyst_views, release_tables
import anon_duck.api  # anon_duck.api.* below: the package loads it lazily (PEP 562)
from anon_duck.job import Source, load_job
from anon_duck.sqlrender import ident

from conftest import JOBS, table_fingerprint, user_tables

TOY_JOBS = sorted(JOBS.glob("toy_*.toml")) + sorted(JOBS.glob("*_toy.toml"))


def _sources_as_tables(con: duckdb.DuckDBPyConnection, job):
    """Load the job's person file into a table and point the job at it, so the test can
    prove the table is not modified."""
    if job.dataset.source is None or job.dataset.source.path is None:
        return job, None
    path = job.dataset.source.path
    reader = "read_parquet" if path.suffix == ".parquet" else "read_csv"
    con.execute(f"CREATE TABLE src AS SELECT * FROM {reader}(?)", [str(path)])
    return dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, source=Source(table="src"))), "src"


@pytest.mark.parametrize("path", TOY_JOBS, ids=lambda p: p.stem)
def test_release_hygiene(path, tmp_path):
    with duckdb.connect() as con:
        job, src = _sources_as_tables(con, load_job(path))
        before = table_fingerprint(con, src) if src else None
        result = anon_duck.run(con, job)
        assert result.verified
        if src:
            assert table_fingerprint(con, src) == before
        names = ReleaseNames(job.release.name)
        published = {names.table(t) for t in release_tables(anon_duck.api.backend_for(con, job), job)} | \
            {names.meta} | {names.view(v) for v in analyst_views(job)}   # analyst views
        assert user_tables(con) - {"src"} == published            # nothing else, no scratch
        forbidden = {c for c in (job.dataset.id, *job.dataset.drop) if c}
        for table in published - {f"{job.release.name}_meta"}:
            cols = {r[0] for r in con.execute(f"DESCRIBE {ident(table)}").fetchall()}
            assert not cols & forbidden, f"{table} publishes {cols & forbidden}"
        views = {names.view(v) for v in analyst_views(job)}

        def rows(t: str) -> list:     # a table in its published order; a view has none of its own
            fetched = con.execute(f"SELECT * FROM {ident(t)}").fetchall()
            return sorted(fetched, key=repr) if t in views else fetched
        snapshot = {t: rows(t) for t in published}
        assert all(c.passed for c in anon_duck.verify(con, job))
        anon_duck.run(con, job)                                    # same seed: same bytes, clean replace
        assert {t: rows(t) for t in published} == snapshot
        assert user_tables(con) - {"src"} == published
        files = anon_duck.export(con, job, tmp_path / "out")
        assert {p.stem for p in files} == published


def _in_schema(job, schema: str):
    return dataclasses.replace(job, release=dataclasses.replace(job.release, schema=schema))


def _tables_by_schema(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str]]:
    return {tuple(r) for r in con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() UNION ALL "
        "SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = current_database() AND NOT internal"
    ).fetchall()}


@pytest.mark.parametrize("path", TOY_JOBS, ids=lambda p: p.stem)
def test_a_release_schema_holds_the_whole_release_and_nothing_else_is_written(path, tmp_path):
    """``[release] schema = "deid"``: the schema is created, every table and view of the
    release is there and nowhere else (the default schema keeps only the source), the release
    verifies, and its export is the bytes of the same job published in the default schema."""
    with duckdb.connect() as con:
        job, src = _sources_as_tables(con, load_job(path))
        deid = _in_schema(job, "deid")
        assert anon_duck.run(con, deid).verified
        names = ReleaseNames(job.release.name)
        published = {names.table(t) for t in release_tables(anon_duck.api.backend_for(con, deid), deid)} | \
            {names.meta} | {names.view(v) for v in analyst_views(job)}
        assert _tables_by_schema(con) == {("deid", t) for t in published} | ({("main", src)} if src else set())
        assert user_tables(con) - {"src"} == published                 # no scratch left either
        assert all(c.passed for c in anon_duck.verify(con, deid))
        in_deid = {f.name: f.read_bytes() for f in anon_duck.export(con, deid, tmp_path / "deid")}
        assert anon_duck.run(con, job).verified                         # the same job in the default schema
        assert in_deid == {f.name: f.read_bytes() for f in anon_duck.export(con, job, tmp_path / "main")}


def test_a_release_schema_is_replaced_cleanly_and_reported(tmp_path):
    """A second run into the schema replaces the first, a verify finds a view replaced by hand
    there, and report reads the release's metadata from the schema."""
    with duckdb.connect() as con:
        job = _in_schema(load_job(JOBS / "disassociation_toy.toml"), "deid")
        anon_duck.run(con, job)
        before = _tables_by_schema(con)
        anon_duck.run(con, job.with_params(k=3))
        assert _tables_by_schema(con) == before
        assert con.execute(f"SELECT value FROM deid.{ident(job.release.name + '_meta')} WHERE key = 'params'"
                           ).fetchone()[0].count('"k": 3') == 1
        assert anon_duck.api.release_report(con, job.with_params(k=3))["params"]["k"] == 3
        view = ReleaseNames(job.release.name).view(analyst_views(job)[0])
        con.execute(f"DROP VIEW deid.{ident(view)}")
        checks = {c.name: c for c in anon_duck.verify(con, job.with_params(k=3))}
        assert checks["analyst_views"].violations == [{"view": view, "problem": "missing"}]
