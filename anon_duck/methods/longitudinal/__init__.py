"""k-anonymity of longitudinal (diagnosis code, age) records: A-GS alignment + MDAV' clustering.

Seed 004: Tamersoy, Loukides, Nergiz, Saygin, Malin, "Anonymization of Longitudinal Electronic
Medical Records", IEEE TITB 16(3), 2012. Phase names follow the paper: the Alignment
component (A-GS, Algorithm 2; Baseline, Algorithm 1) in :mod:`.align`, the Clustering
component (MDAV', Algorithm 3; formCluster, Algorithm 4) in :mod:`.mdav`, LM (Definitions 4-6)
in :mod:`.costs`. Resolutions of the paper's ambiguities: ``docs/longitudinal.md``.

References
----------
.. [1] Tamersoy et al. 2012, doi:10.1109/TITB.2012.2185850. Seed 004_f5908ae2cdbd49f7.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from ...backend.base import Backend
from ...errors import JobError
from ...inputs import Inputs
from ...hierarchy import CLOSURE
from ...job import Job
from ...retention import OUTCOMES, code_retention, event_codes
from ...sqlrender import render
from ...verifiers import CheckResult
from ...verifiers.longitudinal import verify_release
from ..base import Partitioning, Progress, ReleaseTable, Staged, ViewSample, check_k, release_view
from ..papers import cite
from .load import load
from .mdav import Pool, mdav
from .measures import longitudinal_report
from .params import LongitudinalParams, check_params
from .load import NODE_TABLE, PERSONS
from .stage import EVENTS, MEMBERS, PATIENTS, REP, def8_loss, stage_release, write_clusters

RESERVED = ("release_id", "trajectory", "n_pairs")


class Longitudinal:
    name = "longitudinal"
    summary = f"k-anonymity of (ICD, age) trajectories: A-GS alignment + MDAV' clustering ({cite('longitudinal')})"
    # one row per published record and position; checked on a seeded sample of release ids
    views = release_view("events", ("release_id", ViewSample("views/longitudinal_release_ids.sql.j2", size=256)))
    # k-anonymity of whole trajectories holds per cluster, so releases of disjoint fragments
    # union into one (docs/scale.md)
    partitioning = Partitioning(
        "sort", {"release_id": (("patients", "release_id"), ("events", "release_id"))},
        {"clusters": "sum", "min_cluster": "min", "max_cluster": "max", "records": "sum", "pairs": "sum",
         "distinct_trajectories": "sum", "released_pairs": "sum", "ilm_alg": "mean", "alm_alg": "mean",
         "ilm_def8": "mean", "alm_def8": "mean"})

    def check_params(self, job: Job) -> LongitudinalParams:
        params = check_params(job)
        for col in [*_passthrough(job), job.dataset.id or ""]:
            if col in RESERVED:
                raise JobError(f"input column {col!r} would collide with the release column of the same name; "
                               "rename it")
        return params

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: LongitudinalParams,
                  progress: Progress) -> Staged:
        check_k(params.k, inputs.n_rows, "persons")
        data = load(backend, job, inputs, params)
        pool = Pool(data.model, data.trajs, params.alignment, workers=min(backend.threads(), os.cpu_count() or 1))
        rng = np.random.default_rng(job.release.seed)
        try:
            clusters = mdav(pool, params.k, final_pick=params.final_pick, rng=rng, progress=progress)
        finally:
            pool.close()
        write_clusters(backend, clusters, inputs.n_rows, rng)
        stage_release(backend, job, inputs, _passthrough(job))
        # Algorithm 3 step 20, from the unweighted chain numerators (equal to i~ / (p w) for w > 0)
        n_i = sum(c.n_i for c in clusters)
        n_a = sum(c.n_a for c in clusters)
        p = data.n_pairs
        ilm_def8, alm_def8 = def8_loss(backend, params.lm_convention)
        sizes = [c.members.size for c in clusters]
        facts = {"alignment": params.alignment, "k": params.k, "w_icd": str(params.w_icd),
                 "w_age": str(params.w_age), "lm_convention": params.lm_convention,
                 "ilm_alg": n_i / (data.model.icd.domain * p) if p else 0.0,
                 "alm_alg": n_a / (data.model.age.domain * p) if p else 0.0,
                 "ilm_def8": ilm_def8, "alm_def8": alm_def8,
                 "clusters": len(clusters), "min_cluster": min(sizes), "max_cluster": max(sizes),
                 "records": int(inputs.n_rows), "pairs": p, "distinct_trajectories": int(data.trajs.length.size),
                 "icd_domain": data.model.icd.domain, "age_domain": data.model.age.domain,
                 "released_pairs": int(sum(c.codes.size * c.members.size for c in clusters))}
        assert job.dataset.events is not None
        backend.run("longitudinal: retention outcomes", render(
            "longitudinal/retention_outcomes.sql.j2", target=OUTCOMES, codes=event_codes(backend, inputs),
            persons=PERSONS, members=MEMBERS, rep=REP, nodes=NODE_TABLE, closure=CLOSURE,
            hierarchy=job.dataset.events.code_hierarchy))
        return Staged([ReleaseTable("patients", PATIENTS), ReleaseTable("events", EVENTS),
                       code_retention(backend, job, inputs)], facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: LongitudinalParams) -> list[CheckResult]:
        return verify_release(backend, patients=tables["patients"], events=tables["events"], k=params.k,
                              forbidden=[c for c in (job.dataset.id, *job.dataset.drop) if c])

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: LongitudinalParams) -> dict[str, Any]:
        out = longitudinal_report(backend, job, inputs, tables, params)
        out["summary"] = {"info_loss": ("ILM", out["ilm_alg"]), "are": out["avg_re"]}
        return out


def _passthrough(job: Job) -> list[str]:
    """Payload columns released unchanged (the DNA of Fig. 1): sensitive, class and keep."""
    ds = job.dataset
    return [c for c in (ds.sensitive, ds.class_, *ds.keep) if c]


METHOD = Longitudinal()
