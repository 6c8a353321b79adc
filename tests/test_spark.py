"""The Spark engine (anon_duck/backend/spark.py): templates written once in DuckDB's dialect,
adapted for Spark on sqlglot's syntax tree, give the same verifier verdicts and numbers on local
Spark as on DuckDB for the same release. Skipped (with the reason) only without pyspark or Java.
This module runs every method and the demo's jobs on Spark; test_spark_checks.py the rest
(tests/spark_support.py says why two modules)."""
from __future__ import annotations

import duckdb
import pytest

import anon_duck
from anon_duck.api import _view_sql
from anon_duck.backend.spark import Action, to_spark
from anon_duck.job import load_job
from anon_duck.methods import get_method

from conftest import ALL_JOBS, JOBS
from spark_support import (DEMO_FILES, RAN_ON_SPARK, RENDERED, REPORTED, SPARK_RUNS, audit_on_spark, checks_of,
                           same, spark)  # noqa: F401 (spark: the module's fixture)


def test_statements_become_spark_steps():
    """Scratch tables are session-local snapshots (written, appended to, dropped by the backend),
    the main schema is the session's database, and a replaced table is dropped and created."""
    create = 'CREATE OR REPLACE TEMP TABLE "temp"."main"."_ad_x" AS SELECT a FROM "temp"."main"."_ad_y" AS y'
    assert to_spark(create) == (Action("snapshot", "SELECT a FROM `_ad_y` AS y", "_ad_x"),)
    assert to_spark('INSERT INTO "temp"."main"."_ad_x" SELECT a FROM "main"."t"') == \
        (Action("append", "SELECT a FROM `t`", "_ad_x"),)
    assert to_spark('DROP TABLE IF EXISTS "temp"."main"."_ad_x"') == (Action("drop", name="_ad_x"),)
    assert to_spark('SELECT * FROM "main"."r" WHERE k < $k') == (Action("sql", "SELECT * FROM `r` WHERE k < :k"),)
    two = 'CREATE TEMP TABLE "temp"."main"."_ad_a" AS SELECT 1 AS x; SELECT x FROM "temp"."main"."_ad_a"'
    assert to_spark(two) == (Action("snapshot", "SELECT 1 AS x", "_ad_a"), Action("sql", "SELECT x FROM `_ad_a`"))
    publish = 'CREATE OR REPLACE TABLE "main"."r" AS SELECT s.* FROM "temp"."main"."_ad_x" AS s ORDER BY s.a'
    assert to_spark(publish) == (Action("sql", "DROP TABLE IF EXISTS `r`"),
                                 Action("sql", "CREATE TABLE `r` AS SELECT s.* FROM `_ad_x` AS s ORDER BY s.a NULLS LAST"))


def test_duckdb_constructs_get_spark_spellings_with_duckdbs_meaning():
    """What sqlglot writes for Spark with another meaning (or not at all) is spelled on the tree:
    each of these returned other rows on Spark before (ORDER BY dropped, 0-based index, ...)."""
    def spark_sql(sql: str) -> str:
        (step,) = to_spark(sql)
        return step.text
    assert spark_sql("SELECT l[2:4], l[i] FROM t") == "SELECT SLICE(l, 2, 4 - 2 + 1), TRY_ELEMENT_AT(l, i) FROM t"
    assert spark_sql("SELECT list(x ORDER BY x) FILTER (WHERE y > 1) FROM t") == \
        "SELECT ARRAY_SORT(COLLECT_LIST(x) FILTER(WHERE y > 1)) FROM t"
    assert spark_sql("SELECT list(x ORDER BY y) FROM t") == \
        "SELECT TRANSFORM(ARRAY_SORT(COLLECT_LIST(STRUCT(y AS k0, x AS v))), p -> p.v) FROM t"
    assert spark_sql("SELECT string_agg(DISTINCT x, ', ' ORDER BY x) FROM t") == \
        "SELECT ARRAY_JOIN(ARRAY_SORT(COLLECT_SET(x)), ', ') FROM t"
    assert spark_sql("SELECT grouping(a, b) FROM t GROUP BY GROUPING SETS ((a, b))").startswith("SELECT GROUPING_ID(a, b)")
    assert "CAST(CONV(CONCAT(SUBSTRING(MD5(s), 31, 2)" in spark_sql("SELECT md5_number(s) >> 72 FROM t")
    assert "AGGREGATE(COLLECT_LIST(CAST(p AS DOUBLE))" in spark_sql("SELECT product(p) FROM t")
    assert spark_sql("SELECT CAST(n AS HUGEINT) FROM t") == "SELECT CAST(n AS DECIMAL(38, 0)) FROM t"
    # a rewritten node's parts are rewritten too (sqlglot does not visit a replacement)
    assert spark_sql("WITH a AS MATERIALIZED (SELECT l[1:2] AS x FROM t) SELECT * FROM a") == \
        "WITH a AS (SELECT SLICE(l, 1, 2 - 1 + 1) AS x FROM t) SELECT * FROM a"
    assert to_spark('UPDATE "temp"."main"."_ad_s" SET a = b, b = 1 WHERE a = $x') == \
        (Action("update", "a = :x", "_ad_s", (("a", "b"), ("b", "1"))),)


# the templates the demo's jobs execute on DuckDB (run, verify, report), and the tests whose runs
# the last test reads
DEMO_TEMPLATES: set[str] = set()
COMPLETED: set[str] = set()


@pytest.mark.slow
@pytest.mark.parametrize("job_path", [p for p in ALL_JOBS if p.name in DEMO_FILES and p.name not in SPARK_RUNS],
                         ids=lambda p: p.stem)
def test_the_demo_jobs_releases_made_on_duckdb_verify_identically_on_spark(spark, job_path):
    """Issue #18 for the demo's jobs (test_spark_checks.py audits the other fixture jobs): the
    release verifies on Spark with DuckDB's verdict and numbers; what the job executes on DuckDB
    is recorded for the last test."""
    DEMO_TEMPLATES.update(audit_on_spark(spark, job_path, record=True))
    COMPLETED.add(job_path.name)


@pytest.mark.slow
@pytest.mark.parametrize("job_file", SPARK_RUNS)
def test_every_method_runs_on_spark_and_duckdb_accepts_its_release(spark, job_file, tmp_path):
    """``anon_duck.run`` on a SparkSession: inputs read by Spark's reader, hierarchies, the
    method, the verifier gate and the staged publication all on Spark. The release, copied back
    to DuckDB, passes DuckDB's verifier with the same numbers (the reverse of the test above);
    every method publishes the release DuckDB publishes for the same job and seed: the exports
    are the same files, row for row in release order; report and inspect give the same
    numbers on both engines for this one release."""
    job = load_job(JOBS / job_file).with_release("on_spark_" + job_file.removesuffix(".toml"))
    if job_file == "disassociation_toy.toml":     # W1's itemsets mined in SQL (support >= 2), as on real data
        job = job.with_params(w1_minsup_percent=20.0)
    on_spark = anon_duck.run(spark.spark, job)
    assert on_spark.verified
    con = duckdb.connect()
    for table in on_spark.tables + [f"{job.release.name}_meta"]:
        con.register("arrow", spark.spark.table(f"`{table}`").toArrow())
        con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM arrow')
        con.unregister("arrow")
    for view in get_method(job.method).views:
        con.execute(_view_sql(job, view, "create"))
    checked = anon_duck.verify(con, job)
    assert checks_of(checked[:-1]) == checks_of(on_spark.checks)
    assert checks_of(checked[-1:]) == checks_of(anon_duck.verify(spark.spark, job)[-1:])      # analyst_views
    assert checked[-1].name == "analyst_views" and checked[-1].passed
    assert not spark.scratch_tables(("temp", "main", "_ad_"))          # the session's scratch is gone
    assert not [t.name for t in spark.spark.catalog.listTables() if t.name.startswith("_ad_")]  # and staging
    fresh = duckdb.connect()
    anon_duck.run(fresh, job)
    files = {engine: anon_duck.export(c, job, tmp_path / f"{engine}.csv")
             for engine, c in (("spark", spark.spark), ("duckdb", fresh))}
    assert [f.name for f in files["spark"]] == [f.name for f in files["duckdb"]]
    for on_spark_file, on_duckdb_file in zip(files["spark"], files["duckdb"]):
        spark_text, duckdb_text = on_spark_file.read_text(), on_duckdb_file.read_text()
        assert spark_text == duckdb_text, on_spark_file.name
    if job_file in REPORTED:
        same(anon_duck.report(con, job), anon_duck.report(spark.spark, job))
        same(anon_duck.inspect(con, job), anon_duck.inspect(spark.spark, job))
    COMPLETED.add(job_file)


@pytest.mark.slow
def test_an_omop_job_runs_on_spark_and_its_release_verifies(spark):
    """Issue #20: ``[input.omop]`` on Spark: the OMOP files read by Spark's reader, and the
    events and the code tree (recursive chains of parents, positions by date) derived by
    ``sql/omop/`` on Spark; the release verifies there and has DuckDB's shape."""
    job = load_job(JOBS / "omop_longitudinal.toml").with_release("on_spark_omop")
    result = anon_duck.run(spark.spark, job)
    assert result.verified
    checks = anon_duck.verify(spark.spark, job)
    assert checks and all(c.passed for c in checks)
    on_duckdb = anon_duck.run(duckdb.connect(), job).facts
    assert {k: result.facts[k] for k in ("records", "pairs", "clusters", "released_pairs", "icd_domain")} == \
        {k: on_duckdb[k] for k in ("records", "pairs", "clusters", "released_pairs", "icd_domain")}


# The DuckDB backend's own statements (catalog, settings, file reading, transactions); the Spark
# backend answers each through the session's API (columns, table_exists, scratch_tables,
# scratch_exists, threads, load_file, write_table, in_transaction, writable)
DUCKDB_BACKEND_OWN = {
    "inputs/columns.sql.j2", "inputs/csv_columns.sql.j2", "inputs/load_file.sql.j2", "release/exists.sql.j2",
    "release/scratch_tables.sql.j2", "util/create_table_from_registered.sql.j2", "util/current_setting.sql.j2",
    "util/database_writable.sql.j2", "util/transaction_id.sql.j2", "verify/temp_table_exists.sql.j2",
    "util/set_setting.sql.j2",
    # exports are written by DuckDB's writers on every engine (Spark's release is copied into an
    # in-memory DuckDB first: backend.local_copy)
    "release/export_file.sql.j2", "release/export_duckdb.sql.j2", "release/attach.sql.j2", "release/detach.sql.j2"}


@pytest.mark.slow
def test_every_template_the_demo_executes_ran_on_spark(spark):
    """Issue #18: every template the demo's jobs execute on DuckDB (run, verify and report, in the
    audit test above) was executed on Spark by this module's tests, but the DuckDB backend's own.
    Runs last: it reads what the module's runs executed."""
    on_spark = {name for name, sql in RENDERED["module"] if sql in RAN_ON_SPARK}
    if not COMPLETED >= set(SPARK_RUNS) | DEMO_FILES:
        pytest.skip("reads what every Spark run and demo job of the module executed; some were deselected")
    missing = sorted(DEMO_TEMPLATES - on_spark - DUCKDB_BACKEND_OWN)
    assert missing == [], f"executed by the demo on DuckDB, never on Spark: {missing}"
    assert len(DEMO_TEMPLATES) > 100


