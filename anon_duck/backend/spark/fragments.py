"""Partitioned anonymization on Spark (the backend's ``anonymize_fragments`` capability,
backend/base.py): every fragment is anonymized inside an executor, by the method as it runs on
DuckDB, on an in-memory DuckDB connection of its own (docs/scale.md).

The driver writes the inputs' rows as Parquet partitioned by fragment, and the hierarchy
tables once, under a scratch folder in the warehouse; an RDD of the fragment numbers, one
partition each, hands each task one fragment number (:func:`_in_tasks`), and the task runs
:func:`~anon_duck.backend.fragment_task.run_fragment`: it reads its rows, runs
``method.anonymize`` through a :class:`~anon_duck.backend.duckdb.DuckDBBackend` and writes each
staged table as a Parquet file tagged with the fragment, returning only the fragment's facts. The driver reads the files
back as the union tables (anon_duck.partition renumbers them on Spark), the scratch folder is
removed, and the run goes on as any Spark run: the verifier checks the union on Spark before
anything is published. The folder must be one the executors can read and write (the warehouse
folder of a local session, or a shared mount on a cluster).
"""
from __future__ import annotations

import functools
import json
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...errors import EngineError
from ...inputs import Inputs
from ...job import Job
from ...methods.base import FRAGMENTS_PHASE, Method, ReleaseTable
from ...scratch import scratch
from ...sqlrender import render
from ..base import Backend
from ..fragment_task import HIERARCHY_TABLES, Task, raise_refusal, relations, run_fragment

if TYPE_CHECKING:
    from ...partition.fragments import Fragments

JOB_GROUP = "anon_duck_partition_fragments"     # the Spark job group the fragments' tasks run in


def anonymize_in_executors(backend: Backend, spark: Any, job: Job, method: Method, inputs: Inputs, params: Any,
                           fragments: Fragments, progress: Callable[[str, int, int], None]
                           ) -> tuple[list[ReleaseTable], list[dict[str, Any]]]:
    """The union of the fragments' releases, each made in an executor (see the module): the
    union tables, ids not yet renumbered, and each fragment's facts in fragment order.
    ``backend`` is the Spark backend of the session ``spark``; ``progress`` hears when the
    fragments' stage starts and ends (its tasks report to Spark's own UI)."""
    folder = _scratch_folder(spark)
    try:
        roles = relations(job, inputs)
        for role, (relation, id_column) in roles.items():
            tagged = scratch(f"part_tagged_{role}")
            backend.run(f"partition: rows of {role}", render(
                "partition/tagged_rows.sql.j2", target=tagged, relation=relation, id=id_column,
                fragments=fragments.table, ordered=False))
            rows = spark.table(tagged[-1])
            # one task writes all of a fragment's rows: partitionBy alone writes a file for every
            # (task, fragment) pair that meets, up to tasks × fragments files on a large input; as
            # many tasks as cores, a number adaptive execution keeps (it coalesces an unnumbered one)
            rows.repartition(spark.sparkContext.defaultParallelism, "_fragment").write.partitionBy(
                "_fragment").parquet(str(folder / role))
            rows.drop("_fragment").limit(0).coalesce(1).write.parquet(str(folder / "empty" / role))
        hierarchies = tuple(t[-1] for t in HIERARCHY_TABLES if backend.scratch_exists(t))
        for name in hierarchies:
            spark.table(name).coalesce(1).write.parquet(str(folder / "hierarchy" / name))
        task = Task(str(folder), job, params, tuple(roles), hierarchies, tuple(fragments.sizes),
                    tuple(inputs.domains.items()))
        progress(FRAGMENTS_PHASE, 0, fragments.count)
        done = _in_tasks(spark, task, fragments.count)
        progress(FRAGMENTS_PHASE, fragments.count, fragments.count)
        raise_refusal(done, fragments.count)
        tables = [ReleaseTable(suffix, scratch(f"part_executed_{suffix}"), shuffle, sums=tuple(sums))
                  for suffix, shuffle, sums in json.loads(done[0]["tables"])]
        for t in tables:
            union = spark.read.parquet(str(folder / "out" / t.suffix))
            union.localCheckpoint(eager=True).createOrReplaceTempView(t.staged[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return tables, [json.loads(r["facts"]) for r in done]


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


def _in_tasks(spark: Any, task: Task, count: int) -> list[dict[str, Any]]:
    """Fragments 0 .. count - 1, each run by
    :func:`~anon_duck.backend.fragment_task.run_fragment` in a task of its own, as many at a time
    as the executors have cores; their answers in fragment order. The fragments are
    the partitions of an RDD made with one partition each: nothing is shuffled, so adaptive
    query execution has no small shuffle to coalesce (a ``groupBy(fragment).applyInPandas`` ran
    every fragment in one task with it on, issue #31). The jobs run in the job group
    :data:`JOB_GROUP`, so a status tracker can find their stages."""
    context = spark.sparkContext
    previous = context.getLocalProperty("spark.jobGroup.id")
    context.setJobGroup(JOB_GROUP, f"anon_duck: {count} fragments, one task each")
    try:
        done = context.parallelize(range(count), count).map(functools.partial(run_fragment, task)).collect()
    finally:
        context.setLocalProperty("spark.jobGroup.id", previous)
    return sorted(done, key=lambda r: r["fragment"])
