"""The Spark engine (anon_duck/backend/spark.py): templates written once in DuckDB's dialect,
adapted for Spark on sqlglot's syntax tree, give the same verifier verdicts and numbers on local
Spark as on DuckDB for the same release. Skipped (with the reason) only without pyspark or Java."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import threading
import time
from pathlib import Path

import duckdb
import pytest

import anon_duck
import anon_duck.api
from anon_duck.api import RunResult
from anon_duck.release import release_tables, view_sql as _view_sql
from anon_duck.methods import get_method
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.backend.spark import Action, to_spark
from anon_duck.demo import DEMO_JOBS
from anon_duck.job import load_job
from anon_duck.risk import risk_measures
from anon_duck.scratch import scratch
from anon_duck.sqlrender import environment, recording, render, template_names
from anon_duck.verifiers import k_anonymity, kkm_anonymity, km_anonymity, l_diversity, lkc_privacy

from conftest import ALL_JOBS, JOBS


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


# (template, rendered statement) of every rendering in this module, the statements Spark ran,
# and the templates the demo's jobs execute on DuckDB (run, verify, report)
RENDERED: dict[str, list[tuple[str, str]]] = {}
RAN_ON_SPARK: set[str] = set()
DEMO_TEMPLATES: set[str] = set()
COMPLETED: set[str] = set()     # the tests whose runs the last test reads


def _recorded(execute, ran: set[str]):
    def recorded(self, stage, sql, params):
        ran.add(sql)
        return execute(self, stage, sql, params)
    return recorded


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install -e '.[spark]'")
    if not shutil.which("java"):
        pytest.skip("Spark needs Java 17+, and no java is on PATH")
    from anon_duck.backend.spark import SparkBackend, spark_session
    session = spark_session(tmp_path_factory.mktemp("warehouse"), master="local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    # tiny tables: adaptive planning and whole-stage code generation cost more than they save
    session.conf.set("spark.sql.adaptive.enabled", "false")
    session.conf.set("spark.sql.codegen.wholeStage", "false")
    session.sparkContext.setLogLevel("ERROR")
    with recording() as rendered, pytest.MonkeyPatch.context() as patch:
        patch.setattr(SparkBackend, "_execute", _recorded(SparkBackend._execute, RAN_ON_SPARK))
        RENDERED["module"] = rendered
        yield SparkBackend(session)
    session.stop()


def _copy(con: duckdb.DuckDBPyConnection, spark, name: tuple[str, ...] | str) -> None:
    """A DuckDB table into the Spark warehouse under the same name, through numpy/Arrow."""
    parts = (name,) if isinstance(name, str) else name
    spark.write_table(parts, con.execute("SELECT * FROM " + ".".join(f'"{p}"' for p in parts)).fetchnumpy())


def test_generic_verifiers_and_risk_give_the_same_numbers(spark):
    con = duckdb.connect()
    for job in ("toy_fulldomain.toml", "lkc_toy.toml", "disassociation_cba_toy.toml"):
        anon_duck.run(con, load_job(JOBS / job))
    con.execute("CREATE TABLE codes AS SELECT * FROM read_parquet('fixtures/001/toy_records.parquet')")
    con.execute("CREATE TABLE people AS SELECT DISTINCT pid, length(pid) % 2 AS g FROM codes")
    for t in ("toy_k2_release", "lkc_toy_release", "toy_cba_record_tokens", "codes", "people"):
        _copy(con, spark, t)
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
        (kkm_anonymity, dict(relation="people", qis=["g"], codes_relation="codes", id_col="pid", code_col="code",
                             k=2, m=3, limit=3)),
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


def test_l_diversity_kinds_and_t_closeness_on_spark_equal_their_definitions(spark):
    """Issue #32 part 2: the l-diversity kinds and both EMDs, NULLs included (issue #29 item 11),
    give on Spark the verdicts and numbers of DuckDB and of the definitions in plain Python."""
    import random
    from collections import Counter

    from privacy_brute import classes, emd, l_violates
    from anon_duck.verifiers import t_closeness

    rng = random.Random(3)
    rows = [(rng.choice(["x", "y", None]), rng.choice(["flu", "hiv", "copd", None]), rng.choice([1, 2, 3, 5, None]))
            for _ in range(60)]
    con = duckdb.connect()
    con.execute("CREATE TABLE lt (q VARCHAR, s VARCHAR, v INTEGER)")
    con.executemany("INSERT INTO lt VALUES (?, ?, ?)", rows)
    # through Arrow, which keeps an INTEGER column's NULLs (numpy would mask them)
    spark.spark.createDataFrame(con.sql("SELECT * FROM lt").to_arrow_table()).write.saveAsTable("lt")
    db = DuckDBBackend(con)
    dicts = [dict(zip("qsv", r)) for r in rows]
    try:
        for kwargs in (dict(l=2, kind="distinct"), dict(l=3, kind="entropy"), dict(l=2, kind="recursive", c=1.5)):
            a, b = (l_diversity(e, relation="lt", qis=["q"], sensitive="s", limit=100, **kwargs) for e in (db, spark))
            assert _checks([a]) == _checks([b])
            bad = {key[0] for key, c in classes(dicts, ["q"], "s").items()
                   if l_violates(c, kwargs["kind"], kwargs["l"], kwargs.get("c"))}
            assert {v["q"] for v in b.violations} == bad
        for column, ordered in (("s", False), ("v", True)):
            a, b = (t_closeness(e, relation="lt", qis=["q"], sensitive=column, t=0.05, limit=100) for e in (db, spark))
            assert b.detail["ordered"] is ordered
            reference = Counter(r[column] for r in dicts)
            want = {key[0]: emd(c, reference, ordered) for key, c in classes(dicts, ["q"], column).items()}
            assert {v["q"]: v["emd"] for v in b.violations} == pytest.approx(want, abs=1e-12)
            _same(_checks([a]), _checks([b]))
    finally:
        spark.run("test: drop copy", render("release/drop_table.sql.j2", target=("main", "lt")))


def _leaves(tree, path: str = "") -> dict:
    """Every number and label of a nested dict/list, by its path (floats compared approximately:
    the engines sum in different orders)."""
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in _leaves(sub, f"{path}.{key}").items()}
    if isinstance(tree, list):
        return {k: v for i, sub in enumerate(tree) for k, v in _leaves(sub, f"{path}[{i}]").items()}
    return {path: pytest.approx(tree, rel=1e-12) if isinstance(tree, float) else tree}


def test_the_risk_of_an_input_is_the_same_on_spark(spark):
    """api.risk on Spark: the QI measures with a population table (journalist, marketer), the
    drivers, and trajectories of toy jobs."""
    con = duckdb.connect()
    con.execute("CREATE TABLE toy_population AS SELECT CAST(age AS BIGINT) AS age, sex, zip "
                "FROM read_csv('fixtures/toy/patients.csv', all_varchar = true), range(3) AS r(copy) "
                "WHERE copy < 2 OR zip = '13053'")
    _copy(con, spark, "toy_population")
    toy = load_job(JOBS / "toy_fulldomain.toml")
    # a population size's estimates (Pitman, Zayatz) are fitted in Python on the class sizes the
    # first call measures on the engine; code sets use rare_itemsets, compared above (k^m)
    calls = [(toy, dict(population_table="toy_population", thresholds=[0.5, 1 / 3])),
             (load_job(JOBS / "longitudinal_toy.toml"), {})]
    for job, kwargs in calls:
        on_duckdb = anon_duck.api.risk(con, job, **kwargs)
        assert _leaves(anon_duck.api.risk(spark.spark, job, **kwargs)) == _leaves(on_duckdb), job.method
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


def _same(a, b, path: str = "") -> None:
    """Equal numbers, floats to 1e-9 relative: a sum of doubles depends on the order the engine
    adds them in (DuckDB's threads as much as Spark's partitions)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12, nan_ok=True), path
    else:
        assert a == b, path


def _checks(checks) -> list[tuple]:
    return [(c.name, c.passed, c.n_violations, c.violations, c.detail) for c in checks]


# one toy job per method, CBA (a method of its own) and LKC's grown intervals (the templates of
# numeric_split = 'best_valid', which the demo's LKC job runs): each runs end to end on Spark;
# counterfeit_toy_intervals is audited on Spark below
SPARK_RUNS = ["toy_fulldomain.toml", "lkc_toy.toml", "lkc_grown_toy.toml", "counterfeit_toy.toml", "artuc_toy.toml",
              "disassociation_toy.toml", "disassociation_cba_toy.toml", "longitudinal_toy.toml", "mondrian_toy.toml"]
# each method's report compared on both engines (about 10 s each on Spark); fulldomain's whole
# report document is compared by the CLI test (report --json)
REPORTED = {"lkc_toy.toml", "counterfeit_toy.toml", "artuc_toy.toml", "disassociation_toy.toml",
            "longitudinal_toy.toml", "mondrian_toy.toml"}
# inspect profiles the input whatever the method: compared once per kind of input (QIs and a
# sensitive column, code sets, event sequences; about 5 s each on Spark)
INSPECTED = {"lkc_toy.toml", "disassociation_toy.toml", "longitudinal_toy.toml"}


DEMO_FILES = {file for _, file in DEMO_JOBS}
# disassociation_informs is audited as disassociation_bms is: the same method's release tables and
# verifier templates on another dataset (as artuc_informs_uc2..uc9 are represented by uc1); so are
# omop_disassociation and omop_artuc (a release from OMOP input has the method's usual tables;
# the OMOP derivation itself runs on Spark in test_an_omop_job_runs_on_spark_...)
AUDITED_AS = ["disassociation_informs.toml", "omop_disassociation.toml", "omop_artuc.toml"]


@pytest.mark.slow
@pytest.mark.parametrize("job_path", [p for p in ALL_JOBS if p.name not in SPARK_RUNS + AUDITED_AS],
                         ids=lambda p: p.stem)
def test_every_fixture_jobs_release_made_on_duckdb_verifies_identically_on_spark(spark, job_path):
    """Issue #18: the release a job publishes on DuckDB, copied to the Spark warehouse, gets the
    same verdict, violations and numbers from ``anon_duck.verify`` on Spark, which prepares the
    job's inputs with Spark's reader and runs every check of the method's audit there. (The toy
    jobs run on Spark itself below, and their releases are verified on both engines there.)"""
    job = load_job(job_path)
    con = duckdb.connect()
    demo = job_path.name in DEMO_FILES
    with recording() if demo else contextlib.nullcontext([]) as rendered:
        anon_duck.run(con, job)
        on_duckdb = anon_duck.verify(con, job)
        if demo:                          # what the demo executes, for the last test
            anon_duck.report(con, job)
    DEMO_TEMPLATES.update(name for name, _ in rendered)
    for name in [f"{job.release.name}_{s}" for s in release_tables(DuckDBBackend(con), job)] + \
            [f"{job.release.name}_meta"]:
        _copy(con, spark, name)
    for view in get_method(job.method).views:        # the analyst views, defined over the copies
        spark.run("test: view", _view_sql(job, view, "create"))
    on_spark = anon_duck.verify(spark.spark, job)
    assert _checks(on_duckdb) == _checks(on_spark)
    assert on_spark and all(c.passed for c in on_spark)
    COMPLETED.add(job_path.name)


def _copied_to_duckdb(spark, job, tables: list[str]) -> duckdb.DuckDBPyConnection:
    """A release published on Spark (its tables, metadata and analyst views) in a new DuckDB."""
    con = duckdb.connect()
    for table in tables + [f"{job.release.name}_meta"]:
        con.register("arrow", spark.spark.table(f"`{table}`").toArrow())
        con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM arrow')
        con.unregister("arrow")
    for view in get_method(job.method).views:
        con.execute(_view_sql(job, view, "create"))
    return con


@pytest.mark.slow
@pytest.mark.parametrize("job_file", SPARK_RUNS)
def test_every_method_runs_on_spark_and_duckdb_accepts_its_release(spark, job_file, tmp_path):
    """``anon_duck.run`` on a SparkSession: inputs read by Spark's reader, hierarchies, the
    method, the verifier gate and the staged publication all on Spark. The release, copied back
    to DuckDB, passes DuckDB's verifier with the same numbers (the reverse of the test above);
    every method publishes the release DuckDB publishes for the same job and seed: the Parquet
    exports are the same bytes, analyst views included (the CSV exports are compared by the CLI
    and release-schema tests below); report and inspect give the same numbers on both engines
    for this one release."""
    job = load_job(JOBS / job_file).with_release("on_spark_" + job_file.removesuffix(".toml"))
    on_spark = anon_duck.run(spark.spark, job)
    assert on_spark.verified
    con = _copied_to_duckdb(spark, job, on_spark.tables)
    checked = anon_duck.verify(con, job)
    assert _checks(checked[:-1]) == _checks(on_spark.checks)
    assert _checks(checked[-1:]) == _checks([anon_duck.release.check_views(spark, job)])     # analyst_views
    assert checked[-1].name == "analyst_views" and checked[-1].passed
    assert not spark.scratch_tables(("temp", "main", "_ad_"))          # the session's scratch is gone
    assert not [t.name for t in spark.spark.catalog.listTables() if t.name.startswith("_ad_")]  # and staging
    fresh = duckdb.connect()
    anon_duck.run(fresh, job)
    files = {engine: anon_duck.export(c, job, tmp_path / f"{engine}.parquet")
             for engine, c in (("spark", spark.spark), ("duckdb", fresh))}
    assert [f.name for f in files["spark"]] == [f.name for f in files["duckdb"]] and files["spark"]
    for on_spark_file, on_duckdb_file in zip(files["spark"], files["duckdb"]):
        assert on_spark_file.read_bytes() == on_duckdb_file.read_bytes(), on_spark_file.name
    if job_file in REPORTED:
        _same(anon_duck.report(con, job), anon_duck.report(spark.spark, job))
    if job_file in INSPECTED:
        _same(anon_duck.inspect(con, job), anon_duck.inspect(spark.spark, job))
    COMPLETED.add(job_file)


def test_the_frequent_itemset_search_is_exact_on_spark(spark):
    """The "sup" policy's level-wise search (sql/disassociation/frequent_level.sql.j2) on Spark
    finds what brute force finds (as on DuckDB: tests/test_disassociation_itemsets.py)."""
    from test_disassociation_itemsets import frequent_search_is_exact
    frequent_search_is_exact(spark, seed=5, sigma=6)


def test_partitioned_runs_in_spark_executors_publish_what_duckdb_publishes(spark):
    """[settings] partition_size on Spark (docs/scale.md): each fragment anonymized in an executor
    on its own DuckDB, the union renumbered and verified on Spark. The release passes DuckDB's
    verifier too, and holds the rows the same partitioned job publishes on DuckDB alone."""
    for job_file, size in (("disassociation_toy.toml", 6), ("artuc_toy.toml", 4)):
        job = load_job(JOBS / job_file).with_release("part_" + job_file.removesuffix(".toml"))
        # the toy's explicit policy names codes some fragment lacks (each keeps those it holds)
        job = dataclasses.replace(job, settings=dataclasses.replace(job.settings, partition_size=size))
        on_spark = anon_duck.run(spark.spark, job)
        assert on_spark.verified and on_spark.facts["partition"]["fragments"] == 2
        copied = _copied_to_duckdb(spark, job, on_spark.tables)
        assert all(c.passed for c in anon_duck.verify(copied, job)), job_file
        fresh = duckdb.connect()
        assert anon_duck.run(fresh, job).tables == on_spark.tables
        for table in on_spark.tables:       # the same rows (their published order is the publisher's, tested above)
            rows = [sorted(c.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr) for c in (copied, fresh)]
            assert rows[0] == rows[1], table
        assert copied.execute(f'SELECT count(*) FROM "{on_spark.tables[0]}"').fetchone()[0] > 0


def test_fragments_run_one_task_each_with_adaptive_execution_on(spark):
    """Issue #31: with Spark's settings as the CLI starts a session (adaptive execution and
    whole-stage code generation on), a partitioned run of three fragments runs three tasks,
    two at a time on local[2]; its release is the one DuckDB alone publishes. Counted by the
    status tracker, in the fragments' job group."""
    from anon_duck.backend.spark.fragments import JOB_GROUP
    from test_partition import _codes_job, _sized

    session = spark.spark
    defaults = ("spark.sql.adaptive.enabled", "spark.sql.codegen.wholeStage")
    before = {key: session.conf.get(key) for key in defaults}
    tracker = session.sparkContext.statusTracker()
    con = duckdb.connect()
    job = _sized(_codes_job(con), 30).with_release("in_tasks")
    _copy(con, spark, "visits")

    def run_watched() -> tuple[RunResult, list[int], int]:
        """One run, its fragment stages' task counts, and the most tasks seen active at once."""
        earlier = set(tracker.getJobIdsForGroup(JOB_GROUP))
        peak, stop = [0], threading.Event()

        def watch() -> None:
            while not stop.is_set():
                stages = [tracker.getStageInfo(s) for j in set(tracker.getJobIdsForGroup(JOB_GROUP)) - earlier
                          if (info := tracker.getJobInfo(j)) is not None for s in info.stageIds]
                peak[0] = max(peak[0], sum(s.numActiveTasks for s in stages if s is not None))
                time.sleep(0.005)
        watcher = threading.Thread(target=watch, daemon=True)
        try:
            for key in defaults:
                session.conf.unset(key)
            assert session.conf.get("spark.sql.adaptive.enabled") == "true"
            watcher.start()
            result = anon_duck.run(session, job)
        finally:
            stop.set()
            for key, value in before.items():
                session.conf.set(key, value)
        watcher.join()
        jobs = sorted(set(tracker.getJobIdsForGroup(JOB_GROUP)) - earlier)
        return result, [tracker.getStageInfo(s).numTasks for j in jobs for s in tracker.getJobInfo(j).stageIds], peak[0]

    # three tasks, more than one at a time (the tracker's snapshot of a stage can count a task
    # that is finishing beside the one starting on its core, so the peak may read 3 on 2 cores).
    # The watcher samples the tracker over py4j: on a machine busy with other tests it can miss
    # a short overlap, so a run that shows none is repeated, up to three runs
    for _ in range(3):
        result, tasks, peak = run_watched()
        assert result.verified and result.facts["partition"]["fragments"] == 3
        assert tasks == [3]
        if peak >= 2:
            break
    assert peak >= 2
    duck = duckdb.connect()
    _codes_job(duck)
    anon_duck.run(duck, job)
    copied = _copied_to_duckdb(spark, job, result.tables)
    for table in result.tables:
        rows = [sorted(c.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr) for c in (copied, duck)]
        assert rows[0] == rows[1], table
    spark.run("test: drop copy", render("release/drop_table.sql.j2", target=("main", "visits")))


def test_fragment_and_id_ranks_are_the_same_on_spark(spark):
    """The partition's two ranks over all persons (sql/partition/fragments.sql.j2, id_map.sql.j2),
    computed per block and per hash bucket so that Spark spreads their windows over tasks, give
    DuckDB's numbers: NULL quasi-identifiers and persons without codes included."""
    con = duckdb.connect()
    # VARCHAR quasi-identifiers: _copy writes fetched numpy, in which a NULL number is NaN
    con.execute("""CREATE TABLE people AS SELECT 'p' || i AS pid, CASE WHEN i % 11 = 0 THEN NULL ELSE 'a' || (i % 7) END AS age,
                       CASE WHEN i % 13 = 0 THEN NULL ELSE ['f', 'm'][1 + i % 2] END AS sex FROM range(300) t(i)""")
    con.execute("CREATE TABLE visits AS SELECT 'p' || i AS id, 'c' || ((i * j) % 5) AS code "
                "FROM range(300) t(i), range(1 + i % 3) s(j) WHERE i % 17 <> 0")
    con.execute("CREATE TABLE u1 AS SELECT i % 3 AS _fragment, 1 + i // 3 AS a FROM range(600) t(i)")
    for t in ("people", "visits", "u1"):
        _copy(con, spark, t)
    on = {}
    for name, backend in (("duckdb", DuckDBBackend(con)), ("spark", spark)):
        backend.run("test: fragments", render("partition/fragments.sql.j2", target=scratch("t_frag"),
                                              person=("main", "people"), id="pid", paths=None, qis=["age", "sex"],
                                              codes=("main", "visits"), events=None), {"fragments": 4, "n": 300})
        backend.run("test: ids", render("partition/id_map.sql.j2", target=scratch("t_ids"), domain="cluster", digits=3,
                                        columns=[(("main", "u1"), "a")]), {"key": "k3y"})
        quoted = ['.'.join(f'"{part}"' for part in scratch(t)) for t in ("t_frag", "t_ids")]
        on[name] = [sorted(backend.rows("test: rows", f"SELECT * FROM {table}")) for table in quoted]
    assert on["spark"] == on["duckdb"] and len(on["duckdb"][0]) == 300 and len(on["duckdb"][1]) == 600
    for t in ("people", "visits", "u1"):
        spark.run("test: drop copy", render("release/drop_table.sql.j2", target=("main", t)))


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
    on_duckdb = json.loads(capsys.readouterr().out)
    # what differs by design: when each report was made, and by which engine
    assert on_spark["provenance"].pop("engine").startswith("Spark ")
    assert on_duckdb["provenance"].pop("engine").startswith("DuckDB ")
    on_spark["provenance"].pop("made_at"), on_duckdb["provenance"].pop("made_at")
    _same(on_spark, on_duckdb)
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
DUCKDB_BACKEND_OWN = {name for name in template_names() if name.startswith("engines/duckdb/")} | {
    # exports are written by DuckDB's writers on every engine (Spark's release is copied into an
    # in-memory DuckDB first: backend.local_copy)
    "release/export_file.sql.j2", "release/copy_view.sql.j2", "release/attach.sql.j2", "release/detach.sql.j2",
    # DuckDB copies a seeded release table beyond its sort budget in chunks (release/order.py);
    # Spark's sort spills, so it publishes in one statement (release/publish_table)
    "release/row_bytes.sql.j2", "release/order_keys.sql.j2", "release/order_chunks.sql.j2",
    "release/copy_chunk.sql.j2"}


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


@pytest.mark.slow
def test_the_omop_export_runs_every_method_on_spark(spark):
    """#30: fixtures/omop_export (upper-case file names and headers, a vocabulary trimmed to
    the used condition concepts, concept 0, a polyhierarchy) on Spark: each of the five methods
    runs from ``[input.omop] path =`` alone and verifies there, with DuckDB's warnings and facts;
    the same from a schema whose tables have upper-case columns for one person-table method and
    one code method (reading a schema is the OMOP expansion's, the same for every method; the
    five methods from a schema are tested on DuckDB: tests/test_omop_export.py)."""
    from test_omop_export import EXPORT, METHODS, export_job, schema_job
    spark.spark.sql("CREATE DATABASE IF NOT EXISTS cdm")
    with duckdb.connect() as con:
        for path in sorted(EXPORT.glob("*.csv")):
            text = ", types = {'ZIP': 'VARCHAR'}" if path.stem == "LOCATION" else ""     # zip codes keep their zeros
            spark.write_table(("cdm", path.stem), con.execute(
                f"SELECT * FROM read_csv(?, header = true{text})", [str(path)]).fetchnumpy())
    assert "PERSON_ID" in spark.spark.table("cdm.person").columns
    for method in METHODS:
        job = export_job(method, release=f"spark_export_{method}")
        result = anon_duck.run(spark.spark, job)
        assert result.verified and all(c.passed for c in anon_duck.verify(spark.spark, job)), method
        on_duckdb = anon_duck.run(duckdb.connect(), job)
        assert result.warnings == on_duckdb.warnings and len(result.warnings) in (1, 2), method
        assert _rounded(result.facts) == _rounded(on_duckdb.facts), method     # sums of floats: another order
        if method in ("fulldomain", "disassociation"):
            again = anon_duck.run(spark.spark, schema_job(method, "cdm", f"spark_schema_{method}"))
            assert again.verified and again.warnings == result.warnings, method
            assert _rounded(again.facts) == _rounded(result.facts), method


def _rounded(value):
    """Facts with every float to 9 significant digits (engines add floats in different orders)."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def test_a_release_schema_on_spark_is_a_database_holding_the_whole_release(spark, tmp_path):
    """``[release] schema = "deid"``: database ``deid`` is created and holds the release's
    tables and views, staged ones included while publishing, and nothing of it is in the
    current database; it verifies and exports as DuckDB exports the same job."""
    job = load_job(JOBS / "artuc_toy.toml").with_release("in_schema")
    job = dataclasses.replace(job, release=dataclasses.replace(job.release, schema="deid"))
    before = {t.name for t in spark.spark.catalog.listTables()}
    on_spark = anon_duck.run(spark.spark, job)
    assert on_spark.verified and all(c.passed for c in anon_duck.verify(spark.spark, job))
    names = anon_duck.release.ReleaseNames(job.release.name)
    assert {t.name for t in spark.spark.catalog.listTables("deid")} == \
        {*on_spark.tables, names.meta, *(names.view(v) for v in anon_duck.release.analyst_views(job))}
    assert {t.name for t in spark.spark.catalog.listTables()} == before
    fresh = duckdb.connect()
    anon_duck.run(fresh, job)
    mine = {f.name: f.read_text() for f in anon_duck.export(spark.spark, job, tmp_path / "spark.csv")}
    assert mine == {f.name: f.read_text() for f in anon_duck.export(fresh, job, tmp_path / "duckdb.csv")}
