"""Steps 2-4 of DISASSOCIATION (Fig. 6 of seed 001): VERPART on every cluster, then REFINE.

The per-cluster code masks are built for all clusters at once in numpy (one sort, one
``bitwise_or.reduceat``); VERPART itself runs only on clusters with at least two codes of
support >= k, because with zero or one such code its output is known (no record chunk, or one
chunk holding that code).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import Progress
from .encoding import Records
from .verpart import verpart

_SMALL = 62     # clusters up to this size get int64 masks from numpy; larger ones Python ints


@dataclass
class Chunk:
    """A record chunk (``scope`` = one cluster) or a shared chunk (``scope`` = the clusters of
    its joint cluster). ``take[P]`` is the part of the domain this chunk holds for cluster P
    (a shared chunk only takes codes that were still in P's item chunk, digest §3.4)."""

    kind: str
    scope: list[int]
    take: dict[int, list[int]]

    @property
    def domain(self) -> list[int]:
        return sorted({t for codes in self.take.values() for t in codes})


def cluster_masks(rec: Records, label: np.ndarray, n_clusters: int) -> list[dict[int, int]]:
    """For every cluster P and code t in T^P, the bitmask of P's records holding t (records
    of P numbered by rid)."""
    order = np.lexsort((np.arange(rec.n), label))
    sizes = np.bincount(label, minlength=n_clusters)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    local = np.empty(rec.n, dtype=np.int64)
    local[order] = np.arange(rec.n) - start[label[order]]
    p, t, bit = label[rec.rid], rec.cid, local[rec.rid]
    out: list[dict[int, int]] = [{} for _ in range(n_clusters)]
    small = sizes[p] <= _SMALL
    if small.any():
        ps, ts, bs = p[small], t[small], bit[small]
        o = np.lexsort((ts, ps))
        ps, ts, vals = ps[o], ts[o], np.left_shift(np.int64(1), bs[o])
        head = np.flatnonzero(np.r_[True, (ps[1:] != ps[:-1]) | (ts[1:] != ts[:-1])])
        masks = np.bitwise_or.reduceat(vals, head)
        for cp, ct, mk in zip(ps[head].tolist(), ts[head].tolist(), masks.tolist()):
            out[cp][ct] = mk
    for cp in np.unique(p[~small]).tolist():
        sel = p == cp
        for ct in np.unique(t[sel]).tolist():
            rows = np.zeros(int(sizes[cp]), dtype=bool)
            rows[bit[sel & (t == ct)]] = True
            out[cp][ct] = int.from_bytes(np.packbits(rows, bitorder="little").tobytes(), "little")
    return out


def vertical_partitioning(masks: list[dict[int, int]], k: int, m: int, constraint_of: np.ndarray,
                          unconstrained_order: str, progress: Progress) -> tuple[list[Chunk], list[dict[int, int]]]:
    """Fig. 6 lines 2-3: VERPART on every cluster; returns the record chunks (cluster order,
    then VERPART's order) and each cluster's item chunk with its private row masks."""
    chunks: list[Chunk] = []
    items: list[dict[int, int]] = []
    n = len(masks)
    for p, mp in enumerate(masks):
        if p % 1024 == 0:
            progress("VERPART", p, n)
        frequent = [t for t, mk in mp.items() if mk.bit_count() >= k]
        if len(frequent) <= 1:
            domains = [frequent] if frequent else []
        else:
            domains = verpart(mp, k, m, constraint_of, unconstrained_order)
        chunks += [Chunk("record", [p], {p: d}) for d in domains]
        items.append({t: mk for t, mk in mp.items() if mk.bit_count() < k})
    progress("VERPART", n, n)
    return chunks, items


@dataclass
class _Group:
    serial: int
    members: list[int]
    items: set[int]                     # union of the members' remaining item-chunk codes
    blocked: set[int]                   # codes in a record or shared chunk of some member
    shared: list[Chunk]


def refine(items: list[dict[int, int]], record_chunks: list[Chunk], sizes: np.ndarray, k: int, m: int,
           constraint_of: np.ndarray, unconstrained_order: str, progress: Progress) -> tuple[list[Chunk], np.ndarray, int]:
    """Fig. 6 line 4, "Refining" of §4, as the digest's REFINE (§3.4, decision A9): passes
    over neighbouring joint clusters in depth-first order; the refining codes T^s are the
    item-chunk codes the two have in common; the members' item-chunk occurrences of T^s are
    projected onto the joint rows and VERPART runs on that projection; if it yields any
    chunk, the two join, the chunks become shared chunks, and their codes leave the members'
    item chunks (``items`` is updated in place). Repeats until a pass changes nothing.

    Deviation from the digest, to keep every cluster's chunk domains pairwise disjoint (audit
    condition 3): a refining code must not sit in a record chunk or an earlier shared chunk
    of any member of the two groups (docs/disassociation.md, "REFINE"). On the paper's
    example this changes nothing.

    A pair that failed is not retried until one side changes (its members' item chunks
    change only when it joins another group)."""
    blocked: list[set[int]] = [set() for _ in items]
    for c in record_chunks:
        for p, codes in c.take.items():
            blocked[p].update(codes)
    groups = [_Group(p, [p], set(items[p]), blocked[p], []) for p in range(len(items))]
    serial = len(groups)
    failed: set[tuple[int, int]] = set()
    passes = 0
    changed = True
    while changed:
        changed = False
        passes += 1
        progress("REFINE", passes, passes + 1)
        out: list[_Group] = []
        i = 0
        while i < len(groups):
            if i + 1 < len(groups):
                a, b = groups[i], groups[i + 1]
                refining = (a.items & b.items) - a.blocked - b.blocked
                if refining and (a.serial, b.serial) not in failed:
                    members = a.members + b.members
                    joint = _joint_masks(items, sizes, members, refining)
                    domains = verpart(joint, k, m, constraint_of, unconstrained_order)
                    if domains:
                        moved = {t for d in domains for t in d}
                        new_chunks = [Chunk("shared", members, {p: sorted(set(d) & set(items[p])) for p in members})
                                      for d in domains]
                        for p in members:
                            for t in moved & set(items[p]):
                                del items[p][t]
                        out.append(_Group(serial, members, (a.items | b.items) - moved,
                                          a.blocked | b.blocked | moved, a.shared + b.shared + new_chunks))
                        serial += 1
                        i += 2
                        changed = True
                        continue
                    failed.add((a.serial, b.serial))
            out.append(groups[i])
            i += 1
        groups = out
    group_of = np.empty(len(items), dtype=np.int64)
    for g, grp in enumerate(groups):
        group_of[grp.members] = g
    return [c for grp in groups for c in grp.shared], group_of, passes


def _joint_masks(items: list[dict[int, int]], sizes: np.ndarray, members: list[int], codes: set[int]) -> dict[int, int]:
    """Rows of the joint cluster = the members' rows one after the other; a code's mask holds
    only its item-chunk occurrences (digest §3.4: r ∩ T^s ∩ T_T(P))."""
    out: dict[int, int] = {}
    offset = 0
    for p in members:
        for t in codes:
            mk = items[p].get(t)
            if mk:
                out[t] = out.get(t, 0) | (mk << offset)
        offset += int(sizes[p])
    return out
