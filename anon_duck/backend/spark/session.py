"""The SparkSession anon_duck runs on: one over a warehouse folder (its tables and a Derby
catalog), started for the CLI or found running in the caller's process."""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

from ...errors import EngineError, InputError


def is_session(con: Any) -> bool:
    """Whether ``con`` is a SparkSession (told by its class, so pyspark need not be imported)."""
    return type(con).__name__ == "SparkSession" and type(con).__module__.startswith("pyspark")


@contextlib.contextmanager
def open_warehouse(db: str, *, read_only: bool, master: str | None = None, missing_ok: bool = False) -> Iterator[Any]:
    """The CLI's session over the warehouse folder ``db``. A release lives in the warehouse
    folder and its catalog; commands that only read refuse a folder that does not hold one,
    before Spark starts; a file is refused too (Spark would take it for a warehouse and fail
    on every catalog access). ``:memory:``, and with ``missing_ok`` a folder without a
    warehouse, work in a folder of their own, removed at the end. The session is stopped at
    the end unless it was running before (``main()`` called from a program that has one)."""
    with contextlib.ExitStack() as stack:
        folder = db
        if Path(folder).is_file():
            raise InputError(f"--db {folder}: a file; with --engine spark, --db names the Spark warehouse folder "
                             "(a new or empty folder for a first run; nothing was run)")
        if folder == ":memory:" or (missing_ok and not (Path(folder) / "metastore_db").is_dir()):
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="anon_duck_spark_"))
        elif read_only and not (Path(folder) / "metastore_db").is_dir():
            raise InputError(f"--db {folder}: no Spark warehouse here (a folder that anon-duck run --engine spark "
                             "published into)")
        before = running_session()
        spark = spark_session(folder, master=master)
        if before is None:
            stack.callback(spark.stop)
        yield spark


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


