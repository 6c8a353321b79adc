"""Spark backend: the same templates, written once in DuckDB's dialect, run on Apache Spark.

Each statement is parsed by sqlglot (DuckDB dialect), adapted for Spark on the syntax tree, and
written as Spark SQL; the result is cached per statement text, since loops render the same
statement many times. Parameters (``$k``) become Spark's named markers (``:k``) and are bound by
``spark.sql(args=...)``; results come back through Arrow.

Scratch relations are ``("temp", "main", "_ad_<name>")`` in the templates (anon_duck/scratch.py).
Spark has no TEMP tables, and a TEMPORARY VIEW would be recomputed on every read, so on the tree:

* ``CREATE [OR REPLACE] TEMP TABLE temp.main._ad_x AS q`` becomes ``CACHE TABLE _ad_x AS q``: a
  session-local view over ``q``, computed once and kept in memory/disk by Spark's cache;
* a read of ``temp.main._ad_x`` reads the session-local ``_ad_x``;
* ``DROP TABLE [IF EXISTS] temp.main._ad_x`` uncaches it and drops the view.

Like DuckDB's TEMP tables these live only in the session that made them, so two runs on two
sessions never see each other's scratch and a killed driver leaves nothing in the warehouse.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import sqlglot
from sqlglot import exp

from ..errors import AnonDuckError, EngineError

SCRATCH_CATALOG = "temp"
DEFAULT_SCHEMA = "main"


def spark_session(warehouse: str | Path, *, master: str | None = None) -> Any:
    """A SparkSession whose warehouse (where releases are published as tables) is the folder
    ``warehouse``: ``local[*]`` unless ``master`` (or the standard Spark configuration, e.g.
    ``spark-submit --master``) says otherwise. Fails with a sentence naming what to install when
    pyspark or Java is missing."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:
        raise EngineError("--engine spark needs pyspark: pip install 'anon-duck[spark]'") from err
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise EngineError("--engine spark needs Java 17 or later: install a JDK (e.g. apt-get install "
                          "openjdk-17-jre-headless) or set JAVA_HOME")
    builder = (SparkSession.builder.appName("anon_duck")
               .config("spark.sql.warehouse.dir", str(Path(warehouse).resolve()))
               .config("spark.ui.showConsoleProgress", "false"))
    if master or not os.environ.get("SPARK_HOME"):
        builder = builder.master(master or "local[*]")
    return builder.getOrCreate()


def _is_scratch(table: exp.Table) -> bool:
    return table.catalog == SCRATCH_CATALOG


def _local(table: exp.Table) -> exp.Table:
    """The session-local name of a scratch table: its last part only."""
    return exp.Table(this=exp.to_identifier(table.name, quoted=True))


@functools.lru_cache(maxsize=8192)
def to_spark(sql: str) -> tuple[str, ...]:
    """A DuckDB-dialect statement (or several, ``;``-separated) as the Spark SQL statements that
    do the same."""
    return tuple(out for tree in sqlglot.parse(sql, read="duckdb") if tree is not None
                 for out in _statement(tree))


def _statement(tree: exp.Expression) -> tuple[str, ...]:
    if isinstance(tree, exp.Create) and tree.kind == "TABLE" and isinstance(tree.this, exp.Table) \
            and _is_scratch(tree.this) and tree.expression is not None:
        target = _local(tree.this)
        query = tree.expression.transform(_scratch_reads)
        return (f"DROP VIEW IF EXISTS {target.sql('spark')}",
                exp.Cache(this=target, expression=query, lazy=False).sql("spark"))
    tables = tree.args.get("tables") or [] if isinstance(tree, exp.Drop) else []
    if isinstance(tree, exp.Drop) and tree.kind == "TABLE" and len(tables) == 1 and _is_scratch(tables[0]):
        target = _local(tables[0]).sql("spark")
        return (f"UNCACHE TABLE IF EXISTS {target}", f"DROP VIEW IF EXISTS {target}")
    return (tree.transform(_scratch_reads).sql("spark"),)


def _scratch_reads(node: exp.Expression) -> exp.Expression:
    """Scratch tables by their session-local name; DuckDB's default schema ``main`` as the
    session's current database (a release is ``("main", "<release>_x")`` in the templates)."""
    if isinstance(node, exp.Table) and _is_scratch(node):
        local = _local(node)
        if node.alias:
            local.set("alias", node.args.get("alias"))
        return local
    if isinstance(node, exp.Table) and node.db == DEFAULT_SCHEMA and not node.catalog:
        node = node.copy()
        node.set("db", None)
    return node


class SparkBackend:
    """Wraps a SparkSession passed in by the caller. ``trace`` collects (stage, seconds) pairs as
    the DuckDB backend's does."""

    engine = "spark"

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.trace: list[tuple[str, float]] = []

    def restore_settings(self) -> None:
        """Spark settings are the session's; a job's [settings] are DuckDB's and not applied."""

    def _execute(self, stage: str, sql: str, params: Mapping[str, Any] | None) -> Any:
        t0 = time.perf_counter()
        args = {k: _spark_value(v) for k, v in (params or {}).items()}
        try:
            statements = to_spark(sql)
            for statement in statements[:-1]:
                self.spark.sql(statement).collect()
            used = {k: v for k, v in args.items() if f":{k}" in statements[-1]}
            df = self.spark.sql(statements[-1], args=used or None)
        except sqlglot.errors.SqlglotError as err:
            raise AnonDuckError(f"{stage}: cannot write this statement for Spark: {err}") from err
        except Exception as err:   # pyspark raises its own exception classes (AnalysisException, ...)
            if type(err).__module__.startswith(("pyspark", "py4j")):
                raise AnonDuckError(f"{stage}: {err}") from err
            raise
        self.trace.append((stage, time.perf_counter() - t0))
        return df

    def run(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> None:
        self._execute(stage, sql, params).collect()

    def fetch(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        table = self._execute(stage, sql, params).toArrow()
        return {name: _column(table.column(name)) for name in table.column_names}

    def rows(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        return [tuple(_plain(v) for v in r) for r in self._execute(stage, sql, params).collect()]

    def scalar(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        rows = self.rows(stage, sql, params)
        return rows[0][0] if rows else None

    def write_table(self, name: Sequence[str] | str, columns: Mapping[str, np.ndarray | list]) -> None:
        """A table from numpy columns through Arrow: a scratch name becomes a cached session-local
        view, any other name a table of the warehouse."""
        import pyarrow as pa

        table = pa.table({k: pa.array(np.asarray(v).tolist() if np.asarray(v).dtype.kind in "UOS" else np.asarray(v))
                          for k, v in columns.items()})
        df = self.spark.createDataFrame(table) if table.num_rows else self.spark.createDataFrame([], _schema(table))
        target = (name,) if isinstance(name, str) else tuple(name)
        if len(target) == 2 and target[0] == DEFAULT_SCHEMA:
            target = target[1:]
        if target[0] == SCRATCH_CATALOG:
            df.createOrReplaceTempView(target[-1])      # the session-local name, as in to_spark()
            self.spark.catalog.cacheTable(target[-1])
        else:
            df.write.mode("overwrite").saveAsTable(".".join(exp.to_identifier(p, quoted=True).sql("spark")
                                                             for p in target))

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        return _no_transaction()

    def scratch_exists(self, name: Sequence[str]) -> bool:
        """A scratch table is a session-local view under its last name part."""
        return bool(self.spark.catalog.tableExists(name[-1]))


@contextlib.contextmanager
def _no_transaction() -> Iterator[None]:
    """Spark SQL has no multi-statement transactions: publication on Spark writes staged tables
    and swaps names only after the verifier passed (see docs)."""
    yield


def _spark_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _plain(value: Any) -> Any:
    """Spark Rows hold Decimal for DECIMAL and lists for arrays; give Python numbers like DuckDB."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _column(chunked: Any) -> np.ndarray:
    """An Arrow column as numpy: numbers without NULLs as their dtype, NULL as NaN (numbers) or
    None (anything else), as the DuckDB backend gives them."""
    import pyarrow as pa

    arr = chunked.combine_chunks() if hasattr(chunked, "combine_chunks") else chunked
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_boolean(arr.type):
        if arr.null_count == 0:
            return arr.to_numpy(zero_copy_only=False)
        return np.array([np.nan if v is None else v for v in arr.to_pylist()], dtype=float)
    if pa.types.is_decimal(arr.type):
        return np.array([None if v is None else _plain(v) for v in arr.to_pylist()],
                        dtype=object if arr.null_count else None)
    return np.array(arr.to_pylist(), dtype=object)


def _schema(table: Any) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(table.schema)
