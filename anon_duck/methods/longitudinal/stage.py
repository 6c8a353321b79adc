"""Write MDAV''s clusters back and stage the release tables (spec §7.3, only scratch tables).

Release ids are a seeded random permutation of the records, so they carry neither the person
id nor the input order; the publisher also shuffles the rows.
"""
from __future__ import annotations

import numpy as np

from ...backend.base import Backend
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from .load import NODE_TABLE, PAIRS, PERSONS
from .mdav import Cluster

MEMBERS = scratch("lg_member")
REP = scratch("lg_rep")
PATIENTS = scratch("lg_release_patients")
EVENTS = scratch("lg_release_events")


def write_clusters(backend: Backend, clusters: list[Cluster], n_records: int, rng: np.random.Generator) -> None:
    """``lg_member(rec, cluster, member_rank, release_id)`` and ``lg_rep(cluster, pos, code_id, age_id)``."""
    sizes = np.array([c.members.size for c in clusters], dtype=np.int64)
    recs = np.concatenate([c.members for c in clusters]) if clusters else np.zeros(0, dtype=np.int64)
    cluster_of = np.repeat(np.arange(len(clusters), dtype=np.int64), sizes)
    rank = np.arange(recs.size, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    release_id = rng.permutation(n_records)[recs] + 1
    backend.write_table(MEMBERS, {"rec": recs, "cluster": cluster_of, "member_rank": rank,
                                  "release_id": release_id.astype(np.int64)})
    lengths = np.array([c.codes.size for c in clusters], dtype=np.int64)
    backend.write_table(REP, {
        "cluster": np.repeat(np.arange(len(clusters), dtype=np.int64), lengths),
        "pos": (np.arange(lengths.sum(), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)),
        "code_id": np.concatenate([c.codes for c in clusters] + [np.zeros(0, dtype=np.int64)]),
        "age_id": np.concatenate([c.ages for c in clusters] + [np.zeros(0, dtype=np.int64)])})


def stage_release(backend: Backend, job: Job, inputs: Inputs, passthrough: list[str]) -> None:
    """The two release tables: ``patients`` (readable, Fig. 1(c)) and ``events`` (one row per pair)."""
    assert job.dataset.id is not None
    backend.run("longitudinal: release patients", render(
        "longitudinal/release_patients.sql.j2", target=PATIENTS, members=MEMBERS, rep=REP, nodes=NODE_TABLE,
        persons=PERSONS, person=inputs.person, person_id=job.dataset.id, passthrough=passthrough))
    backend.run("longitudinal: release events", render(
        "longitudinal/release_events.sql.j2", target=EVENTS, members=MEMBERS, rep=REP, nodes=NODE_TABLE))


def def8_loss(backend: Backend, lm_convention: str) -> tuple[float, float]:
    """ILM and ALM of Definition 8, in SQL from the staged clusters (a cross-check of the
    chain accounting of Algorithm 3, which it need not equal for clusters above 2)."""
    ilm, alm, _ = backend.rows("longitudinal: Definition 8", render(
        "longitudinal/lm_def8.sql.j2", members=MEMBERS, rep=REP, pairs=PAIRS, nodes=NODE_TABLE),
        {"leaf_delta": 0 if lm_convention == "c0" else 1})[0]
    return float(ilm or 0.0), float(alm or 0.0)
