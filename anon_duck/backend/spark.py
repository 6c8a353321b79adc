"""Spark backend: the same templates, written once in DuckDB's dialect, run on Apache Spark.

Each statement is parsed by sqlglot (DuckDB dialect), adapted for Spark on the syntax tree, and
written as Spark SQL; the result is cached per statement text, since loops render the same
statement many times. Parameters (``$k``) become Spark's named markers (``:k``) and are bound by
``spark.sql(args=...)``; results come back through Arrow.

Scratch relations are ``("temp", "main", "_ad_<name>")`` in the templates (anon_duck/scratch.py).
Spark has no TEMP tables, and a view would be recomputed on every read (and change when a table
it reads is replaced), so on the tree a statement becomes :class:`Action` steps:

* ``CREATE [OR REPLACE] TEMP TABLE temp.main._ad_x AS q`` is a *snapshot*: the rows of ``q``,
  checkpointed locally and registered as the session-local view ``_ad_x``;
* ``INSERT INTO`` and ``UPDATE`` of a scratch table build its next snapshot;
* a read of ``temp.main._ad_x`` reads the session-local ``_ad_x``; a DROP drops the view.

Like DuckDB's TEMP tables these live only in the session that made them, so two runs on two
sessions never see each other's scratch and a killed driver leaves nothing in the warehouse.
Constructs that sqlglot writes for Spark with another meaning are spelled on the tree with
DuckDB's (:func:`_spark_spelling`). docs/spark.md has the whole picture.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import duckdb
import numpy as np
import sqlglot
from sqlglot import exp

from ..csvoptions import DEFAULT as CSV_DEFAULT
from ..csvoptions import CsvOptions, spark_options
from ..errors import AnonDuckError, EngineError
from ..names import matches
from ..sqlrender import render
from .duckdb import DuckDBBackend

SCRATCH_CATALOG = "temp"
DEFAULT_SCHEMA = "main"


def spark_session(warehouse: str | Path, *, master: str | None = None, config: Mapping[str, str] | None = None) -> Any:
    """A SparkSession whose warehouse (where releases are published as tables) is the folder
    ``warehouse``: ``local[*]`` unless ``master`` (or the standard Spark configuration, e.g.
    ``spark-submit --master``) says otherwise. The table catalog is a Derby metastore inside
    the warehouse folder, so a release published by one process (``anon-duck run``) is found
    by the next (``anon-duck verify``), as a DuckDB file's tables are. Fails with a sentence
    naming what to install when pyspark or Java is missing. ``config`` adds Spark settings read
    when the session starts (``spark.driver.memory``: the benchmark's sessions fix it).

    A process has one SparkSession: when one is running already it is returned as it is."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:
        raise EngineError("--engine spark needs pyspark: pip install 'anon-duck[spark]'") from err
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise EngineError("--engine spark needs Java 17 or later: install a JDK (e.g. apt-get install "
                          "openjdk-17-jre-headless) or set JAVA_HOME")
    home = Path(warehouse).resolve()
    builder = (SparkSession.builder.appName("anon_duck")
               .config("spark.sql.warehouse.dir", str(home))
               .config("spark.sql.catalogImplementation", "hive")
               .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                       f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true")
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={home}")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    if master or not os.environ.get("SPARK_HOME"):
        master = master or "local[*]"
        builder = builder.master(master)
        if master.startswith("local"):    # one machine: as many shuffle partitions as cores, not 200
            cores = master.partition("[")[2].rstrip("]").split(",")[0]
            builder = builder.config("spark.sql.shuffle.partitions",
                                     str(os.cpu_count() or 2) if cores in ("", "*") else cores)
    running = running_session()
    if running is not None and Path(running.conf.get("spark.sql.warehouse.dir").removeprefix("file:")) != home:
        raise EngineError(f"this process runs a SparkSession on warehouse {running.conf.get('spark.sql.warehouse.dir')}; "
                          f"it cannot open another one on {home} (one SparkSession per process)")
    # Python in the executors (a partitioned run, docs/scale.md) is this process's, the one with
    # anon_duck and DuckDB installed, unless the standard PYSPARK_PYTHON names another
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    # anon_duck reports every failure itself, as a sentence: Spark's loggers need not repeat it
    spark.sparkContext.setLogLevel("FATAL")
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    return spark


def running_session() -> Any:
    """The SparkSession this process runs already, if any (None without pyspark)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def _is_scratch(table: exp.Table) -> bool:
    return table.catalog == SCRATCH_CATALOG


@dataclass(frozen=True)
class Action:
    """One step of a statement on Spark: ``sql`` (run ``text``), ``snapshot`` (scratch table
    ``name`` := the rows of query ``text``), ``append`` (add the rows of ``text`` to scratch
    ``name``), ``drop`` (drop scratch ``name``), ``update`` (scratch ``name`` := its rows with
    the columns of ``sets`` (column, Spark expression) set where the condition ``text`` holds,
    all right-hand sides reading the old row, as an UPDATE does)."""

    kind: str
    text: str = ""
    name: str = ""
    sets: tuple[tuple[str, str], ...] = ()


@functools.lru_cache(maxsize=8192)
def to_spark(sql: str) -> tuple[Action, ...]:
    """A DuckDB-dialect statement (or several, ``;``-separated) as the Spark steps that do the
    same."""
    return tuple(out for tree in sqlglot.parse(sql, read="duckdb") if tree is not None
                 for out in _statement(tree))


def _statement(tree: exp.Expression) -> tuple[Action, ...]:
    tree = tree.transform(_adapt).transform(_spark_spelling)
    if isinstance(tree, exp.Create) and tree.kind == "TABLE" and isinstance(tree.this, exp.Table) \
            and tree.expression is not None:
        if tree.this.catalog == LOCAL_MARK:
            return (Action("snapshot", _text(tree.expression), tree.this.name),)
        if tree.args.get("replace"):        # Spark's file tables cannot be replaced in place
            tree = tree.copy()
            tree.set("replace", False)
            return (Action("sql", f"DROP TABLE IF EXISTS {_text(tree.this)}"), Action("sql", _text(tree)))
    if isinstance(tree, exp.Update) and isinstance(tree.this, exp.Table) and tree.this.catalog == LOCAL_MARK:
        where = tree.args.get("where")
        return (Action("update", _text(where.this) if where is not None else "", tree.this.name,
                       tuple((eq.this.name, _text(eq.expression)) for eq in tree.expressions)),)
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Table) and tree.this.catalog == LOCAL_MARK:
        return (Action("append", _text(tree.expression), tree.this.name),)
    tables = tree.args.get("tables") or [] if isinstance(tree, exp.Drop) else []
    if isinstance(tree, exp.Drop) and tree.kind == "TABLE" and len(tables) == 1 and tables[0].catalog == LOCAL_MARK:
        return (Action("drop", name=tables[0].name),)
    return (Action("sql", _text(tree)),)


def _text(tree: exp.Expression) -> str:
    """Spark SQL of a (sub)tree, scratch tables by their bare session-local name."""
    def unmark(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and node.catalog == LOCAL_MARK:
            node = node.copy()
            node.set("catalog", None)
        return node
    return tree.transform(unmark).sql("spark")


# Scratch tables keep this catalog through the rewrite so _statement can tell them apart; it is
# dropped from every table it still marks before any SQL is written.
LOCAL_MARK = "__ad_local__"


def _adapt(node: exp.Expression) -> exp.Expression:
    """On the syntax tree: scratch tables by their session-local name and DuckDB's default
    schema ``main`` as the session's current database."""
    if isinstance(node, exp.Table) and _is_scratch(node):
        local = exp.Table(this=exp.to_identifier(node.name, quoted=True), catalog=exp.to_identifier(LOCAL_MARK))
        if node.alias:
            local.set("alias", node.args.get("alias"))
        return local
    if isinstance(node, exp.Table) and node.db == DEFAULT_SCHEMA and not node.catalog:
        node = node.copy()
        node.set("db", None)
        return node
    return node


def _spark_spelling(node: exp.Expression) -> exp.Expression:
    """DuckDB constructs that sqlglot writes for Spark with another meaning, spelled the way
    Spark gives DuckDB's answer:

    * a list slice ``l[a:b]`` (1-based, both ends included) is ``slice(l, a, b - a + 1)``
      (sqlglot keeps the brackets, which Spark cannot parse);
    * a list element ``l[i]`` (1-based; NULL out of range) is ``try_element_at(l, i)``
      (sqlglot shifts a literal index to Spark's 0-based brackets but not a computed one);
    * an ordered list ``list(x ORDER BY k...)`` sorts what ``collect_list`` gathered (sqlglot
      drops the ORDER BY: the same list in another order), by ``x`` itself or by a struct of
      the keys, then ``x``;
    * ``WITH x AS MATERIALIZED (...)`` is a plain CTE (Spark has no such hint; the rows are
      the same);
    * HUGEINT (sums of squared class sizes that overflow BIGINT) is ``DECIMAL(38, 0)``;
    * the aggregate ``product(x)`` (Spark SQL has none) folds the gathered values by
      multiplication, NULL for a group without values as on DuckDB;
    * ``md5_number(x) >> n`` (a number from the top bits of the digest, read little-endian
      as DuckDB reads it) is read from the hex digest's last bytes, reversed: the same number;
    * ``grouping(a, b, ...)`` of several columns (DuckDB's bit mask) is Spark's ``grouping_id``;
    * ``list_select(l, positions)`` picks ``element_at(l, i)`` for each position;
    * ``string_agg(DISTINCT x, sep ORDER BY x)`` joins the sorted ``collect_set``: Spark's own
      ``LISTAGG(DISTINCT ...) WITHIN GROUP`` fails in its optimizer next to another DISTINCT
      aggregate (Spark 4.3: ClassCastException in RewriteDistinctAggregates).
    """
    spelled = _spell(node)
    # sqlglot's transform does not visit a node that replaced another: the replacement's parts
    # (which may hold more DuckDB constructs) are spelled here, once, for every rule below
    return node if spelled is node else spelled.transform(_spark_spelling)


def _spell(node: exp.Expression) -> exp.Expression:
    """One rule of :func:`_spark_spelling` applied to ``node`` itself (not to its parts)."""
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1 and isinstance(node.expressions[0], exp.Slice):
        lo, hi = node.expressions[0].this, node.expressions[0].expression
        if lo is None or hi is None:
            raise AnonDuckError(f"an open list slice has no Spark spelling here: {node.sql('duckdb')}")
        length = exp.Add(this=exp.Sub(this=hi.copy(), expression=lo.copy()), expression=exp.Literal.number(1))
        return exp.Anonymous(this="slice", expressions=[node.this.copy(), lo.copy(), length])
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1 and not node.expressions[0].is_string:
        return exp.Anonymous(this="try_element_at", expressions=[node.this.copy(), node.expressions[0].copy()])
    if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
        node = node.copy()
        node.set("materialized", None)
        return node
    if isinstance(node, exp.DataType) and node.this in (exp.DataType.Type.INT128, exp.DataType.Type.UINT128):
        return exp.DataType.build("DECIMAL(38, 0)")
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "product" and len(node.expressions) == 1:
        value = exp.cast(node.expressions[0].copy(), "DOUBLE")
        folded = exp.Anonymous(this="aggregate", expressions=[
            exp.Anonymous(this="collect_list", expressions=[value]), exp.cast(exp.Literal.number(1), "DOUBLE"),
            exp.Lambda(this=exp.Mul(this=exp.column("_ad_acc"), expression=exp.column("_ad_v")),
                       expressions=[exp.to_identifier("_ad_acc"), exp.to_identifier("_ad_v")])])
        return exp.Case(ifs=[exp.If(this=exp.EQ(this=exp.Count(this=value.copy()), expression=exp.Literal.number(0)),
                                    true=exp.Null())], default=folded)
    if isinstance(node, exp.BitwiseRightShift) and isinstance(node.this, exp.Anonymous) \
            and str(node.this.this).lower() == "md5_number" and node.expression.is_int:
        return _md5_top_bits(node.this.expressions[0].copy(), int(node.expression.name))
    if isinstance(node, exp.Grouping) and len(node.expressions) > 1:
        return exp.Anonymous(this="grouping_id", expressions=[e.copy() for e in node.expressions])
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "list_select" and len(node.expressions) == 2:
        values, positions = (e.copy() for e in node.expressions)
        return exp.Anonymous(this="transform", expressions=[positions, exp.Lambda(
            this=exp.Anonymous(this="element_at", expressions=[values, exp.column("_ad_i")]),
            expressions=[exp.to_identifier("_ad_i")])])
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.ArrayAgg) and isinstance(node.this.this, exp.Order):
        return _ordered_list(node.this.this, node.expression)
    if isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order):
        return _ordered_list(node.this, None)
    if isinstance(node, exp.GroupConcat) and isinstance(node.this, exp.Order) \
            and isinstance(node.this.this, exp.Distinct) and len(node.this.this.expressions) == 1:
        value = node.this.this.expressions[0]
        keys = node.this.expressions
        if len(keys) == 1 and keys[0].this == value and not keys[0].args.get("desc"):
            gathered = exp.Anonymous(this="collect_set", expressions=[value.copy()])
            return exp.Anonymous(this="array_join", expressions=[
                exp.Anonymous(this="array_sort", expressions=[gathered]),
                node.args.get("separator") or exp.Literal.string(",")])
    return node


def _md5_top_bits(value: exp.Expression, shift: int) -> exp.Expression:
    """DuckDB's ``md5_number(value) >> shift`` on Spark: md5_number reads the 16 digest bytes as
    a little-endian 128-bit number, so its top ``128 - shift`` bits (whole bytes) are the last
    digest bytes in reverse order, i.e. pairs of hex digits from the end of ``md5(value)``."""
    if shift % 8 or not 64 <= shift < 128:
        raise AnonDuckError(f"md5_number(...) >> {shift} has no Spark spelling here (whole bytes, at most 63 bits)")
    digest = exp.Anonymous(this="md5", expressions=[value])
    pairs = [exp.Substring(this=digest.copy(), start=exp.Literal.number(2 * byte + 1), length=exp.Literal.number(2))
             for byte in range(15, shift // 8 - 1, -1)]
    return exp.cast(exp.Anonymous(this="conv", expressions=[
        exp.Concat(expressions=pairs), exp.Literal.number(16), exp.Literal.number(10)]), "DECIMAL(38, 0)")


def _ordered_list(order: exp.Order, where: exp.Where | None) -> exp.Expression:
    """``list([DISTINCT] x ORDER BY keys) [FILTER (WHERE ...)]`` for Spark: gather with
    ``collect_list`` (``collect_set`` for DISTINCT), filtered as asked, then sort what was
    gathered: by ``x`` itself, or as structs of the keys and ``x``. Both engines' lists skip no
    value here but NULL: Spark's collect functions drop NULLs, which no template lists."""
    value, keys = order.this, order.expressions
    distinct = isinstance(value, exp.Distinct)
    if distinct:
        value = value.expressions[0]

    def gather(what: exp.Expression) -> exp.Expression:
        agg = exp.Anonymous(this="collect_set" if distinct else "collect_list", expressions=[what])
        return exp.Filter(this=agg, expression=where.copy()) if where is not None else agg

    by_value = len(keys) == 1 and keys[0].this == value
    if by_value:
        return exp.Anonymous(this="sort_array" if keys[0].args.get("desc") else "array_sort",
                             expressions=[gather(value)] + ([exp.false()] if keys[0].args.get("desc") else []))
    if any(k.args.get("desc") for k in keys) or distinct:
        raise AnonDuckError(f"this ordered list has no Spark spelling here: {order.sql('duckdb')}")
    fields = [exp.alias_(k.this.copy(), f"k{i}") for i, k in enumerate(keys)] + [exp.alias_(value.copy(), "v")]
    return exp.Anonymous(this="transform", expressions=[
        exp.Anonymous(this="array_sort", expressions=[gather(exp.Struct(expressions=fields))]),
        exp.Lambda(this=exp.Dot(this=exp.column("p"), expression=exp.to_identifier("v")),
                   expressions=[exp.to_identifier("p")])])


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

    @contextlib.contextmanager
    def local_copy(self, tables: Sequence[str]) -> Iterator[Any]:
        """The release tables in an in-memory DuckDB, brought to the driver through Arrow: an
        export is the file a steward hands out, written by the same DuckDB writers on every
        engine (a release larger than the driver's memory is written with Spark's own writer)."""
        with duckdb.connect() as con:
            local = DuckDBBackend(con)
            for table in tables:
                with _engine_errors(f"export: read {table}"):
                    arrow = self.spark.table(_quoted(table)).toArrow()
                con.register("_ad_export_source", arrow)
                try:
                    local.run(f"export: copy {table}", render(
                        "util/create_table_from_registered.sql.j2", target=("main", table),
                        source="_ad_export_source", columns=[(c, None) for c in arrow.column_names]))
                finally:
                    con.unregister("_ad_export_source")
            yield local

    def threads(self) -> int:
        """The session's default parallelism (local[n]: n; a cluster: its executor cores)."""
        return int(self.spark.sparkContext.defaultParallelism)

    def sort_budget(self) -> None:
        """Spark's sort spills to disk at any size: a release table is published in one statement."""
        return None

    def writable(self) -> bool:
        """A session writes to its warehouse; a read-only catalog shows at the first write."""
        return True

    def in_transaction(self) -> bool:
        """Spark SQL has no multi-statement transactions a caller could hold open."""
        return False

    def _execute(self, stage: str, sql: str, params: Mapping[str, Any] | None) -> Any:
        """Run every step of a statement; return the last query's DataFrame (None when the last
        step writes a scratch table)."""
        t0 = time.perf_counter()
        args = {k: _spark_value(v) for k, v in (params or {}).items()}
        df = None
        with _engine_errors(stage):
            for step in to_spark(sql):
                if step.kind == "drop":
                    self.spark.catalog.dropTempView(step.name)
                    df = None
                    continue
                text = self._update_query(step) if step.kind == "update" else step.text
                used = {k: v for k, v in args.items() if f":{k}" in text}
                df = self.spark.sql(text, args=used or None)
                if step.kind == "sql":
                    continue
                if step.kind == "append":
                    df = self.spark.table(_quoted(step.name)).union(df)
                # a snapshot, as a TEMP table is: Spark re-reads a view by name, so a scratch
                # table that read one which is later replaced would change with it
                _snapshot(df).createOrReplaceTempView(step.name)
                df = None
        self.trace.append((stage, time.perf_counter() - t0))
        return df

    def _update_query(self, step: Action) -> str:
        """The rows of scratch table ``step.name`` after the UPDATE ``step`` (a snapshot of a
        query, since a scratch table is one): every column as it was, except those set, which
        take their new value where the condition holds."""
        sets = {column.lower(): value for column, value in step.sets}
        projection = []
        for column in self.spark.table(_quoted(step.name)).columns:
            value = sets.get(column.lower())
            if value is not None and step.text:
                value = f"CASE WHEN {step.text} THEN {value} ELSE {_quoted(column)} END"
            projection.append(f"{value} AS {_quoted(column)}" if value is not None else _quoted(column))
        return f"SELECT {', '.join(projection)} FROM {_quoted(step.name)}"

    def run(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> None:
        df = self._execute(stage, sql, params)
        if df is not None:
            with _engine_errors(stage):
                df.collect()

    def fetch(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        df = self._execute(stage, sql, params)
        with _engine_errors(stage):
            table = df.toArrow()
        return {name: _column(table.column(name)) for name in table.column_names}

    def rows(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        df = self._execute(stage, sql, params)
        with _engine_errors(stage):
            return [tuple(_plain(v) for v in r) for r in df.collect()]

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
        else:
            df.write.mode("overwrite").saveAsTable(".".join(_quoted(p) for p in target))

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
            fields = self.spark.table(_quoted(name) if "." not in name else name).schema.fields
        return {f.name: _duckdb_type(f.dataType.simpleString()) for f in fields}

    def table_exists(self, name: str) -> bool:
        wanted = name.lower()
        return any(t.name.lower() == wanted for t in self.spark.catalog.listTables())

    def scratch_tables(self, where: Sequence[str]) -> list[str]:
        prefix = where[-1]
        return [t.name for t in self.spark.catalog.listTables() if t.isTemporary and t.name.startswith(prefix)]

    def scratch_exists(self, name: Sequence[str]) -> bool:
        """A scratch table is a session-local view under its last name part."""
        return bool(self.spark.catalog.tableExists(name[-1]))


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


_TYPES = {"string": "VARCHAR", "bigint": "BIGINT", "int": "INTEGER", "smallint": "SMALLINT", "tinyint": "TINYINT",
          "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP"}


def _duckdb_type(spark_type: str) -> str:
    """A Spark type as DuckDB spells it, so the input checks read one vocabulary."""
    if spark_type.startswith("decimal"):
        return spark_type.upper()
    if spark_type.startswith("array<"):
        return _duckdb_type(spark_type[6:-1]) + "[]"
    return _TYPES.get(spark_type, spark_type.upper())


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("spark")


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
