"""Materialize the disassociated dataset D^A (seed 001 §3.2, Fig. 4 and Fig. 10) as staged
scratch tables.

Python writes only the structure it decided (cluster of each record, chunk scopes and
domains, item chunks); SQL projects the records onto the chunks. Every chunk has one
subrecord per record of its scope, empty ones included, and the subrecord's ``sub_id`` is a
keyed random permutation inside the chunk (digest A22, §7.4): md5 of a key, the chunk and the
record. The key mixes the release seed with a checksum of the private (record, code) pairs,
because the seed itself is published in ``<release>_meta`` and record numbers follow the
person ids: without the private part, anyone with the seed and the id list could re-link
subrecords across chunks. No chunk table holds a record number, a person id or a support
count; the retention table the method adds (anon_duck/retention.py) holds per-code input counts,
for the steward (docs/analyst.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend.base import Backend
from ...scratch import scratch
from ...sqlrender import render
from ..base import ReleaseTable
from .chunks import Chunk
from .encoding import CODE, PAIR, RECORD

ASSIGN, CLUSTER, SCOPE, TAKE, ITEM = (scratch("dis_assign"), scratch("dis_cluster"), scratch("dis_scope"),
                                      scratch("dis_take"), scratch("dis_item"))
SUFFIXES = ("clusters", "record_chunks", "shared_chunks", "shared_scope", "item_chunks")


@dataclass(frozen=True)
class Structure:
    """What the algorithm decided, in integer form (private: links records to clusters)."""

    label: np.ndarray               # cluster of each record
    group_of: np.ndarray            # joint cluster of each cluster
    record_chunks: list[Chunk]
    shared_chunks: list[Chunk]
    items: list[list[int]]          # item-chunk codes of each cluster


def stage(backend: Backend, s: Structure, seed: int) -> list[ReleaseTable]:
    sizes = np.bincount(s.label, minlength=len(s.items))
    backend.write_table(ASSIGN, {"rid": np.arange(s.label.size, dtype=np.int64), "cluster_id": s.label})
    backend.write_table(CLUSTER, {"cluster_id": np.arange(len(s.items), dtype=np.int64),
                                  "n_records": sizes.astype(np.int64), "joint_id": s.group_of})
    chunk_ids, kinds, scope_p, take_c, take_p, take_t = [], [], [], [], [], []
    for cid, chunk in enumerate(s.record_chunks + s.shared_chunks):
        for p in chunk.scope:
            chunk_ids.append(cid)
            kinds.append(chunk.kind)
            scope_p.append(p)
            for t in chunk.take.get(p, []):
                take_c.append(cid)
                take_p.append(p)
                take_t.append(t)
    backend.write_table(SCOPE, {"chunk_id": np.asarray(chunk_ids, dtype=np.int64),
                                "kind": np.asarray(kinds, dtype=str), "cluster_id": np.asarray(scope_p, dtype=np.int64)})
    backend.write_table(TAKE, {"chunk_id": np.asarray(take_c, dtype=np.int64),
                               "cluster_id": np.asarray(take_p, dtype=np.int64),
                               "cid": np.asarray(take_t, dtype=np.int64)})
    item_p = [p for p, codes in enumerate(s.items) for _ in codes]
    item_t = [t for codes in s.items for t in codes]
    backend.write_table(ITEM, {"cluster_id": np.asarray(item_p, dtype=np.int64), "cid": np.asarray(item_t, dtype=np.int64)})

    key = backend.scalar("disassociation: sub_id key", render("disassociation/sub_id_key.sql.j2", pair=PAIR),
                         {"seed": str(seed)})
    tables = []
    for suffix in SUFFIXES:
        target = scratch(f"dis_release_{suffix}")
        backend.run(f"disassociation: stage {suffix}", render(
            f"disassociation/release_{suffix}.sql.j2", target=target, assign=ASSIGN, cluster=CLUSTER, scope=SCOPE,
            take=TAKE, item=ITEM, pair=PAIR, code=CODE), {"key": key} if suffix.endswith("_chunks") and
            suffix != "item_chunks" else None)
        tables.append(ReleaseTable(suffix, target, shuffle=True))
    return tables


def stage_outcomes(backend: Backend, target: tuple[str, ...]) -> None:
    """What the staged release gives each (person, code) pair, for the retention table: read
    from the private structure :func:`stage` wrote (scratch only)."""
    backend.run("disassociation: retention outcomes", render(
        "disassociation/retention_outcomes.sql.j2", target=target, record=RECORD, code=CODE, pair=PAIR,
        assign=ASSIGN, take=TAKE, item=ITEM))
