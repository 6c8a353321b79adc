"""The Spark engine, second module (tests/spark_support.py says why two): the generic verifiers
and risk measures, the release order, the CLI with --engine spark, publication without
transactions, and the audit of every fixture job that neither runs on Spark end to end nor is
one of the demo's (test_spark.py) give DuckDB's verdicts and numbers on local Spark."""
from __future__ import annotations

import json

import duckdb
import pytest

import anon_duck
import anon_duck.api
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import load_job
from anon_duck.risk import risk_measures
from anon_duck.sqlrender import environment, render
from anon_duck.verifiers import k_anonymity, kkm_anonymity, km_anonymity, l_diversity, lkc_privacy

from conftest import ALL_JOBS, JOBS
from spark_support import DEMO_FILES, SPARK_RUNS, audit_on_spark, copy_table, leaves, same, spark  # noqa: F401


def test_generic_verifiers_and_risk_give_the_same_numbers(spark):
    con = duckdb.connect()
    for job in ("toy_fulldomain.toml", "lkc_toy.toml", "disassociation_cba_toy.toml"):
        anon_duck.run(con, load_job(JOBS / job))
    con.execute("CREATE TABLE codes AS SELECT * FROM read_parquet('fixtures/001/toy_records.parquet')")
    con.execute("CREATE TABLE people AS SELECT DISTINCT pid, length(pid) % 2 AS g FROM codes")
    for t in ("toy_k2_release", "lkc_toy_release", "toy_cba_record_tokens", "codes", "people"):
        copy_table(con, spark, t)
    db = DuckDBBackend(con)
    toy = ["age", "sex", "zip"]
    calls = [
        (k_anonymity, dict(relation="toy_k2_release", qis=toy, k=3)),
        (l_diversity, dict(relation="toy_k2_release", qis=toy, sensitive="disease", l=2)),
        (lkc_privacy, dict(relation="lkc_toy_release", qis=["Job", "Sex", "Age"], sensitive="Surgery",
                           sensitive_values=["Transgender"], L=2, K=3, C=0.5)),
        (lkc_privacy, dict(relation="lkc_toy_release", qis=["Job", "Sex", "Age"], sensitive="Surgery", L=3, K=2,
                           C="1/3", paranoid=True)),
        (km_anonymity, dict(relation="codes", id_col="pid", code_col="code", k=3, m=2)),
        (km_anonymity, dict(relation="toy_cba_record_tokens", id_col="record_id", code_col="token", k=3, m=2,
                            group_cols=["cluster_id"])),
        (kkm_anonymity, dict(relation="people", qis=["g"], codes_relation="codes", id_col="pid", code_col="code",
                             k=2, m=2)),
    ]
    for check, kwargs in calls:
        a, b = check(db, **kwargs), check(spark, **kwargs)
        assert (a.passed, a.n_violations, a.violations, a.detail) == (b.passed, b.n_violations, b.violations,
                                                                        b.detail), check.__name__
        assert a.n_violations > 0 or check is km_anonymity, f"{check.__name__}: a check that cannot fail here"
    assert risk_measures(db, relation="toy_k2_release", qis=toy, k=3) == \
        risk_measures(spark, relation="toy_k2_release", qis=toy, k=3)
    for t in ("toy_k2_release", "lkc_toy_release", "toy_cba_record_tokens", "codes", "people"):
        spark.run("test: drop copy", render("release/drop_table.sql.j2", target=("main", t)))


def test_the_risk_of_an_input_is_the_same_on_spark(spark):
    """api.risk on Spark: the QI measures with a population table (journalist, marketer) and a
    population size (Pitman, Zayatz), the drivers, code sets and trajectories of toy jobs."""
    con = duckdb.connect()
    con.execute("CREATE TABLE toy_population AS SELECT CAST(age AS BIGINT) AS age, sex, zip "
                "FROM read_csv('fixtures/toy/patients.csv', all_varchar = true), range(3) AS r(copy) "
                "WHERE copy < 2 OR zip = '13053'")
    copy_table(con, spark, "toy_population")
    toy = load_job(JOBS / "toy_fulldomain.toml")
    calls = [(toy, dict(population_table="toy_population", thresholds=[0.5, 1 / 3])), (toy, dict(population_size=40)),
             (load_job(JOBS / "artuc_toy.toml"), {}), (load_job(JOBS / "longitudinal_toy.toml"), {})]
    for job, kwargs in calls:
        on_duckdb = anon_duck.api.risk(con, job, **kwargs)
        assert leaves(anon_duck.api.risk(spark.spark, job, **kwargs)) == leaves(on_duckdb), job.method
    assert on_duckdb["events"]["n_persons"] == 6
    spark.run("test: drop copy", render("release/drop_table.sql.j2", target=("main", "toy_population")))


def test_the_release_order_is_the_same_on_both_engines(spark):
    """sql/lib/release_order.jinja on values both engines print differently (1e-05 is 1.0E-5 on
    Spark) or compare with care (NaN, -0.0, infinities, NULLs, lists with NULLs, decimals, dates,
    unicode): the seeded order of 400 random rows, and the sorted one, are the same on DuckDB and
    Spark (the rows are told apart by their last column). One column's text spelled differently
    on one engine moves its rows."""
    import random

    rng = random.Random(7)
    floats = [1e-05, -0.0, 0.0, 0.1, -2.5, 1e300, -1e300, float("inf"), float("-inf"), float("nan"), 123456.789,
              2.0 ** -70, 4.5e18, 1 / 3, None]
    texts = ["", "a", "ä:b", "x\ty", "1.0E-5", None]
    rows = [(rng.choice(texts), rng.choice([None, -3, 0, 2 ** 31 - 1]), rng.choice(floats),
             rng.choice([None, "1.500", "-0.250", "0.000"]), rng.choice([None, True, False]),
             rng.choice([None, "2020-02-29", "1970-01-01"]), rng.choice([None, [], ["a", None], ["b", "a"]]),
             rng.choice([None, [1, 2], [None], []]), i) for i in range(400)]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (s VARCHAR, i INTEGER, d DOUBLE, m DECIMAL(6, 3), f BOOLEAN, day DATE, l VARCHAR[],"
                " n INTEGER[], id INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    spark.spark.createDataFrame(con.sql("SELECT * FROM t").to_arrow_table()).write.saveAsTable("t")
    try:
        orders = []
        for seeded in (True, False):
            ordered = {}
            for name, engine in (("duckdb", DuckDBBackend(con)), ("spark", spark)):
                sql = environment().from_string(
                    "{% from 'lib/release_order.jinja' import in_release_order %}"
                    "{{ in_release_order(('main', 't'), columns, seeded, 11) }}").render(
                    seeded=seeded, columns=list(engine.columns("test", ("main", "t")).items()))
                ordered[name] = [r[-1] for r in engine.rows("test: order", sql)]
            assert ordered["duckdb"] == ordered["spark"], seeded
            orders.append(ordered["duckdb"])
        assert orders[0] != orders[1] and sorted(orders[0]) == list(range(400))
    finally:
        spark.spark.sql("DROP TABLE t")


@pytest.mark.slow
@pytest.mark.parametrize("job_path", [p for p in ALL_JOBS if p.name not in SPARK_RUNS and p.name not in DEMO_FILES],
                         ids=lambda p: p.stem)
def test_every_other_fixture_jobs_release_made_on_duckdb_verifies_identically_on_spark(spark, job_path):
    """Issue #18 for every fixture job that test_spark.py neither runs on Spark nor audits."""
    audit_on_spark(spark, job_path)


def test_cli_runs_verifies_reports_and_exports_on_spark(spark, tmp_path, capsys):
    """Issue #18's first "done when": run, verify and report with ``--engine spark`` succeed on
    the warehouse folder, and export gives the rows the DuckDB run of the same job exports."""
    from anon_duck.cli import main

    job = str(JOBS / "toy_fulldomain.toml")
    warehouse = spark.spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    spark_args = ["--engine", "spark", "--db", warehouse]
    assert main(["run", job, *spark_args]) == 0
    assert main(["verify", job, *spark_args]) == 0
    assert "k_anonymity: pass" in capsys.readouterr().out
    assert main(["report", job, "--json", *spark_args]) == 0
    on_spark = json.loads(capsys.readouterr().out)
    assert main(["export", job, *spark_args, "--to", str(tmp_path / "spark.csv")]) == 0
    database = str(tmp_path / "d.duckdb")
    assert main(["run", job, "--db", database]) == 0
    assert main(["export", job, "--db", database, "--to", str(tmp_path / "duckdb.csv")]) == 0
    capsys.readouterr()
    assert main(["report", job, "--json", "--db", database]) == 0
    same(on_spark, json.loads(capsys.readouterr().out))
    rows = {engine: sorted(duckdb.sql(f"SELECT * FROM read_csv('{tmp_path / engine}.csv/toy_k2_release.csv')")
                           .fetchall()) for engine in ("spark", "duckdb")}
    assert rows["spark"] == rows["duckdb"] and len(rows["spark"]) == 12
    assert spark.spark.sparkContext._jsc is not None      # the session the test runs stays up


def test_cli_refuses_a_folder_without_a_warehouse(tmp_path, capsys):
    from anon_duck.cli import main

    assert main(["verify", str(JOBS / "toy_fulldomain.toml"), "--engine", "spark", "--db", str(tmp_path)]) == 2
    assert "no Spark warehouse here" in capsys.readouterr().err
    assert main(["verify", str(JOBS / "toy_fulldomain.toml"), "--spark-master", "local[1]", "--db", "x.duckdb"]) == 2
    assert "--spark-master needs --engine spark" in capsys.readouterr().err


def test_without_pyspark_or_java_engine_spark_names_what_to_install(monkeypatch, tmp_path, capsys):
    """Exit 2 with the missing piece named; runs with or without Spark installed."""
    import builtins

    from anon_duck.cli import main

    job = str(JOBS / "toy_fulldomain.toml")
    real_import = builtins.__import__

    def no_pyspark(name, *args, **kwargs):
        if name.startswith("pyspark"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(builtins, "__import__", no_pyspark)
        assert main(["run", job, "--engine", "spark", "--db", str(tmp_path / "w")]) == 2
    assert "pip install 'anon-duck[spark]'" in capsys.readouterr().err
    pytest.importorskip("pyspark")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert main(["run", job, "--engine", "spark", "--db", str(tmp_path / "w")]) == 2
    assert "needs Java 17" in capsys.readouterr().err


def test_a_failed_publication_on_spark_keeps_the_previous_release(spark, monkeypatch):
    """Spark has no transaction: tables are written under staging names and swapped in only when
    all are written; a failure before the swap leaves the previous release whole and drops the
    staged tables."""
    from anon_duck.backend.spark import SparkBackend
    from anon_duck.scratch import staging

    job = load_job(JOBS / "toy_fulldomain.toml").with_release("kept_on_spark")
    anon_duck.run(spark.spark, job)
    before = sorted(map(tuple, spark.spark.table("kept_on_spark_release").collect()))
    real = SparkBackend.write_table

    def failing(self, name, columns):
        if tuple(name) == staging("kept_on_spark_meta"):
            raise RuntimeError("disk full")
        return real(self, name, columns)
    monkeypatch.setattr(SparkBackend, "write_table", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        anon_duck.run(spark.spark, job.with_params(k=3))
    assert sorted(map(tuple, spark.spark.table("kept_on_spark_release").collect())) == before
    assert json.loads(dict(spark.rows("meta", "SELECT key, value FROM main.kept_on_spark_meta"))["params"])["k"] == 2
    assert not [t.name for t in spark.spark.catalog.listTables() if t.name.startswith("_ad_")]
