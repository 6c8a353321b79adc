"""Utility measures of a longitudinal release (seed 004 Section V): ILM/ALM and AvgRE.

ILM/ALM need the link between a released trajectory and its original, which the release does
not hold; they are computed at anonymization time (Algorithm 3 step 20 from the chain
accounting, Definition 8 in SQL from the staged clusters) and read back from the release's
metadata. AvgRE needs only the original events and the release (Appendix B), so it is
computed here, in SQL.
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

from ...backend.base import Backend
from ...hierarchy import CLOSURE
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from ...verifiers.longitudinal import release_ids
from ...verifiers.models import id_ranges
from .load import build_domain
from .params import LongitudinalParams

QUERIES, ESTIMATES = scratch("lg_queries"), scratch("lg_estimates")
LOSS_FACTS = ("ilm_alg", "alm_alg", "ilm_def8", "alm_def8", "clusters", "min_cluster", "max_cluster",
              "records", "pairs", "released_pairs", "icd_domain", "age_domain")


def avg_re(backend: Backend, job: Job, inputs: Inputs, params: LongitudinalParams,
           tables: Mapping[str, tuple[str, ...]], n_records: int) -> dict[str, Any]:
    """AvgRE of a frequent-combination COUNT workload (Appendix B, spec §2.6 and A14), its
    estimates summed one slice of release ids at a time (:data:`AVG_RE_SLICE_EVENTS`)."""
    events = job.dataset.events
    assert events is not None and inputs.events is not None
    nodes = build_domain(backend, job, inputs, params)
    min_support = max(1, math.ceil(params.query_support * n_records - 1e-9))
    backend.run("longitudinal: AvgRE workload", render(
        "longitudinal/workload.sql.j2", target=QUERIES, events=inputs.events, max_size=params.query_size),
        {"min_support": min_support, "max_queries": params.max_queries, "seed": str(job.release.seed)})
    lo, hi, event_rows = release_ids(backend, "longitudinal: AvgRE slices", patients=tables["patients"],
                                     events=tables["events"])
    hierarchies = {"code_hierarchy": events.code_hierarchy, "age_hierarchy": events.age_hierarchy}
    for start, end in id_ranges(lo, hi, event_rows, AVG_RE_SLICE_EVENTS):
        backend.run("longitudinal: AvgRE estimates", render(
            "longitudinal/avg_re_estimates.sql.j2", target=ESTIMATES, queries=QUERIES, release_events=tables["events"],
            nodes=nodes, closure=CLOSURE, first=start == lo), {**hierarchies, "lo": start, "hi": end})
    value, n_queries, n_exact = backend.rows("longitudinal: AvgRE", render(
        "longitudinal/avg_re.sql.j2", queries=QUERIES, estimates=ESTIMATES))[0]
    return {"avg_re": float(value) if value is not None else None, "queries": int(n_queries),
            "queries_exact": int(n_exact), "query_min_support": min_support, "query_size": params.query_size}


AVG_RE_SLICE_EVENTS = 4_000_000
"""Released events one slice of avg_re_estimates.sql.j2 reads. It groups its rows per (query,
trajectory): on a dense CDM (~35 released events a person) that took 12.0 s in one statement at
100K persons (3.5M events) and 51.7 s at 300K, under a 4 GB memory_limit; 1M persons are read
in 9 slices."""


def longitudinal_report(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
                        params: LongitudinalParams) -> dict[str, Any]:
    """ILM/ALM (both normalizations, spec A4), cluster sizes and AvgRE."""
    meta = job.release.where(f"{job.release.name}_meta")
    facts = json.loads(backend.scalar("report: facts", render("release/meta_value.sql.j2", meta=meta),
                                      {"key": "facts"}) or "{}")
    out: dict[str, Any] = {key: facts.get(key) for key in LOSS_FACTS}
    out.update(avg_re(backend, job, inputs, params, tables, inputs.n_rows))
    return out
