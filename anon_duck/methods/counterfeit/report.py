"""The report of a counterfeit-records release (seed 002 §Results), recomputed in SQL from
the published tables and the input: LM, DM, class sizes and the number of counterfeits; RCE
and LM over real rows (each input row placed in its published class, so the real/counterfeit
split per class is re-derived, not read from the anonymizer); the query error rate per QI
(Fig. 9) with and without the catalog's weights, and on the truthful table. ``from_run``
repeats the run's own numbers (release metadata) so the two can be compared."""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from ...backend.base import Backend
from ...hierarchy import CLOSURE, NODES
from ...inputs import Inputs
from ...job import Job
from ...sqlrender import render


def qi_entries(backend: Backend, job: Job, domain: Mapping[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """The QIs as the report templates take them: column, hierarchy, numeric, position, and
    for a numeric QI its domain [L, U] (declared, else the hierarchy's top interval, A23)."""
    qis = []
    for q in job.dataset.qis:
        entry = {"column": q.column, "hierarchy": q.hierarchy, "numeric": q.kind == "numeric", "i": len(qis)}
        if entry["numeric"]:
            lo, hi = domain.get(q.column) or backend.rows(
                f"report: domain of {q.column}", render("metrics/hierarchy_domain.sql.j2", node_table=NODES),
                {"hierarchy": q.hierarchy})[0]
            entry |= {"lo": float(lo), "hi": float(hi)}
        qis.append(entry)
    return qis


def query_error(backend: Backend, relation: tuple[str, ...], sensitive: str, qi: Mapping[str, Any], *,
                release: tuple[str, ...], catalog: tuple[str, ...], truthful: tuple[str, ...] | None = None,
                sensitive_values: Sequence[str] | None = None, width: int = 1) -> dict[str, Any]:
    """Query error rate of one QI's workload (Figs. 9-10, digest §2.9.4) on a release in AT's
    shape: ``raw`` (AT as published), ``catalog`` (AT with the catalog's weights), ``truthful``
    (the Table 9 table, None without one) and the number of (value, group) cells with an actual
    count. ``sensitive_values`` narrows the workload to those values (the paper queries
    Occupation = 'Sales'); ``width`` groups a numeric QI in buckets (the §4.13 decade query).
    Any release in AT's shape works, so the comparator is measured by the same SQL
    (:mod:`.comparator`)."""
    raw, cat, truth, n_groups = backend.rows(f"report: query error on {qi['column']}", render(
        "counterfeit/query_error.sql.j2", release=release, catalog=catalog, truthful=truthful, relation=relation,
        node_table=NODES, closure_table=CLOSURE, sensitive=sensitive, column=qi["column"],
        hierarchy=qi["hierarchy"], numeric=qi["numeric"], lo=qi.get("lo"), hi=qi.get("hi"), width=width,
        sensitive_values=None if sensitive_values is None else [str(v) for v in sensitive_values]))[0]
    return {"raw": float(raw), "catalog": float(cat), "truthful": None if truth is None else float(truth),
            "groups": int(n_groups)}


def counterfeit_report(backend: Backend, job: Job, inputs: Inputs, release: tuple[str, ...],
                       catalog: tuple[str, ...], domain: Mapping[str, tuple[float, float]], *, rce_mode: str,
                       rce_counterfeit_term: bool, truthful: tuple[str, ...] | None = None) -> dict[str, Any]:
    ds = job.dataset
    qis = qi_entries(backend, job, domain)
    row = backend.rows("report: LM, DM", render("counterfeit/release_measures.sql.j2", release=release,
                                                catalog=catalog, node_table=NODES, qis=qis))[0]
    keys = ("n_rows", "n_classes", "min_class", "lm", "dmax", "dm", "n_counterfeits", "n_catalog_rows")
    out: dict[str, Any] = {k: (float(v) if k in ("lm", "dmax") else int(v)) for k, v in zip(keys, row)}
    rce, lm_real, unplaced = backend.rows("report: RCE", render(
        "counterfeit/rce.sql.j2", release=release, catalog=catalog, relation=inputs.person, node_table=NODES,
        closure_table=CLOSURE, sensitive=ds.sensitive, mode=rce_mode, counterfeit_term=rce_counterfeit_term,
        qis=qis))[0]
    out |= {"rce": float(rce), "rce_mode": rce_mode, "lm_real": float(lm_real), "unplaced_rows": int(unplaced)}
    out["query_error"] = {q["column"]: query_error(backend, inputs.person, ds.sensitive, q, release=release,
                                                   catalog=catalog, truthful=truthful) for q in qis}
    facts = json.loads(backend.scalar("report: run facts", render("release/meta_value.sql.j2",
                                                                  meta=job.release.where(f"{job.release.name}_meta")),
                                      {"key": "facts"}) or "{}")
    out["from_run"] = {k: facts.get(k) for k in ("levels", "rce", "lm_real", "found_h", "nodes_evaluated",
                                                 "counterfeit_values", "interval_mode")}
    return out
