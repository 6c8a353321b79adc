"""Partitioned anonymization on DuckDB (the ``anonymize_fragments`` capability of the backend
a caller's connection gets, backend/base.py): the fragments run in worker processes, as many
at a time as the run's DuckDB has threads (at most the machine's cores), each on an in-memory
DuckDB of its own (docs/scale.md, "Memory and cores on one machine").

The driver writes the inputs' rows as Parquet partitioned by fragment, an empty file per role
and the hierarchy tables into a temporary folder (the layout of
:mod:`~anon_duck.backend.fragment_task`, the one Spark's executors read);
:mod:`~anon_duck.backend.fragment_pool` runs the fragments; the driver loads
``out/<suffix>/*.parquet`` back as the union tables and removes the folder, and the run goes on
as any run: the verifier checks the union before anything is published. Each worker's DuckDB
gets an equal share of the run's ``memory_limit``: the driver's DuckDB only holds its tables
while the workers run.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import duckdb

from ..sqlrender import render
from .duckdb import DuckDBBackend

if TYPE_CHECKING:
    from ..inputs import Inputs
    from ..job import Job
    from ..methods.base import Method, ReleaseTable
    from ..partition.fragments import Fragments


PROCESSES_FROM = 20_000
"""Persons from which the fragments run in worker processes. Starting a worker (an
interpreter importing the package, about a second) and writing the fragments to Parquet cost
more than a fragment of a smaller input takes to anonymize, so below it they run one after
another on the run's connection, where the release is the same."""


class DuckDBRunBackend(DuckDBBackend):
    """The backend of a caller's DuckDB connection: :class:`~.duckdb.DuckDBBackend` with the
    ``anonymize_fragments`` capability (backend/base.py's FragmentRunner). The workers' own
    backends are plain ones: a fragment is not cut again."""

    def anonymize_fragments(self, job: Any, method: Any, inputs: Any, params: Any, fragments: Any,
                            progress: Callable[[str, int, int], None]) -> tuple[list[Any], list[dict[str, Any]]] | None:
        return anonymize_in_processes(self, job, method, inputs, params, fragments, progress)


def backend(con: duckdb.DuckDBPyConnection, job: Any) -> DuckDBRunBackend:
    """The backend of a caller's connection; the job's ``[settings]`` hold for the call."""
    if job is None:
        return DuckDBRunBackend(con)
    return DuckDBRunBackend(con, memory_limit=job.settings.memory_limit, threads=job.settings.threads)


def workers(backend: DuckDBBackend, fragments: int) -> int:
    """Fragments at a time: the run's DuckDB threads (``settings.threads``, else DuckDB's
    default, the cores), at most the cores this process may use and the fragments."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(backend.threads(), cores, fragments))


def anonymize_in_processes(backend: DuckDBBackend, job: Job, method: Method, inputs: Inputs, params: Any,
                           fragments: Fragments, progress: Callable[[str, int, int], None]
                           ) -> tuple[list[ReleaseTable], list[dict[str, Any]]] | None:
    """The union of the fragments' releases, each made in a worker process (see the module): the
    union tables, ids not yet renumbered, and each fragment's facts in fragment order. None
    when worker processes would not pay: one worker, or fewer persons than
    :data:`PROCESSES_FROM`; the caller then runs the fragments on the connection."""
    n = workers(backend, fragments.count)
    if n == 1 or inputs.n_rows < PROCESSES_FROM:
        return None
    # imported here: the backend package is imported by everything, and these import the methods
    from ..methods.base import ReleaseTable
    from ..scratch import scratch
    from .fragment_pool import run_fragments
    from .fragment_task import HIERARCHY_TABLES, Task, raise_refusal, relations
    folder = Path(tempfile.mkdtemp(prefix="anon_duck_fragments_"))
    try:
        roles = relations(job, inputs)
        for role, (relation, id_column) in roles.items():
            backend.run(f"partition: rows of {role}", render(
                "partition/write_tagged.sql.j2", relation=relation, id=id_column, fragments=fragments.table,
                path=str(folder / role)))
            (folder / "empty" / role).mkdir(parents=True)
            backend.run(f"partition: columns of {role}", render(
                "partition/write_table.sql.j2", relation=relation, empty=True,
                path=str(folder / "empty" / role / "empty.parquet")))
        hierarchies = [t for t in HIERARCHY_TABLES if backend.scratch_exists(t)]
        for table in hierarchies:
            (folder / "hierarchy" / table[-1]).mkdir(parents=True)
            backend.run(f"partition: hierarchy {table[-1]}", render(
                "partition/write_table.sql.j2", relation=table, empty=False,
                path=str(folder / "hierarchy" / table[-1] / "rows.parquet")))
        share = backend.memory_limit() // n
        task = Task(str(folder), job, params, tuple(roles), tuple(t[-1] for t in hierarchies),
                    tuple(fragments.sizes), tuple(inputs.domains.items()), memory_limit=f"{share}B")
        done = run_fragments(task, fragments.count, n, progress)
        raise_refusal(done, fragments.count)
        tables = [ReleaseTable(suffix, scratch(f"part_executed_{suffix}"), shuffle, sums=tuple(sums))
                  for suffix, shuffle, sums in json.loads(done[0]["tables"])]
        for t in tables:
            backend.load_file(f"partition: union {t.suffix}", t.staged, str(folder / "out" / t.suffix / "*.parquet"),
                              "parquet", [])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return tables, [json.loads(r["facts"]) for r in done]
