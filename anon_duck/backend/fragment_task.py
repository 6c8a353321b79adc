"""One fragment of a partitioned run, anonymized away from the run's connection: what a Spark
executor task and a DuckDB worker process both run (docs/scale.md).

The driver writes a folder: the inputs' rows as Parquet partitioned by fragment
(``<role>/_fragment=<f>/*.parquet``, Hive layout, as Spark's ``partitionBy`` and DuckDB's
``PARTITION_BY`` both write it), an empty file per role for a fragment without rows of that role
(``empty/<role>/``), and the hierarchy tables (``hierarchy/<name>/``). :func:`run_fragment`
loads one fragment's rows into an in-memory DuckDB of its own, runs ``method.anonymize`` on it
exactly as a run on DuckDB would, and writes each staged table as ``out/<suffix>/<f>.parquet``
tagged with the fragment; the driver reads ``out/<suffix>/*.parquet`` back as the union.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import duckdb

from .. import errors
from ..errors import AnonDuckError
from ..hierarchy import CLOSURE, EDGES, LEVELS, NODES
from ..inputs import Inputs
from ..job import Job
from ..methods import get_method
from ..scratch import scratch
from ..sqlrender import render
from .duckdb import DuckDBBackend

HIERARCHY_TABLES = (EDGES, NODES, CLOSURE, LEVELS)
ROLES = ("input", "codes", "events")     # the scratch names the roles' rows get in a task


def relations(job: Job, inputs: Inputs) -> dict[str, tuple[tuple[str, ...], str]]:
    """Each role the job's input has (of :data:`ROLES`, in that order): its relation and the
    column holding the person id, what the driver writes partitioned by fragment."""
    every = {"input": (inputs.person, job.dataset.id), "codes": (inputs.codes, "id"), "events": (inputs.events, "id")}
    return {role: every[role] for role in ROLES if every[role][0] is not None}


@dataclass(frozen=True)
class Task:
    """What every fragment's task needs (pickled once for all of them)."""

    folder: str
    job: Job
    params: Any
    roles: tuple[str, ...]                 # the ROLES this job has
    hierarchies: tuple[str, ...]           # the HIERARCHY_TABLES the driver wrote
    sizes: tuple[int, ...]
    domains: tuple[tuple[str, tuple[float, float]], ...] = ()   # the whole Inputs.domains, as items
    memory_limit: str | None = None        # the task's DuckDB's cap (None: DuckDB's default)


def run_fragment(task: Task, f: int) -> dict[str, Any]:
    """Fragment ``f`` anonymized on an in-memory DuckDB of its own (one thread: the tasks
    themselves run one per core); its staged tables go to Parquet files, its facts come back as
    JSON, a method's refusal (infeasible k, bad input) as its error."""
    folder = Path(task.folder)
    with duckdb.connect() as con:
        backend = DuckDBBackend(con, threads=1, memory_limit=task.memory_limit)
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
        inputs = Inputs(tables["input"], task.sizes[f], tables.get("codes"), tables.get("events"), fragment=True,
                        domains=dict(task.domains))
        method = get_method(task.job.method)
        try:
            staged = method.anonymize(backend, task.job, inputs, task.params, lambda *_: None)
        except AnonDuckError as err:
            return {"fragment": f, "facts": None, "tables": None, "error": f"{type(err).__name__}: {err}"}
        for t in staged.tables:
            out = folder / "out" / t.suffix
            out.mkdir(parents=True, exist_ok=True)
            backend.run(f"partition: write {t.suffix}", render("partition/write_fragment.sql.j2", source=t.staged,
                                                               fragment=f), {"path": str(out / f"{f}.parquet")})
    return {"fragment": f, "facts": json.dumps(staged.facts),
            "tables": json.dumps([(t.suffix, t.shuffle, t.sums) for t in staged.tables]), "error": None}


def raise_refusal(done: Sequence[dict[str, Any]], count: int) -> None:
    """Raise the first fragment's refusal as the method's own error class, naming the fragment
    (a run on the whole input would have raised it itself)."""
    for r in done:
        if r["error"] is not None:
            kind, _, message = r["error"].partition(": ")
            raise getattr(errors, kind, AnonDuckError)(f"fragment {r['fragment']} of {count}: {message}")
