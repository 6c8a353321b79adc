"""What the Spark test modules share: a local Spark session per module (tiny-table settings) that
records every statement Spark executes, copies of DuckDB tables into the warehouse, the
comparisons of numbers across engines, and the audit of a fixture job's release on Spark.

The Spark tests are two modules so that a parallel run (pytest -n 2 --dist loadfile, the
README's command) gives each its own worker and Spark session: Spark's statements are
latency-bound on tiny tables, so two sessions side by side finish in about half the time.
test_spark.py runs every method and the demo's jobs (and checks that every template the demo
executes ran on Spark); test_spark_checks.py the verifiers, risk, CLI, publication and the
audits of the other fixture jobs."""
from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import duckdb
import pytest

import anon_duck
from anon_duck.api import _view_sql, release_tables
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.demo import DEMO_JOBS
from anon_duck.job import load_job
from anon_duck.methods import get_method
from anon_duck.sqlrender import recording

# (template, rendered statement) of every rendering in the module, and the statements Spark ran
RENDERED: dict[str, list[tuple[str, str]]] = {}
RAN_ON_SPARK: set[str] = set()


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


def copy_table(con: duckdb.DuckDBPyConnection, spark, name: tuple[str, ...] | str) -> None:
    """A DuckDB table into the Spark warehouse under the same name, through numpy/Arrow."""
    parts = (name,) if isinstance(name, str) else name
    spark.write_table(parts, con.execute("SELECT * FROM " + ".".join(f'"{p}"' for p in parts)).fetchnumpy())


def leaves(tree, path: str = "") -> dict:
    """Every number and label of a nested dict/list, by its path (floats compared approximately:
    the engines sum in different orders)."""
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in leaves(sub, f"{path}.{key}").items()}
    if isinstance(tree, list):
        return {k: v for i, sub in enumerate(tree) for k, v in leaves(sub, f"{path}[{i}]").items()}
    return {path: pytest.approx(tree, rel=1e-12) if isinstance(tree, float) else tree}


def same(a, b, path: str = "") -> None:
    """Equal numbers, floats to 1e-9 relative: a sum of doubles depends on the order the engine
    adds them in (DuckDB's threads as much as Spark's partitions)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12, nan_ok=True), path
    else:
        assert a == b, path


def checks_of(checks) -> list[tuple]:
    return [(c.name, c.passed, c.n_violations, c.violations, c.detail) for c in checks]


# one toy job per method, CBA (a method of its own) and LKC's grown intervals (the templates of
# numeric_split = 'best_valid', which the demo's LKC job runs): each runs end to end on Spark;
# counterfeit_toy_intervals is audited on Spark below
SPARK_RUNS = ["toy_fulldomain.toml", "lkc_toy.toml", "lkc_grown_toy.toml", "counterfeit_toy.toml", "artuc_toy.toml",
              "disassociation_toy.toml", "disassociation_cba_toy.toml", "longitudinal_toy.toml"]
# report and inspect compared on both engines (each method's report; about 10 s each on Spark)
REPORTED = {"toy_fulldomain.toml", "lkc_toy.toml", "counterfeit_toy.toml", "artuc_toy.toml",
            "disassociation_toy.toml", "longitudinal_toy.toml"}


DEMO_FILES = {file for _, file in DEMO_JOBS}


def audit_on_spark(spark, job_path: Path, *, record: bool = False) -> set[str]:
    """Issue #18: the release a job publishes on DuckDB, copied to the Spark warehouse, gets the
    same verdict, violations and numbers from ``anon_duck.verify`` on Spark, which prepares the
    job's inputs with Spark's reader and runs every check of the method's audit there. With
    ``record``, returns the templates the job's run, verify and report executed on DuckDB (what
    the demo executes, for the template-coverage test)."""
    job = load_job(job_path)
    con = duckdb.connect()
    with recording() if record else contextlib.nullcontext([]) as rendered:
        anon_duck.run(con, job)
        on_duckdb = anon_duck.verify(con, job)
        if record:
            anon_duck.report(con, job)
    for name in [f"{job.release.name}_{s}" for s in release_tables(DuckDBBackend(con), job)] + \
            [f"{job.release.name}_meta"]:
        copy_table(con, spark, name)
    for view in get_method(job.method).views:        # the analyst views, defined over the copies
        spark.run("test: view", _view_sql(job, view, "create"))
    on_spark = anon_duck.verify(spark.spark, job)
    assert checks_of(on_duckdb) == checks_of(on_spark)
    assert on_spark and all(c.passed for c in on_spark)
    return {name for name, _ in rendered}
