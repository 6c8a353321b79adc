"""The report of a counterfeit-records release (seed 002 §Results), recomputed in SQL from
the published tables and the input: LM, DM, class sizes and the number of counterfeits; RCE
and LM over real rows (each input row placed in its published class, so the real/counterfeit
split per class is re-derived, not read from the anonymizer); the query error rate per QI
(Fig. 9) with and without the catalog's weights. ``from_run`` repeats the run's own numbers
(release metadata) so the two can be compared."""
from __future__ import annotations

import json
from typing import Any, Mapping

from ...backend.base import Backend
from ...hierarchy import CLOSURE, NODES
from ...inputs import Inputs
from ...job import Job
from ...sqlrender import render


def counterfeit_report(backend: Backend, job: Job, inputs: Inputs, release: tuple[str, ...],
                       catalog: tuple[str, ...], domain: Mapping[str, tuple[float, float]], *, rce_mode: str,
                       rce_counterfeit_term: bool) -> dict[str, Any]:
    ds = job.dataset
    qis = []
    for q in ds.qis:
        entry = {"column": q.column, "hierarchy": q.hierarchy, "numeric": q.kind == "numeric", "i": len(qis)}
        if entry["numeric"]:
            lo, hi = domain.get(q.column) or backend.rows(
                f"report: domain of {q.column}", render("metrics/hierarchy_domain.sql.j2", node_table=NODES),
                {"hierarchy": q.hierarchy})[0]
            entry |= {"lo": float(lo), "hi": float(hi)}
        qis.append(entry)
    row = backend.rows("report: LM, DM", render("counterfeit/release_measures.sql.j2", release=release,
                                                catalog=catalog, node_table=NODES, sensitive=ds.sensitive, qis=qis))[0]
    keys = ("n_rows", "n_classes", "min_class", "lm", "dmax", "dm", "n_counterfeits", "n_catalog_rows")
    out: dict[str, Any] = {k: (float(v) if k in ("lm", "dmax") else int(v)) for k, v in zip(keys, row)}
    rce, lm_real, unplaced = backend.rows("report: RCE", render(
        "counterfeit/rce.sql.j2", release=release, catalog=catalog, relation=inputs.person, node_table=NODES,
        closure_table=CLOSURE, sensitive=ds.sensitive, mode=rce_mode, counterfeit_term=rce_counterfeit_term,
        qis=qis))[0]
    out |= {"rce": float(rce), "rce_mode": rce_mode, "lm_real": float(lm_real), "unplaced_rows": int(unplaced)}
    errors = {}
    for q in qis:
        raw, cat, n_groups = backend.rows(f"report: query error on {q['column']}", render(
            "counterfeit/query_error.sql.j2", release=release, catalog=catalog, relation=inputs.person,
            node_table=NODES, closure_table=CLOSURE, sensitive=ds.sensitive, column=q["column"],
            hierarchy=q["hierarchy"], numeric=q["numeric"]))[0]
        errors[q["column"]] = {"raw": float(raw), "catalog": float(cat), "groups": int(n_groups)}
    out["query_error"] = errors
    facts = json.loads(backend.scalar("report: run facts", render("release/meta_value.sql.j2",
                                                                  meta=("main", f"{job.release.name}_meta")),
                                      {"key": "facts"}) or "{}")
    out["from_run"] = {k: facts.get(k) for k in ("levels", "rce", "lm_real", "found_h", "nodes_evaluated",
                                                 "counterfeit_values", "interval_mode")}
    return out
