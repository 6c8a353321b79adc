"""The PostgreSQL engine (issue #33, docs/postgres.md), on a throwaway server the suite starts
(tests/pg_server.py): every toy job publishes on PostgreSQL a release with DuckDB's verdicts
and DuckDB's export, the CLI runs with ``--engine postgres``, the caller's connection is left
as it was, publication is one transaction, and a role that may not CREATE is refused first."""
from __future__ import annotations

import dataclasses

import duckdb
import pytest

import anon_duck
from anon_duck.backend import backend_for
from anon_duck.errors import AnonDuckError, InputError
from anon_duck.job import load_job
from anon_duck.jobspec import Settings
from anon_duck.methods.longitudinal import measures

from conftest import JOBS
from sparktest import same

TOY_JOBS = sorted(p.name for p in JOBS.glob("toy_*.toml")) + sorted(p.name for p in JOBS.glob("*_toy.toml"))


def _verdicts(checks):
    return [(c.name, c.passed, c.n_violations) for c in checks]


@pytest.mark.parametrize("job_file", TOY_JOBS)
def test_a_toy_job_on_postgres_verifies_and_exports_what_duckdb_exports(pg, job_file, tmp_path, monkeypatch):
    job = load_job(JOBS / job_file)
    on_pg = anon_duck.run(pg, job)
    duck = duckdb.connect()
    on_duckdb = anon_duck.run(duck, job)
    assert on_pg.verified and on_pg.tables == on_duckdb.tables
    # the published release on PostgreSQL, verified, against DuckDB's gate on the same release
    assert _verdicts(anon_duck.verify(pg, job)) == _verdicts(on_duckdb.checks) + [("analyst_views", True, 0)]
    for fmt in ("csv", "parquet"):          # every file, byte for byte, analyst views included
        files = {name: anon_duck.export(c, job, tmp_path / f"{name}.{fmt}") for name, c in (("pg", pg), ("duckdb", duck))}
        assert [f.name for f in files["pg"]] == [f.name for f in files["duckdb"]] and files["pg"]
        for mine, theirs in zip(files["pg"], files["duckdb"]):
            assert mine.read_bytes() == theirs.read_bytes(), mine.name
    # and the same report (longitudinal's AvgRE appended slice by slice: 3 slices of the toy's 14 events)
    monkeypatch.setattr(measures, "AVG_RE_SLICE_EVENTS", 5)
    same(anon_duck.report(pg, job), anon_duck.report(duck, job))
    assert not backend_for(pg).scratch_tables(("temp", "main", "_ad_"))     # the session's scratch is gone
    assert not pg.info.transaction_status                                    # and no transaction is left open


def test_the_cli_runs_verifies_reports_and_exports_on_postgres(pg, tmp_path, capsys):
    from anon_duck.cli import main

    job = str(JOBS / "toy_fulldomain.toml")
    db = ["--engine", "postgres", "--db", pg.info.dsn]
    assert main(["run", job, *db]) == 0
    assert main(["verify", job, *db]) == 0
    assert "k_anonymity: pass" in capsys.readouterr().out
    assert main(["report", job, "--json", *db]) == 0
    for command in (["risk", job], ["inspect", job], ["sweep", job, "--k", "2,3"]):
        assert main([*command, *db]) == 0, command
    assert main(["export", job, *db, "--to", str(tmp_path / "pg.csv")]) == 0
    duck = str(tmp_path / "d.duckdb")
    assert main(["run", job, "--db", duck]) == 0
    assert main(["export", job, "--db", duck, "--to", str(tmp_path / "duckdb.csv")]) == 0
    exported = sorted(p.name for p in (tmp_path / "duckdb.csv").iterdir())
    assert exported == sorted(p.name for p in (tmp_path / "pg.csv").iterdir()) and exported
    for name in exported:
        assert (tmp_path / "pg.csv" / name).read_bytes() == (tmp_path / "duckdb.csv" / name).read_bytes(), name


def test_a_partitioned_run_on_postgres_publishes_what_duckdb_publishes(pg, tmp_path):
    job = load_job(JOBS / "disassociation_toy.toml")
    job = dataclasses.replace(job, settings=Settings(partition_size=6))
    on_pg = anon_duck.run(pg, job)
    assert on_pg.verified and on_pg.facts["partition"]["fragments"] == 2
    duck = duckdb.connect()
    anon_duck.run(duck, job)
    for name, c in (("pg", pg), ("duckdb", duck)):
        anon_duck.export(c, job, tmp_path / f"{name}.csv")
    for table in on_pg.tables:
        assert (tmp_path / "pg.csv" / f"{table}.csv").read_bytes() == \
            (tmp_path / "duckdb.csv" / f"{table}.csv").read_bytes(), table


def test_the_callers_transaction_and_autocommit_are_left_alone(pg):
    job = load_job(JOBS / "toy_fulldomain.toml")
    pg.execute("CREATE TABLE mine (x int)")          # opens the caller's transaction (autocommit off)
    with pytest.raises(InputError, match="transaction open"):
        anon_duck.run(pg, job)
    assert pg.info.transaction_status                # still open: nothing of ours ran in it
    pg.rollback()
    assert anon_duck.run(pg, job).verified
    assert pg.autocommit is False and not pg.info.transaction_status


def test_publication_is_one_transaction(pg, monkeypatch):
    """A failure half-way through publishing leaves the previous release whole."""
    from anon_duck.backend.postgres.backend import PostgresBackend

    job = load_job(JOBS / "toy_fulldomain.toml")
    anon_duck.run(pg, job)
    before = pg.execute('SELECT * FROM "toy_k2_release" ORDER BY 1, 2, 3, 4').fetchall()
    pg.rollback()
    real = PostgresBackend.run

    def failing(self, stage, sql, params=None):
        if stage.startswith("publish") and "meta" in stage:
            raise AnonDuckError("disk full")
        return real(self, stage, sql, params)
    monkeypatch.setattr(PostgresBackend, "run", failing)
    with pytest.raises(AnonDuckError, match="disk full"):
        anon_duck.run(pg, job.with_params(k=3))
    monkeypatch.undo()
    assert pg.execute('SELECT * FROM "toy_k2_release" ORDER BY 1, 2, 3, 4').fetchall() == before
    pg.rollback()


def test_a_role_without_create_is_refused_naming_the_privilege(pg):
    import psycopg

    pg.autocommit = True
    pg.execute("CREATE ROLE reader LOGIN")
    pg.execute("CREATE SCHEMA locked")
    pg.execute("GRANT USAGE ON SCHEMA locked TO reader")
    pg.execute("ALTER ROLE reader SET search_path = locked")
    dsn = pg.info.dsn.replace("user=postgres", "user=reader")
    with psycopg.connect(dsn) as reader:
        with pytest.raises(InputError, match=r"schema 'locked': the role 'reader' lacks the CREATE privilege"):
            anon_duck.run(reader, load_job(JOBS / "toy_fulldomain.toml"))
    pg.execute("DROP SCHEMA locked")
    pg.execute("DROP OWNED BY reader")
    pg.execute("DROP ROLE reader")


@pytest.mark.parametrize("method", ["fulldomain", "disassociation"])
def test_an_omop_cdm_in_a_postgres_schema_runs_in_place_and_verifies(pg, method):
    """``[input.omop] schema = "cdm"``: the CDM's tables read where they are, the run's facts
    those of DuckDB's run on the same tables in a schema of its own, and the CDM unchanged."""
    from anon_duck.job import parse_job

    from conftest import FIXTURES
    backend = backend_for(pg)
    pg.autocommit = True
    pg.execute("CREATE SCHEMA cdm")
    tables = ("person", "condition_occurrence", "concept", "concept_ancestor", "location")
    for table in tables:
        backend.load_file("test: load", ("temp", "main", "_ad_cdm"), str(FIXTURES / "omop" / f"{table}.csv"), "csv", [])
        pg.execute(f'CREATE TABLE cdm."{table}" AS SELECT * FROM pg_temp."_ad_cdm"')
        pg.execute('DROP TABLE pg_temp."_ad_cdm"')
    pg.autocommit = False
    counts = {t: pg.execute(f'SELECT count(*) FROM cdm."{t}"').fetchone() for t in tables}
    pg.rollback()
    text = (JOBS / f"omop_{method}.toml").read_text().replace('path = "../omop"', 'schema = "cdm"')
    job = parse_job(text, base_dir=JOBS)
    on_pg = anon_duck.run(pg, job)
    assert on_pg.verified and all(c.passed for c in anon_duck.verify(pg, job))
    duck = duckdb.connect()
    duck.execute("CREATE SCHEMA cdm")
    for table in tables:
        duck.execute(f"CREATE TABLE cdm.{table} AS SELECT * FROM read_csv(?, header = true)",
                     [str(FIXTURES / "omop" / f"{table}.csv")])
    assert on_pg.facts == anon_duck.run(duck, job).facts
    assert {t: pg.execute(f'SELECT count(*) FROM cdm."{t}"').fetchone() for t in tables} == counts
    pg.rollback()


def test_input_tables_named_schema_dot_table_are_read_in_place_on_postgres(pg, tmp_path):
    """``table = "cdm.patients"`` under [input], [input.events] and an edges hierarchy: read
    where they are, the export DuckDB's export of the same job on the files."""
    from schema_inputs import exported, file_job, tables_in_schema

    pg.autocommit = True
    job = tables_in_schema(pg, "cdm")
    pg.autocommit = False
    assert anon_duck.run(pg, job).verified
    assert all(c.passed for c in anon_duck.verify(pg, job))
    duck = duckdb.connect()
    anon_duck.run(duck, file_job())
    mine = exported(pg, job, tmp_path / "pg")
    assert mine and mine == exported(duck, file_job(), tmp_path / "duckdb")
    assert pg.execute('SELECT count(*) FROM cdm."events"').fetchone()[0] == \
        len((JOBS / "../004/toy_events.csv").read_text().splitlines()) - 1
    pg.rollback()


def _release_in(job, schema):
    return dataclasses.replace(job, release=dataclasses.replace(job.release, schema=schema))


def _relations(pg):
    """Every table and view of the database outside PostgreSQL's own schemas, by schema."""
    rows = pg.execute("SELECT table_schema, table_name FROM information_schema.tables "
                      "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
                      "AND table_schema NOT LIKE 'pg_temp%'").fetchall()
    pg.rollback()
    return set(rows)


@pytest.mark.parametrize("job_file", ["toy_fulldomain.toml", "artuc_toy.toml"])
def test_a_release_schema_on_postgres_holds_the_release_and_exports_what_duckdb_exports(pg, job_file, tmp_path):
    """``[release] schema = "deid"``: created, the release's tables and views there and nowhere
    else, verified, and exported as DuckDB exports the same job."""
    from anon_duck.release import ReleaseNames, analyst_views

    job = _release_in(load_job(JOBS / job_file), "deid")
    result = anon_duck.run(pg, job)
    assert result.verified
    names = ReleaseNames(job.release.name)
    published = {("deid", t) for t in [*result.tables, names.meta, *(names.view(v) for v in analyst_views(job))]}
    assert _relations(pg) == published
    assert all(c.passed for c in anon_duck.verify(pg, job))
    duck = duckdb.connect()
    anon_duck.run(duck, job)
    mine = {f.name: f.read_bytes() for f in anon_duck.export(pg, job, tmp_path / "pg.csv")}
    assert mine == {f.name: f.read_bytes() for f in anon_duck.export(duck, job, tmp_path / "duckdb.csv")}
    assert anon_duck.run(pg, job).verified and _relations(pg) == published      # replaced in place


def test_a_release_schema_the_role_may_not_create_in_is_refused_first(pg):
    """A schema the role lacks CREATE on, and a schema that is not there in a database the
    role may not create schemas in: refused before any work, naming the privilege."""
    import psycopg

    pg.autocommit = True
    pg.execute("CREATE ROLE clerk LOGIN")
    pg.execute("CREATE SCHEMA deid")
    pg.execute("GRANT USAGE ON SCHEMA deid TO clerk")
    pg.execute("REVOKE CREATE ON DATABASE " + pg.info.dbname + " FROM PUBLIC")
    job = load_job(JOBS / "toy_fulldomain.toml")
    try:
        with psycopg.connect(pg.info.dsn.replace("user=postgres", "user=clerk")) as clerk:
            with pytest.raises(InputError, match=r"schema 'deid': the role 'clerk' lacks the CREATE privilege"):
                anon_duck.run(clerk, _release_in(job, "deid"))
            with pytest.raises(InputError, match=r"schema 'other' does not exist and the role 'clerk' lacks the "
                                                 r"CREATE privilege on database"):
                anon_duck.run(clerk, _release_in(job, "other"))
        assert _relations(pg) == set()                  # nothing was written
    finally:
        pg.execute("DROP SCHEMA deid")
        pg.execute("DROP OWNED BY clerk")
        pg.execute("DROP ROLE clerk")


def test_group_by_all_leaves_duckdbs_product_aggregate_out_of_the_keys():
    """``product()`` is an aggregate DuckDB has and sqlglot parses as a plain function: GROUP BY
    ALL must not group by it (longitudinal's AvgRE report failed on PostgreSQL)."""
    from anon_duck.backend.postgres.statements import to_postgres
    (statement,) = to_postgres("SELECT qid, rid, product(1 - p) AS miss FROM hits GROUP BY ALL")
    assert statement.text.endswith("GROUP BY 1, 2")


def test_the_frequent_itemset_search_is_exact_on_postgres(pg):
    """The "sup" policy's level-wise search (sql/disassociation/frequent_level.sql.j2) on
    PostgreSQL finds what brute force finds (as on DuckDB: tests/test_disassociation_itemsets.py)."""
    from test_disassociation_itemsets import frequent_search_is_exact
    frequent_search_is_exact(backend_for(pg), seed=5, sigma=6)
