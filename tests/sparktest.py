"""What the Spark test modules share: a local[2] session for a module, and the comparisons of
releases and numbers between engines (tests/test_spark.py, tests/test_spark_engine.py)."""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from typing import Any, Iterator

import duckdb
import pytest

from anon_duck.methods import get_method
from anon_duck.release import view_sql


@contextlib.contextmanager
def local_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A SparkBackend on a local[2] session over a warehouse folder of its own, stopped at the
    end. Skips (with the reason) without pyspark or Java."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install -e '.[spark]'")
    if not shutil.which("java"):
        pytest.skip("Spark needs Java 17+, and no java is on PATH")
    from anon_duck.backend.spark import SparkBackend, spark_session
    session = spark_session(tmp_path_factory.mktemp("warehouse"), master="local[2]",
                            config={"spark.driver.defaultJavaOptions": MODULE_JVM_OPTIONS})
    session.conf.set("spark.sql.shuffle.partitions", "2")
    # tiny tables: adaptive planning and code generation cost more than they save. Without
    # whole-stage code generation Spark still compiles every expression (Janino); interpreted
    # expressions (Spark's own tests' NO_CODEGEN) took the module runs from 820 s of machine CPU
    # to 634 s, 472 s wall to 364 s (tests/test_spark.py and test_spark_engine.py side by side;
    # table_names says why the catalog is listed by SQL)
    session.conf.set("spark.sql.adaptive.enabled", "false")
    session.conf.set("spark.sql.codegen.wholeStage", "false")
    session.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield SparkBackend(session)
    finally:
        session.stop()


# The serial collector: a module's session shares 2 cores with the other xdist worker, where the
# parallel collector's threads cost more CPU than they save. tests/test_spark_engine.py alone:
# 302 s of machine CPU (170 s wall) with Spark's default, 266 s (159 s) with this. It applies to
# the worker's JVM from its first session on (a process keeps its JVM when a session stops).
# Compiling is most of the JVM's CPU: Flight Recorder counted 60,672 JIT compiles taking 138 s in
# test_spark_engine.py's 261 s of machine CPU, for query planning code that mostly runs a few
# times. Thresholds 8 times Java's defaults compile only what runs often: the two Spark modules
# side by side took 560 s of machine CPU (341 s wall) against 608 s (346 s) with the defaults
# (x20: 582 s; x100 ran slower, interpreting; C1 only is slower still, see below).
MODULE_JVM_OPTIONS = "-XX:+UseSerialGC -XX:CompileThresholdScaling=8"


# A Spark JVM that lives a minute or two (the CLI's, started by a test in a subprocess) spends
# much of its CPU compiling with C2 and in the parallel collector's threads: with C1 only and the
# serial collector, three toy runs on a fresh local[2] session took 60 s of JVM CPU, not 97-100 s.
# A module's session lives for many minutes, where C2's code pays back: seven toy runs three times
# over took 392 s of JVM CPU by default and 491 s with these options (the later rounds 110-114 s
# against 165-177 s), so the module sessions above keep C2 (MODULE_JVM_OPTIONS).
SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def short_jvm_env() -> dict[str, str]:
    """This process's environment for a child that starts a short-lived Spark JVM: pyspark
    passes PYSPARK_SUBMIT_ARGS to spark-submit, here with :data:`SHORT_JVM_OPTIONS`."""
    options = shlex.quote(f"spark.driver.defaultJavaOptions={SHORT_JVM_OPTIONS}")
    return {**os.environ, "PYSPARK_SUBMIT_ARGS": f"--conf {options} pyspark-shell"}


def table_names(spark: Any, database: str | None = None) -> set[str]:
    """The tables and views of ``database`` (the current one, with the session's temporary
    views, by default) by ``SHOW TABLES``: the catalog API's listTables cannot decode its own
    rows with interpreted expressions (local_spark's NO_CODEGEN)."""
    return {r.tableName for r in spark.spark.sql("SHOW TABLES" + (f" IN `{database}`" if database else "")).collect()}


def copy_to_spark(con: duckdb.DuckDBPyConnection, spark: Any, name: tuple[str, ...] | str) -> None:
    """A DuckDB table into the Spark warehouse under the same name, through numpy/Arrow."""
    parts = (name,) if isinstance(name, str) else name
    spark.write_table(parts, con.execute("SELECT * FROM " + ".".join(f'"{p}"' for p in parts)).fetchnumpy())


def copied_to_duckdb(spark: Any, job: Any, tables: list[str]) -> duckdb.DuckDBPyConnection:
    """A release published on Spark (its tables, metadata and analyst views) in a new DuckDB."""
    con = duckdb.connect()
    for table in tables + [f"{job.release.name}_meta"]:
        con.register("arrow", spark.spark.table(f"`{table}`").toArrow())
        con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM arrow')
        con.unregister("arrow")
    for view in get_method(job.method).views:
        con.execute(view_sql(job, view, "create"))
    return con


def same(a: Any, b: Any, path: str = "") -> None:
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


def verdicts(checks: Any) -> list[tuple]:
    """What a list of checks says, to compare between engines."""
    return [(c.name, c.passed, c.n_violations, c.violations, c.detail) for c in checks]
