"""The Spark backend: the same templates, written once in DuckDB's dialect, run on Apache Spark.

Each statement is parsed by sqlglot (DuckDB dialect) and turned into Spark steps
(:mod:`.statements`) whose SQL is written by the :mod:`.dialect`; the result is cached per
statement text, since loops render the same statement many times. Parameters (``$k``) become
Spark's named markers (``:k``) and are bound by ``spark.sql(args=...)``; results come back
through Arrow (:mod:`.arrow`). A partitioned run's fragments run in the executors
(:mod:`.fragments`). docs/spark.md has the whole picture.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Sequence

import duckdb
import numpy as np
import sqlglot

from ...csvoptions import DEFAULT as CSV_DEFAULT
from ...csvoptions import CsvOptions, spark_options
from ...errors import AnonDuckError
from ...names import matches
from ..duckdb import DuckDBBackend
from .arrow import column, duckdb_type, plain, spark_schema, spark_value
from .statements import DEFAULT_SCHEMA, SCRATCH_CATALOG, quoted, to_spark, update_query


class SparkBackend:
    """Wraps a SparkSession passed in by the caller. ``trace`` collects (stage, seconds) pairs as
    the DuckDB backend's does."""

    engine = "spark"

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.trace: list[tuple[str, float]] = []

    def restore_settings(self) -> None:
        """Spark settings are the session's; a job's [settings] are DuckDB's and not applied."""

    def cleanup(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a thread of its own. py4j gives each Python thread its own gateway
        connection, and PySpark's SIGINT handler raises KeyboardInterrupt wherever the main
        thread is, also inside a call waiting for the JVM's answer: that connection then holds
        an unread answer, and every later call on it fails (the staged tables of an interrupted
        publication stayed in the warehouse). A new thread talks on a new connection."""
        failure: list[BaseException] = []

        def target() -> None:
            try:
                work()
            except BaseException as err:   # handed to the caller's thread
                failure.append(err)
        thread = threading.Thread(target=target, name="anon_duck cleanup")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]

    def anonymize_fragments(self, job: Any, method: Any, inputs: Any, params: Any, fragments: Any,
                            progress: Callable[[str, int, int], None]) -> tuple[list[Any], list[dict[str, Any]]]:
        """The fragments of a partitioned run, each anonymized in an executor task of its own
        (:mod:`.fragments`; the optional capability of backend/base.py's FragmentRunner)."""
        from .fragments import anonymize_in_executors
        return anonymize_in_executors(self, self.spark, job, method, inputs, params, fragments, progress)

    @contextlib.contextmanager
    def local_copy(self, tables: Sequence[str], schema: str = DEFAULT_SCHEMA) -> Iterator[Any]:
        """The release tables in an in-memory DuckDB, brought to the driver through Arrow: an
        export is the file a steward hands out, written by the same DuckDB writers on every
        engine (a release larger than the driver's memory is written with Spark's own writer)."""
        with duckdb.connect() as con:
            local = DuckDBBackend(con)
            for table in tables:
                with _engine_errors(f"export: read {table}"):
                    arrow = self.spark.table(_in_database(schema, table)).toArrow()
                local.write_arrow(f"export: copy {table}", ("main", table), arrow)
            yield local

    def threads(self) -> int:
        """The session's default parallelism (local[n]: n; a cluster: its executor cores)."""
        return int(self.spark.sparkContext.defaultParallelism)

    def sort_budget(self) -> None:
        """Spark's sort spills to disk at any size: a release table is published in one statement."""
        return None

    def writable(self, schema: str = DEFAULT_SCHEMA) -> bool:
        """A session writes to its warehouse; a read-only catalog shows at the first write."""
        return True

    def in_transaction(self) -> bool:
        """Spark SQL has no multi-statement transactions a caller could hold open."""
        return False

    def _execute(self, stage: str, sql: str, params: Mapping[str, Any] | None) -> Any:
        """Run every step of a statement; return the last query's DataFrame (None when the last
        step writes a scratch table)."""
        t0 = time.perf_counter()
        args = {k: spark_value(v) for k, v in (params or {}).items()}
        df = None
        with _engine_errors(stage):
            for step in to_spark(sql):
                if step.kind == "drop":
                    self.spark.catalog.dropTempView(step.name)
                    df = None
                    continue
                text = update_query(step, self.spark.table(quoted(step.name)).columns) if step.kind == "update" \
                    else step.text
                used = {k: v for k, v in args.items() if f":{k}" in text}
                df = self.spark.sql(text, args=used or None)
                if step.kind == "sql":
                    continue
                if step.kind == "append":
                    df = self.spark.table(quoted(step.name)).union(df)
                # a snapshot, as a TEMP table is: Spark re-reads a view by name, so a scratch
                # table that read one which is later replaced would change with it
                _snapshot(df).createOrReplaceTempView(step.name)
                df = None
        self.trace.append((stage, time.perf_counter() - t0))
        return df

    def run(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> None:
        df = self._execute(stage, sql, params)
        if df is not None:
            with _engine_errors(stage):
                df.collect()

    def fetch(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        df = self._execute(stage, sql, params)
        with _engine_errors(stage):
            table = df.toArrow()
        return {name: column(table.column(name)) for name in table.column_names}

    def rows(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        df = self._execute(stage, sql, params)
        with _engine_errors(stage):
            return [tuple(plain(v) for v in r) for r in df.collect()]

    def scalar(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        rows = self.rows(stage, sql, params)
        return rows[0][0] if rows else None

    def write_table(self, name: Sequence[str] | str, columns: Mapping[str, np.ndarray | list]) -> None:
        """A table from numpy columns through Arrow: a scratch name becomes a cached session-local
        view, any other name a table of the warehouse. A masked array's masked values are NULL
        (DuckDB's fetchnumpy spells NULLs so)."""
        import pyarrow as pa

        table = pa.table({k: _arrow_column(v) for k, v in columns.items()})
        df = self.spark.createDataFrame(table) if table.num_rows else self.spark.createDataFrame([], spark_schema(table))
        target = (name,) if isinstance(name, str) else tuple(name)
        if len(target) == 2 and target[0] == DEFAULT_SCHEMA:
            target = target[1:]
        if target[0] == SCRATCH_CATALOG:
            df.createOrReplaceTempView(target[-1])      # the session-local name, as in to_spark()
        else:
            df.write.mode("overwrite").saveAsTable(".".join(quoted(p) for p in target))

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        return _no_transaction()

    def load_file(self, stage: str, target: Sequence[str], path: str, fmt: str, text_columns: Sequence[str],
                  csv: CsvOptions | None = None) -> None:
        """Spark's reader, with the job's ``csv`` options; for CSV the types are inferred, then
        read again with the text columns as strings (inference would turn codes such as "013053"
        into numbers). A relative local path is this process's, as on DuckDB: the JVM resolves
        one against its own working folder, which is where the session started, not where the
        caller is now."""
        t0 = time.perf_counter()
        if not os.path.isabs(path) and ":" not in path.split("/")[0]:
            path = os.path.abspath(path)
        with _engine_errors(stage):
            if fmt == "parquet":
                df = self.spark.read.parquet(path)
            else:
                reader = self.spark.read.options(**spark_options(csv or CSV_DEFAULT))
                schema = reader.option("inferSchema", True).csv(path).schema
                from pyspark.sql.types import StringType, StructField, StructType
                names = [f.name for f in schema.fields]
                text = {found for c in text_columns
                        for found in matches(names, c, case_sensitive=self.case_sensitive())}
                df = reader.schema(StructType([StructField(f.name, StringType() if f.name in text else f.dataType)
                                               for f in schema.fields])).csv(path)
            df.localCheckpoint(eager=True).createOrReplaceTempView(target[-1])
        self.trace.append((stage, time.perf_counter() - t0))

    def case_sensitive(self) -> bool:
        """Spark tells names apart by case only with spark.sql.caseSensitive=true (not its default)."""
        return str(self.spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"

    def columns(self, stage: str, relation: Sequence[str] | str) -> dict[str, str]:
        parts = (relation,) if isinstance(relation, str) else tuple(relation)
        name = parts[-1] if parts[0] == SCRATCH_CATALOG or parts[0] == DEFAULT_SCHEMA else ".".join(parts)
        with _engine_errors(stage):
            fields = self.spark.table(quoted(name) if "." not in name else name).schema.fields
        return {f.name: duckdb_type(f.dataType.simpleString()) for f in fields}

    def table_exists(self, name: str, schema: str = DEFAULT_SCHEMA) -> bool:
        """In the current database (``main``, where a session's temporary view counts too) or
        database ``schema`` (none there: no table). One lookup of the name: listing a database's
        tables reads every table's metadata, about 10 ms each on a Hive metastore, and a
        warehouse's database holds hundreds of tables."""
        if schema == DEFAULT_SCHEMA:
            return bool(self.spark.catalog.tableExists(quoted(name)))
        return self.spark.catalog.databaseExists(schema) and bool(
            self.spark.catalog.tableExists(f"{quoted(schema)}.{quoted(name)}"))

    def scratch_tables(self, where: Sequence[str]) -> list[str]:
        """The session's temporary views named with the prefix ``where[-1]``, by name only
        (``SHOW VIEWS``, not the catalog's listing with every table's metadata)."""
        prefix = where[-1]
        return [r.viewName for r in self.spark.sql("SHOW VIEWS").collect()
                if r.isTemporary and r.viewName.startswith(prefix)]

    def scratch_exists(self, name: Sequence[str]) -> bool:
        """A scratch table is a session-local view under its last name part."""
        return bool(self.spark.catalog.tableExists(quoted(name[-1])))


def _in_database(schema: str, table: str) -> str:
    """A table of the current database (``main``) or of database ``schema``, quoted for
    ``spark.table``."""
    return quoted(table) if schema == DEFAULT_SCHEMA else f"{quoted(schema)}.{quoted(table)}"


def _snapshot(df: Any) -> Any:
    """``df``'s rows checkpointed locally, as a DataFrame that carries no size estimate of the
    query that made them. Spark's checkpoint keeps the query's estimate, and a join's estimate
    is the product of its inputs': in a loop that rebuilds a scratch table from itself (the
    fragmentation rounds of a partitioned disassociation) the estimate's digits double every
    round, and by the twelfth round of BMS-WebView-1 ×2 planning one statement took minutes of
    big-integer products. Without the estimate a snapshot is sized by adaptive execution, from
    its rows, when a query reads it."""
    from pyspark.sql.classic.dataframe import DataFrame
    rows = df.localCheckpoint(eager=True)._jdf
    session = df.sparkSession
    return DataFrame(session._jsparkSession.internalCreateDataFrame(rows.queryExecution().toRdd(), rows.schema(), False),
                     session)


@contextlib.contextmanager
def _engine_errors(stage: str) -> Iterator[None]:
    """Spark's errors (raised when a statement is planned or, lazily, when its rows are
    collected) as an AnonDuckError naming the stage, like the DuckDB backend's."""
    try:
        yield
    except sqlglot.errors.SqlglotError as err:
        raise AnonDuckError(f"{stage}: cannot write this statement for Spark: {err}") from err
    except Exception as err:   # pyspark raises its own exception classes (AnalysisException, ...)
        if type(err).__module__.startswith(("pyspark", "py4j")):
            raise AnonDuckError(f"{stage}: {_first_line(err)}") from err
        raise


def _first_line(err: Exception) -> str:
    """A Spark error without the JVM stack trace that py4j appends."""
    text = str(err)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("at "))[:2000].strip()


@contextlib.contextmanager
def _no_transaction() -> Iterator[None]:
    """Spark SQL has no multi-statement transactions: publication writes every table under a
    staging name and renames them into place last (release/publication.py; docs/spark.md)."""
    yield


def _arrow_column(values: np.ndarray | list) -> Any:
    """One column for Arrow: text and masked arrays as Python lists (a masked value is None,
    so NULL), other arrays as they are."""
    import pyarrow as pa

    if isinstance(values, np.ma.MaskedArray):
        return pa.array(values.tolist())
    array = np.asarray(values)
    return pa.array(array.tolist() if array.dtype.kind in "UOS" else array)
