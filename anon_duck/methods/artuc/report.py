"""Measures of an ArtUC-style release (seed 000 §3.2 and §5): NCP (Defs 3-4), UL (Defs 5-6)
split into UL_gen and UL_sup, the suppressed codes S (GenDiag's count: (cluster, code) pairs
removed, summed over the clusters, so one code suppressed in ten clusters counts ten times), the
input's distinct codes that no published token covers and their share of the input's distinct
codes (at most 100 %), and ARE (Def 7) of the paper's three workloads of 100 COUNT queries each:

* W1: two demographic attributes; W2: one demographic attribute and one code; W3: two codes,
  all with equality predicates on the values of a randomly drawn original record (spec §5.4).

NCP and UL_gen are recomputed from the published tables in SQL. UL_sup = Σ s(r) / |D~| needs
each record's suppressed original codes, which the release (rightly) does not carry, so it is
read from the release's metadata (the anonymizer's count of suppressed code occurrences).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np

from ...backend.base import Backend
from ...errors import AnonDuckError
from ...hierarchy import CLOSURE, NODES
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from .constraints import qi_infos

QUERIES = scratch("artuc_are_queries")
WORKLOADS = ("W1", "W2", "W3")


def artuc_report(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
                 *, n_queries: int = 100) -> dict[str, Any]:
    qis = qi_infos(backend, job, inputs)
    release = tables["release"]
    ncp, n_pub = backend.rows("report: NCP", render(
        "artuc/ncp_release.sql.j2", release=release, node_table=NODES,
        qis=[{**q.ctx(), "weight": q.weight, "lo": q.lo, "hi": q.hi} for q in qis]))[0]
    ul_gen = backend.rows("report: UL_gen", render("artuc/ul_gen_release.sql.j2", release=release,
                                                   tokens=tables["tokens"], record_tokens=tables["record_tokens"]))[0][0]
    facts = _facts(backend, job)
    sup_occ = facts.get("suppressed_occurrences")
    ul_sup = sup_occ / n_pub if sup_occ is not None and n_pub else None
    out: dict[str, Any] = {
        "records": int(n_pub), "input_records": inputs.n_rows, "ncp": float(ncp), "ul_gen": float(ul_gen),
        "ul_sup": ul_sup, "ul": float(ul_gen) + ul_sup if ul_sup is not None else None,
        "suppressed_codes": facts.get("suppressed_codes"), "distinct_codes": facts.get("distinct_codes"),
    }
    n_input, n_absent = backend.rows("report: absent codes", render(
        "artuc/absent_codes.sql.j2", codes=inputs.codes, tokens=tables["tokens"]))[0]
    out["input_distinct_codes"], out["absent_codes"] = int(n_input), int(n_absent)
    # a share of distinct codes: S (above) sums over clusters and is not one
    out["absent_codes_pct"] = 100.0 * n_absent / n_input if n_input else 0.0
    out["are"] = {w: are(backend, job, inputs, tables, qis, w, n_queries) for w in WORKLOADS}
    return out


def are(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]], qis: list,
        workload: str, n_queries: int) -> float | None:
    """ARE (Definition 7) of one workload; None when the data cannot supply such queries."""
    min_codes = {"W1": 0, "W2": 1, "W3": 2}[workload]
    if workload == "W1" and len(qis) < 2:
        return None
    seed = job.release.seed * 1000 + WORKLOADS.index(workload)
    sample = backend.fetch(f"report: ARE {workload} sample", render(
        "artuc/workload_sample.sql.j2", relation=inputs.person, id=job.dataset.id, codes=inputs.codes,
        qis=[q.column for q in qis]), {"min_codes": min_codes, "n": n_queries, "seed": seed})
    n = sample["codes"].size
    if n == 0:
        return None
    rng = np.random.default_rng(seed)
    cols: dict[str, Any] = {"q": np.arange(n, dtype=np.int64)}
    n_attrs = {"W1": 2, "W2": 1, "W3": 0}[workload]
    chosen = [rng.choice(len(qis), size=n_attrs, replace=False) for _ in range(n)]
    for q in qis:
        vals = [sample[f"v{q.i}"][j] if q.i in chosen[j] else None for j in range(n)]
        if q.numeric:
            num = np.array([np.nan if v is None else float(v) for v in vals])
            cols[f"lo{q.i}"] = num
            cols[f"hi{q.i}"] = num
        else:
            cols[f"n{q.i}"] = np.array(vals, dtype=object)
    n_codes = {"W1": 0, "W2": 1, "W3": 2}[workload]
    picks = [list(rng.choice(list(c), size=n_codes, replace=False)) if n_codes else [] for c in sample["codes"]]
    cols["c1"] = np.array([p[0] if len(p) > 0 else None for p in picks], dtype=object)
    cols["c2"] = np.array([p[1] if len(p) > 1 else None for p in picks], dtype=object)
    backend.write_table(QUERIES, cols)
    counts = are_counts(backend, job, inputs, tables, qis)
    c_o, c_a = counts["c_o"].astype(float), counts["c_a"].astype(float)
    return float(np.mean(np.abs(c_a - c_o) / c_o))


def are_counts(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               qis: list, queries: tuple[str, ...] = QUERIES) -> dict[str, np.ndarray]:
    """C_O and C_A of the queries in ``queries`` (Definition 7, estimator of spec §2.5).
    NaN bounds in lo<i>/hi<i> mean "no predicate"."""
    return backend.fetch("report: ARE counts", render(
        "artuc/are_counts.sql.j2", queries=queries, person=inputs.person, codes=inputs.codes, id=job.dataset.id,
        release=tables["release"], tokens=tables["tokens"], record_tokens=tables["record_tokens"],
        closure_table=CLOSURE, node_table=NODES, qis=[q.ctx() for q in qis]))


def _facts(backend: Backend, job: Job) -> dict[str, Any]:
    meta = job.release.where(f"{job.release.name}_meta")
    try:
        rows = backend.rows("report: release facts", render("release/meta_value.sql.j2", meta=meta), {"key": "facts"})
    except AnonDuckError:   # a staged (unpublished) release has no metadata table yet
        return {}
    return json.loads(rows[0][0]) if rows and rows[0][0] else {}
