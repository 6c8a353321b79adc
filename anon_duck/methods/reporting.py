"""Shared report for releases that generalize QIs in place (one label column per QI, plus
``__lo``/``__hi`` for numeric QIs): NCP, discernibility, class sizes, ARE of a seeded
count-query workload. Methods add their own measures next to these."""
from __future__ import annotations

from typing import Any

from ..backend.base import Backend
from ..hierarchy import CLOSURE, NODES
from ..inputs import Inputs
from ..job import QI, Job
from ..metrics import are, discernibility, make_workload, ncp
from ..sqlrender import render


def generalized_report(backend: Backend, job: Job, inputs: Inputs, release: tuple[str, ...], *, k: int,
                       n_queries: int = 100) -> dict[str, Any]:
    qis = job.dataset.qis
    numeric, categorical = [], []
    for q in qis:
        if q.kind == "numeric":
            numeric.append((q.column, *numeric_domain(backend, q, inputs)))
        else:
            categorical.append((q.column, q.hierarchy))
    weights = {q.column: q.weight for q in qis if q.weight is not None} or None   # all or none (job.py)
    out: dict[str, Any] = {"ncp": ncp(backend, relation=release, numeric=numeric, categorical=categorical,
                                      hier_node_relation=NODES, weights=weights)}
    out["discernibility"] = discernibility(backend, relation=release, qis=[q.column for q in qis], k=k)
    workload = make_workload(backend, original_relation=inputs.person, numeric=[c for c, _, _ in numeric],
                             categorical=categorical, n_queries=n_queries, seed=job.release.seed)
    out["are"] = are(backend, workload=workload, original_relation=inputs.person, generalized_relation=release,
                     numeric=[c for c, _, _ in numeric], categorical=categorical,
                     hier_closure_relation=CLOSURE, hier_node_relation=NODES)
    out["summary"] = {"info_loss": ("NCP", out["ncp"]["ncp"]), "are": out["are"]["are"]}
    return out


def numeric_domain(backend: Backend, qi: QI, inputs: Inputs) -> tuple[float, float]:
    """The span NCP divides a numeric QI's interval width by: the bounds of its hierarchy's root
    (what a fully generalized value spans), or the data's min and max without a hierarchy."""
    if qi.hierarchy:
        lo, hi = backend.rows(f"report: domain of {qi.column}", render(
            "metrics/hierarchy_domain.sql.j2", node_table=NODES), {"hierarchy": qi.hierarchy})[0]
    else:
        lo, hi = backend.rows(f"report: domain of {qi.column}", render(
            "metrics/domain.sql.j2", relation=inputs.person, column=qi.column))[0]
    return float(lo), float(hi)
