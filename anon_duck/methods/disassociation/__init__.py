"""Disassociation of diagnosis-code sets: k^m-anonymity without generalization (seed 001).

DISASSOCIATION (Fig. 6): HORPART splits the records into clusters (:mod:`.horpart`),
VERPART splits every cluster's codes into k^m-anonymous record chunks and an item chunk
(:mod:`.verpart`, driven by :mod:`.chunks`), refining builds shared chunks over joint
clusters (:func:`.chunks.refine`). The release (:mod:`.release`) publishes every original
code unchanged, in chunks whose subrecords cannot be linked. The independent audit is
:mod:`anon_duck.verifiers.disassociation`; reconstructions and utility measures are
:mod:`.report`.

References
----------
.. [1] Loukides, Liagouris, Gkoulalas-Divanis, Terrovitis. Disassociation for electronic
   health record privacy. J. Biomed. Inform. 50 (2014). Seed 001_0e88561c6a734786.
.. [2] Terrovitis, Liagouris, Mamoulis, Skiadopoulos. Privacy preservation by
   disassociation. PVLDB 5(10), 2012.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...backend.base import Backend
from ...inputs import Inputs, prepare
from ...job import Job
from ...retention import OUTCOMES, code_retention
from ...scratch import scratch
from ...verifiers import CheckResult
from ...verifiers.disassociation import audit, completeness
from ..base import AnalystView, Partitioning, Progress, Staged, ViewSample, check_k
from ..papers import cite
from .chunks import cluster_masks, refine, vertical_partitioning
from .encoding import Records, encode
from .horpart import horpart, merge_small
from .params import DisParams, check_params
from .policy import Policy, build_policy, check_constraint_codes
from .release import Structure, stage, stage_outcomes
from .report import disassociation_report


def disassociate(rec: Records, policy: Policy, params: DisParams, progress: Progress) -> tuple[Structure, dict[str, Any]]:
    """Fig. 6 of [1] on the encoded dataset; returns the private structure and facts."""
    h = horpart(rec, policy.constraint_of, params.max_cluster_size, progress)          # line 1
    n_horpart = h.n_clusters
    if params.merge_small:
        h = merge_small(h, params.k, params.max_cluster_size)                                                  # digest A7
    masks = cluster_masks(rec, h.label, h.n_clusters)
    record_chunks, items = vertical_partitioning(masks, params.k, params.m, policy.constraint_of,
                                                 params.unconstrained_order, progress)   # lines 2-3
    sizes = h.sizes()
    if params.refine:                                                                  # line 4
        shared, group_of, passes = refine(items, record_chunks, sizes, params.k, params.m, policy.constraint_of,
                                          params.unconstrained_order, progress)
    else:
        shared, group_of, passes = [], np.arange(h.n_clusters, dtype=np.int64), 0
    structure = Structure(h.label, group_of, record_chunks, shared, [sorted(it) for it in items])
    facts = {"records": rec.n, "codes": rec.n_codes, "policy": params.policy,
             "constraints": policy.n_constraints, "horpart_clusters": n_horpart, "clusters": h.n_clusters,
             "min_cluster": int(sizes.min()), "max_cluster": int(sizes.max()),
             "record_chunks": len(record_chunks), "shared_chunks": len(shared),
             "joint_clusters": int(np.unique(group_of).size), "refine_passes": passes,
             "item_chunk_codes": int(sum(len(it) for it in items)), "codes_suppressed": 0,
             "root_split": rec.codes[h.trace[0][1]] if h.trace else None}
    return structure, facts


class Disassociation:
    name = "disassociation"
    summary = f"disassociation of set-valued codes into k^m-anonymous chunks (HORPART, VERPART, REFINE; {cite('disassociation')})"
    views = (AnalystView("", "views/disassociation_records.sql.j2",
                         sample=ViewSample("views/disassociation_clusters.sql.j2", size=256)),
             AnalystView("terms", "views/disassociation_terms.sql.j2"),
             AnalystView("support", "views/disassociation_support.sql.j2",
                         sample=ViewSample("views/disassociation_codes.sql.j2")))
    # k^m-anonymity holds per cluster (every chunk lies inside a cluster or joint cluster), so
    # releases of disjoint fragments union into one (docs/scale.md)
    partitioning = Partitioning(
        "codes",
        {"cluster": (("clusters", "cluster_id"), ("record_chunks", "cluster_id"), ("shared_scope", "cluster_id"),
                     ("item_chunks", "cluster_id")),
         "chunk": (("record_chunks", "chunk_id"), ("shared_chunks", "chunk_id"), ("shared_scope", "chunk_id")),
         "joint": (("clusters", "joint_id"),)},
        {"records": "sum", "horpart_clusters": "sum", "clusters": "sum", "min_cluster": "min", "max_cluster": "max",
         "record_chunks": "sum", "shared_chunks": "sum", "joint_clusters": "sum", "refine_passes": "max",
         "item_chunk_codes": "sum", "codes_suppressed": "sum"},
        check=check_constraint_codes)

    def check_params(self, job: Job) -> DisParams:
        return check_params(job)

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: DisParams, progress: Progress) -> Staged:
        assert inputs.codes is not None   # check_params required the codes role
        rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
        check_k(params.k, rec.n, "records (persons)")
        policy = build_policy(backend, job, params, rec, fragment=inputs.fragment)
        structure, facts = disassociate(rec, policy, params, progress)
        tables = stage(backend, structure, job.release.seed)
        stage_outcomes(backend, OUTCOMES)
        return Staged(tables + [code_retention(backend, job, inputs)], facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: DisParams) -> list[CheckResult]:
        """The privacy audit, then completeness against the input codes: the prepared ones
        during a run, re-read from the job's input for ``anon-duck verify``."""
        checks = audit(backend, tables, k=params.k, m=params.m)
        if not checks[0].passed:        # the release does not have a disassociated release's tables
            return checks
        codes = scratch("codes")
        if not backend.scratch_exists(codes):
            codes = prepare(backend, job).codes
        return checks + [completeness(backend, tables, codes=codes, k=params.k)]

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: DisParams) -> dict[str, Any]:
        out = disassociation_report(backend, job, inputs, tables, params)
        # no generalization: the loss shows only in query answers, so the headline is W1's ARE
        out["summary"] = {"info_loss": ("suppressed", float(out["suppressed_codes"])),
                          "are": out.get("are", {}).get("W1", {}).get("expected", {}).get("are")}
        return out


METHOD = Disassociation()
