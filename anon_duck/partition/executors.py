"""Partitioned anonymization on Spark: every fragment is anonymized inside an executor, by the
method as it runs on DuckDB, on an in-memory DuckDB connection of its own (docs/scale.md).

The driver writes the inputs' rows as Parquet partitioned by fragment, and the hierarchy
tables once, under a scratch folder in the warehouse; ``groupBy(fragment).applyInPandas`` hands
each task one fragment number, and the task reads its rows, runs ``method.anonymize`` through a
:class:`~anon_duck.backend.duckdb.DuckDBBackend` and writes each staged table as a Parquet
file tagged with the fragment, returning only the fragment's facts. The driver reads the files
back as the union tables (:mod:`.union` renumbers them on Spark), the scratch folder is
removed, and the run goes on as any Spark run: the verifier checks the union on Spark before
anything is published. The folder must be one the executors can read and write (the warehouse
folder of a local session, or a shared mount on a cluster).
"""
from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ..backend.duckdb import DuckDBBackend
from ..backend.spark import SparkBackend
from .. import errors
from ..errors import AnonDuckError, EngineError
from ..hierarchy import CLOSURE, EDGES, LEVELS, NODES
from ..inputs import Inputs
from ..job import Job
from ..methods import get_method
from ..methods.base import Method, ReleaseTable, Staged
from ..scratch import scratch
from ..sqlrender import render
from .fragments import Fragments
from .union import combine_facts, renumber, union_table

HIERARCHY_TABLES = (EDGES, NODES, CLOSURE, LEVELS)
ROLES = ("input", "codes", "events")     # the scratch names the roles' rows get in an executor


@dataclass(frozen=True)
class _Task:
    """What every executor task needs (pickled once with the function)."""

    folder: str
    job: Job
    params: Any
    roles: tuple[str, ...]                 # the ROLES this job has
    hierarchies: tuple[str, ...]           # the HIERARCHY_TABLES the driver wrote
    sizes: tuple[int, ...]


def anonymize_in_executors(backend: SparkBackend, job: Job, method: Method, inputs: Inputs, params: Any,
                           fragments: Fragments, size: int) -> Staged:
    """The union of the fragments' releases, each made in an executor (see the module)."""
    spark = backend.spark
    folder = _scratch_folder(spark)
    try:
        relations = {"input": (inputs.person, job.dataset.id), "codes": (inputs.codes, "id"),
                     "events": (inputs.events, "id")}
        roles = tuple(r for r in ROLES if relations[r][0] is not None)
        for role in roles:
            relation, id_column = relations[role]
            tagged = scratch(f"part_tagged_{role}")
            backend.run(f"partition: rows of {role}", render(
                "partition/tagged_rows.sql.j2", target=tagged, relation=relation, id=id_column,
                fragments=fragments.table, ordered=False))
            rows = spark.table(tagged[-1])
            # one task writes all of a fragment's rows: partitionBy alone writes a file for every
            # (task, fragment) pair that meets, up to tasks × fragments files on a large input
            rows.repartition("_fragment").write.partitionBy("_fragment").parquet(str(folder / role))
            rows.drop("_fragment").limit(0).coalesce(1).write.parquet(str(folder / "empty" / role))
        hierarchies = tuple(t[-1] for t in HIERARCHY_TABLES if backend.scratch_exists(t))
        for name in hierarchies:
            spark.table(name).coalesce(1).write.parquet(str(folder / "hierarchy" / name))
        task = _Task(str(folder), job, params, roles, hierarchies, tuple(fragments.sizes))
        numbers = spark.createDataFrame([(f,) for f in range(fragments.count)], "fragment bigint")
        done = numbers.groupBy("fragment").applyInPandas(
            _in_executor(task), "fragment bigint, facts string, tables string, error string").collect()
        done = sorted(done, key=lambda r: r["fragment"])
        for r in done:
            if r["error"] is not None:     # the method's own error (infeasible k, bad input), as on DuckDB
                kind, _, message = r["error"].partition(": ")
                raise getattr(errors, kind, AnonDuckError)(f"fragment {r['fragment']} of {fragments.count}: {message}")
        tables = [ReleaseTable(suffix, union_table(suffix), shuffle, sums=tuple(sums))
                  for suffix, shuffle, sums in json.loads(done[0]["tables"])]
        for t in tables:
            union = spark.read.parquet(str(folder / "out" / t.suffix))
            union.localCheckpoint(eager=True).createOrReplaceTempView(t.staged[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return Staged(renumber(backend, method.partitioning, tables, fragments, job.release.seed),
                  combine_facts(method.partitioning, [json.loads(r["facts"]) for r in done], fragments, size))


def _scratch_folder(spark: Any) -> Path:
    """A new folder under the warehouse for the fragments' files (the warehouse is where a
    session writes anyway; a local session's executors share its file system)."""
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    scheme, _, path = warehouse.partition(":") if ":" in warehouse.split("/")[0] else ("file", "", warehouse)
    if scheme != "file":
        raise EngineError(f"settings.partition_size on Spark writes fragments under the warehouse folder, which "
                          f"must be a local or mounted path the executors share; {warehouse!r} is not one")
    folder = Path(path) / f"_ad_partition_{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    return folder


def _in_executor(task: _Task) -> Any:
    """The function a task runs, typed as pandas in and out (what applyInPandas expects)."""
    import pandas as pd

    def run(rows: pd.DataFrame) -> pd.DataFrame:
        return _run_fragment(task, rows)
    return run


def _run_fragment(task: _Task, rows: Any) -> Any:
    """One executor task: fragment ``rows['fragment'][0]`` anonymized on its own in-memory
    DuckDB; its staged tables go to Parquet files, its facts come back as JSON."""
    import pandas as pd

    f = int(rows["fragment"].iloc[0])
    folder = Path(task.folder)
    with duckdb.connect() as con:
        backend = DuckDBBackend(con, threads=1)
        for name in task.hierarchies:
            backend.load_file(f"partition: hierarchy {name}", scratch(name.removeprefix("_ad_")),
                              str(folder / "hierarchy" / name / "*.parquet"), "parquet", [])
        tables = {}
        for role in task.roles:
            rows_of = folder / role / f"_fragment={f}"
            source = rows_of if rows_of.is_dir() else folder / "empty" / role
            tables[role] = scratch(role)
            backend.load_file(f"partition: {role} of fragment {f}", tables[role], str(source / "*.parquet"),
                              "parquet", [])
        inputs = Inputs(tables["input"], task.sizes[f], tables.get("codes"), tables.get("events"), fragment=True)
        method = get_method(task.job.method)
        try:
            staged = method.anonymize(backend, task.job, inputs, task.params, lambda *_: None)
        except AnonDuckError as err:
            return pd.DataFrame({"fragment": [f], "facts": [None], "tables": [None],
                                 "error": [f"{type(err).__name__}: {err}"]})
        for t in staged.tables:
            out = folder / "out" / t.suffix
            out.mkdir(parents=True, exist_ok=True)
            backend.run(f"partition: write {t.suffix}", render("partition/write_fragment.sql.j2", source=t.staged,
                                                               fragment=f), {"path": str(out / f"{f}.parquet")})
    return pd.DataFrame({"fragment": [f], "facts": [json.dumps(staged.facts)],
                         "tables": [json.dumps([(t.suffix, t.shuffle, t.sums) for t in staged.tables])], "error": [None]})
