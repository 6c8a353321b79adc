"""A sixth method written by following docs/CONTRIBUTING_METHODS.md, from outside the package:
Mondrian (LeFevre, DeWitt, Ramakrishnan, ICDE 2006), strict multidimensional partitioning of
numeric QIs, registered as ``numeric_mondrian``. It proves the guide is enough
(tests/test_contributing.py); the shipped ``mondrian`` (anon_duck/methods/mondrian.py) is
written set-based in SQL and adds categorical QIs, relaxed cuts and l/t constraints.

Algorithm (Fig. 4 of the paper, "Anonymize(partition)"): if no allowable cut exists, the
partition is a class; else choose the dimension with the widest normalized range, split at the
median (left: values <= median, right: the rest), and recurse on both halves. A cut is
allowable when both halves hold at least k records.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from anon_duck.backend.base import Backend
from anon_duck.inputs import Inputs
from anon_duck.job import Job
from anon_duck.errors import JobError
from anon_duck.methods.base import Param, Progress, ReleaseTable, Staged, check_k, parse_params, require_roles
from anon_duck.methods.reporting import generalized_report
from anon_duck.scratch import scratch
from anon_duck.sqlrender import render
from anon_duck.verifiers import CheckResult, k_anonymity

TEMPLATES = Path(__file__).resolve().parent / "mondrian_sql"
PARAMS = [Param("k", int, lo=1, doc="every class has at least k records")]


@dataclass(frozen=True)
class MondrianParams:
    k: int


def partition(values: np.ndarray, k: int, progress: Progress) -> np.ndarray:
    """Fig. 4: the class of every row (rows x QIs ``values``), by recursive median cuts."""
    part = np.zeros(len(values), dtype=np.int64)
    span = np.ptp(values, axis=0).astype(float)
    span[span == 0] = 1.0
    todo, classes = [np.arange(len(values))], 0
    while todo:
        rows = todo.pop()
        cut = None
        for d in np.argsort(-np.ptp(values[rows], axis=0) / span, kind="stable"):   # widest first
            median = np.median(values[rows, d])
            left = rows[values[rows, d] <= median]
            if k <= len(left) <= len(rows) - k:                                      # allowable
                cut = (left, rows[values[rows, d] > median])
                break
        if cut is None:
            part[rows] = classes
            classes += 1
            progress("mondrian: partitions", classes, len(values) // k)
        else:
            todo.extend(cut)
    return part


class Mondrian:
    name = "numeric_mondrian"
    summary = "k-anonymity by strict multidimensional partitioning of numeric QIs (LeFevre et al. 2006)"

    def check_params(self, job: Job) -> MondrianParams:
        require_roles(job, qis=True)
        if any(q.kind != "numeric" for q in job.dataset.qis):
            raise JobError("method 'numeric_mondrian' partitions numeric QIs only: every [[input.qi]] needs kind = 'numeric'")
        return MondrianParams(**parse_params(job, PARAMS))

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: MondrianParams,
                  progress: Progress) -> Staged:
        check_k(params.k, inputs.n_rows, "records")
        qis = [q.column for q in job.dataset.qis]
        cols = backend.fetch("mondrian: QI values", render("numeric_mondrian/values.sql.j2", relation=inputs.person,
                                                            id=job.dataset.id, qis=qis))
        part = partition(np.column_stack([cols[f"q_{i}"].astype(float) for i in range(len(qis))]), params.k, progress)
        backend.write_table(scratch("numeric_mondrian_part"), {"id": cols["id"], "part": part})
        target = scratch("numeric_mondrian_release")
        backend.run("mondrian: release", render(
            "numeric_mondrian/release.sql.j2", target=target, relation=inputs.person, parts=scratch("numeric_mondrian_part"),
            id=job.dataset.id, qis=qis,
            keep=[c for c in (job.dataset.sensitive, job.dataset.class_, *job.dataset.keep) if c]))
        return Staged([ReleaseTable("release", target)], {"classes": int(part.max()) + 1})

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: MondrianParams) -> list[CheckResult]:
        return [k_anonymity(backend, relation=tables["release"], qis=[q.column for q in job.dataset.qis], k=params.k)]

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: MondrianParams) -> dict[str, Any]:
        return generalized_report(backend, job, inputs, tables["release"], k=params.k)


METHOD = Mondrian()
