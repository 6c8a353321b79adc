"""Information loss per attribute: NCP of each QI recomputed from the release (metrics.ncp), the
generalization level or cut the method chose (from the run's facts), the mean interval width of
numeric QIs, and the method's own per-attribute measures where it has them (counterfeit's query
error). Releases without QI columns (code sets, trajectories) have no per-attribute loss; the
note says where their loss shows instead."""
from __future__ import annotations

from typing import Any, Mapping

from ..backend.base import Backend
from ..columns import bounds
from ..hierarchy import NODES
from ..inputs import Inputs
from ..job import Job
from ..methods.reporting import numeric_domain
from ..metrics import ncp

NO_QI_COLUMNS = {
    "disassociation": "codes are published unchanged, split into chunks: the loss shows in query answers (ARE, MRE)",
    "cba": "codes are generalized into tokens or suppressed: see the suppression rate and ARE",
    "longitudinal": "(code, age) pairs are generalized along their hierarchies or dropped: see ILM/ALM and AvgRE",
}


def attribute_loss(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
                   facts: Mapping[str, Any], report: Mapping[str, Any]) -> dict[str, Any]:
    """``{"attributes": [{"attribute", "kind", "ncp", "level", "cut", "mean_width", "domain",
    "query_error"}], "note"}`` (keys without a value are left out of an attribute)."""
    release = tables.get("release")
    present = backend.columns("report: release columns", release) if release is not None else {}
    qis = [q for q in job.dataset.qis if q.column in present]
    if not qis:
        return {"attributes": [], "note": NO_QI_COLUMNS.get(job.method, "the release has no QI columns")}
    numeric, categorical, domains = [], [], {}
    for q in qis:
        if q.kind == "numeric" and all(b in present for b in bounds(q.column)):
            domains[q.column] = numeric_domain(backend, q, inputs)
            numeric.append((q.column, *domains[q.column]))
        elif q.hierarchy:      # a label that is a node of the QI's hierarchy (LKC's numeric cuts too)
            categorical.append((q.column, q.hierarchy))
    per_attribute = ncp(backend, relation=release, numeric=numeric, categorical=categorical,
                        hier_node_relation=NODES)["per_attribute"] if numeric or categorical else {}
    out = []
    for q in qis:
        entry: dict[str, Any] = {"attribute": q.column, "kind": q.kind, "ncp": per_attribute.get(q.column)}
        if q.column in domains:
            lo, hi = domains[q.column]
            entry["domain"] = [lo, hi]
            entry["mean_width"] = per_attribute[q.column] * (hi - lo)
        level = facts.get("levels", {}).get(q.column)
        if level is not None:
            entry["level"] = level
        cut = facts.get("cuts", {}).get(q.column)
        if cut is not None:
            entry["cut"] = len(cut)
        query_error = report.get("query_error", {}).get(q.column)
        if query_error is not None:
            entry["query_error"] = query_error["catalog"]
        out.append({k: v for k, v in entry.items() if v is not None})
    return {"attributes": out, "note": "NCP per QI recomputed from the release; level: the hierarchy level the "
                                       "method chose (0 = the original value); cut: values in LKC's final cut"}
