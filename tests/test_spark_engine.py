"""The Spark engine beyond the fixture jobs' releases (those are tests/test_spark.py's): the
generic verifiers, l-diversity and t-closeness, risk and the release order give DuckDB's
numbers; partitioned runs in executors, one task per fragment; publication that keeps the
previous release; a release schema. Skipped (with the reason) only without pyspark
or Java."""
from __future__ import annotations

import dataclasses
import json
import threading
import time

import duckdb
import pytest

import anon_duck
import anon_duck.api
from anon_duck.api import RunResult
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import load_job
from anon_duck.risk import risk_measures
from anon_duck.scratch import scratch
from anon_duck.sqlrender import environment, render
from anon_duck.verifiers import k_anonymity, kkm_anonymity, km_anonymity, l_diversity, lkc_privacy

from conftest import JOBS
from sparktest import copied_to_duckdb, copy_to_spark, local_spark, same, table_names, verdicts


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    with local_spark(tmp_path_factory) as backend:
        yield backend


def test_generic_verifiers_and_risk_give_the_same_numbers(spark):
    con = duckdb.connect()
    for job in ("toy_fulldomain.toml", "lkc_toy.toml", "disassociation_cba_toy.toml"):
        anon_duck.run(con, load_job(JOBS / job))
    con.execute("CREATE TABLE codes AS SELECT * FROM read_parquet('fixtures/001/toy_records.parquet')")
    con.execute("CREATE TABLE people AS SELECT DISTINCT pid, length(pid) % 2 AS g FROM codes")
    for t in ("toy_k2_release", "lkc_toy_release", "toy_cba_record_tokens", "codes", "people"):
        copy_to_spark(con, spark, t)
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
            assert verdicts([a]) == verdicts([b])
            bad = {key[0] for key, c in classes(dicts, ["q"], "s").items()
                   if l_violates(c, kwargs["kind"], kwargs["l"], kwargs.get("c"))}
            assert {v["q"] for v in b.violations} == bad
        for column, ordered in (("s", False), ("v", True)):
            a, b = (t_closeness(e, relation="lt", qis=["q"], sensitive=column, t=0.05, limit=100) for e in (db, spark))
            assert b.detail["ordered"] is ordered
            reference = Counter(r[column] for r in dicts)
            want = {key[0]: emd(c, reference, ordered) for key, c in classes(dicts, ["q"], column).items()}
            assert {v["q"]: v["emd"] for v in b.violations} == pytest.approx(want, abs=1e-12)
            same(verdicts([a]), verdicts([b]))
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
    copy_to_spark(con, spark, "toy_population")
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
        copied = copied_to_duckdb(spark, job, on_spark.tables)
        assert all(c.passed for c in anon_duck.verify(copied, job)), job_file
        fresh = duckdb.connect()
        assert anon_duck.run(fresh, job).tables == on_spark.tables
        for table in on_spark.tables:       # the same rows (their published order is the publisher's, tested above)
            rows = [sorted(c.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr) for c in (copied, fresh)]
            assert rows[0] == rows[1], table
        assert copied.execute(f'SELECT count(*) FROM "{on_spark.tables[0]}"').fetchone()[0] > 0


def test_fragments_run_one_task_each_with_adaptive_execution_on(spark):
    """Issue #31: with Spark's settings as the CLI starts a session (adaptive execution and
    code generation on), a partitioned run of three fragments runs three tasks,
    two at a time on local[2]; its release is the one DuckDB alone publishes. Counted by the
    status tracker, in the fragments' job group."""
    from anon_duck.backend.spark.fragments import JOB_GROUP
    from test_partition import _codes_job, _sized

    session = spark.spark
    defaults = ("spark.sql.adaptive.enabled", "spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")
    before = {key: session.conf.get(key) for key in defaults}
    tracker = session.sparkContext.statusTracker()
    con = duckdb.connect()
    job = _sized(_codes_job(con), 30).with_release("in_tasks")
    copy_to_spark(con, spark, "visits")

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
    copied = copied_to_duckdb(spark, job, result.tables)
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
        copy_to_spark(con, spark, t)
    on = {}
    for name, backend in (("duckdb", DuckDBBackend(con)), ("spark", spark)):
        backend.run("test: fragments", render("partition/fragments.sql.j2", target=scratch("t_frag"),
                                              person=("main", "people"), id="pid", paths=None, lead=None, lead_column=None,
                                              qis=["age", "sex"], codes=("main", "visits"), events=None),
                    {"fragments": 4, "n": 300})
        backend.run("test: ids", render("partition/id_map.sql.j2", target=scratch("t_ids"), domain="cluster", digits=3,
                                        columns=[(("main", "u1"), "a")]), {"key": "k3y"})
        quoted = ['.'.join(f'"{part}"' for part in scratch(t)) for t in ("t_frag", "t_ids")]
        on[name] = [sorted(backend.rows("test: rows", f"SELECT * FROM {table}")) for table in quoted]
    assert on["spark"] == on["duckdb"] and len(on["duckdb"][0]) == 300 and len(on["duckdb"][1]) == 600
    for t in ("people", "visits", "u1"):
        spark.run("test: drop copy", render("release/drop_table.sql.j2", target=("main", t)))


def test_tables_are_found_by_name_in_either_case_and_scratch_by_prefix(spark):
    """table_exists looks one name up (not a listing of the database, about 10 ms a table on a
    Hive metastore): a table of the current database or of a schema, in either case, and in
    the current database a session's temporary view; scratch_tables lists temporary views."""
    session = spark.spark
    session.sql("CREATE TABLE lookup_me AS SELECT 1 AS a")
    session.sql("CREATE DATABASE IF NOT EXISTS lookup_db")
    session.sql("CREATE TABLE lookup_db.in_schema AS SELECT 1 AS a")
    session.sql("SELECT 1 AS a").createOrReplaceTempView("_ad_lookup_view")
    try:
        assert spark.table_exists("lookup_me") and spark.table_exists("LOOKUP_ME")
        assert spark.table_exists("_ad_lookup_view") and not spark.table_exists("_ad_lookup_view", "lookup_db")
        assert spark.table_exists("in_schema", "lookup_db") and spark.table_exists("In_Schema", "lookup_db")
        assert not spark.table_exists("in_schema") and not spark.table_exists("lookup_me", "lookup_db")
        assert not spark.table_exists("lookup_me", "no_such_db")
        assert spark.scratch_tables(("temp", "main", "_ad_lookup")) == ["_ad_lookup_view"]
    finally:
        session.catalog.dropTempView("_ad_lookup_view")
        session.sql("DROP TABLE lookup_me")
        session.sql("DROP DATABASE lookup_db CASCADE")


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
    assert not [t for t in table_names(spark) if t.startswith("_ad_")]


def test_a_release_schema_on_spark_is_a_database_holding_the_whole_release(spark, tmp_path):
    """``[release] schema = "deid"``: database ``deid`` is created and holds the release's
    tables and views, staged ones included while publishing, and nothing of it is in the
    current database; it verifies and exports as DuckDB exports the same job."""
    job = load_job(JOBS / "artuc_toy.toml").with_release("in_schema")
    job = dataclasses.replace(job, release=dataclasses.replace(job.release, schema="deid"))
    before = table_names(spark)
    on_spark = anon_duck.run(spark.spark, job)
    assert on_spark.verified and all(c.passed for c in anon_duck.verify(spark.spark, job))
    names = anon_duck.release.ReleaseNames(job.release.name)
    assert table_names(spark, "deid") == \
        {*on_spark.tables, names.meta, *(names.view(v) for v in anon_duck.release.analyst_views(job))}
    assert table_names(spark) == before
    fresh = duckdb.connect()
    anon_duck.run(fresh, job)
    mine = {f.name: f.read_text() for f in anon_duck.export(spark.spark, job, tmp_path / "spark.csv")}
    assert mine == {f.name: f.read_text() for f in anon_duck.export(fresh, job, tmp_path / "duckdb.csv")}
