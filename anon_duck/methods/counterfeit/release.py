"""Materialize the chosen node (Algorithm 1 line 21): the anonymized table AT and the
catalog as staged scratch tables. The counterfeit counts are a private scratch table that
only these templates read; it is never staged for publication."""
from __future__ import annotations

import numpy as np

from ...backend.base import Backend
from ...hierarchy import NODES
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from .classes import FrequencySet
from .levels import QILevels
from .search import NodeResult


def stage_release(backend: Backend, job: Job, inputs: Inputs, freq: FrequencySet, qis: list[QILevels],
                  best: NodeResult, tight: bool) -> dict[str, tuple[str, ...]]:
    """Write AT, the catalog and the truthful table (Table 9, derived from the first two only)
    into scratch tables; return their names by release suffix."""
    classes, catalog = best.classes, best.catalog
    m = classes.real.shape[0]
    class_id = np.arange(1, m + 1, dtype=np.int64)
    columns: dict[str, np.ndarray] = {"class_id": class_id}
    for a, q in enumerate(qis):
        columns[f"node_{a}"] = q.node_names[classes.node[:, a]].astype(object)
        columns[f"lo_{a}"] = classes.lo[:, a]
        columns[f"hi_{a}"] = classes.hi[:, a]
    class_table, map_table, cf_table = scratch("cf_classes"), scratch("cf_class_map"), scratch("cf_counterfeits")
    backend.write_table(class_table, columns)
    class_map = {f"q{a}": leaves.astype(object) for a, leaves in enumerate(freq.leaves)}
    backend.write_table(map_table, {**class_map, "class_id": class_id[classes.row_class]})
    c, s = np.nonzero(best.cf)
    # private: which classes hold counterfeits and with which values (never published)
    backend.write_table(cf_table, {"class_id": class_id[c], "s": freq.sensitive_values[s].astype(object),
                                   "n": best.cf[c, s]})
    at = scratch("cf_release")
    sensitive = job.dataset.sensitive
    backend.run("counterfeit: materialize AT", render(
        "counterfeit/release.sql.j2", target=at, relation=inputs.person, node_table=NODES, class_map=map_table,
        classes=class_table, counterfeits=cf_table, sensitive=sensitive, tight=tight,
        qis=[{"column": q.column, "hierarchy": h, "numeric": q.numeric, "i": a}
             for a, (q, h) in enumerate(zip(qis, (x.hierarchy for x in job.dataset.qis)))]))
    members, counts = scratch("cf_catalog_members"), scratch("cf_catalog_counts")
    listed = np.flatnonzero(catalog.group >= 0)
    backend.write_table(members, {"group_id": catalog.group[listed] + 1, "class_id": class_id[listed]})
    g, v = np.nonzero(catalog.count)
    backend.write_table(counts, {"group_id": (g + 1).astype(np.int64),
                                 "s": freq.sensitive_values[v].astype(object), "count": catalog.count[g, v]})
    cat = scratch("cf_catalog")
    backend.run("counterfeit: catalog", render("counterfeit/catalog.sql.j2", target=cat, relation=inputs.person,
                                               members=members, counts=counts, sensitive=sensitive))
    truthful = scratch("cf_truthful")
    backend.run("counterfeit: truthful table (Table 9)", render(
        "counterfeit/truthful.sql.j2", target=truthful, release=at, catalog=cat, sensitive=sensitive,
        qis=[{"column": q.column, "numeric": q.numeric} for q in qis]))
    return {"release": at, "catalog": cat, "truthful": truthful}
