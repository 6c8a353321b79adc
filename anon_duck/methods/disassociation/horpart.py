"""HORPART (Fig. 8 of seed 001) and the small-cluster merge (digest decision A7).

HORPART splits a partition on its most frequent code ``a`` (D1 = records with ``a``, D2 = the
rest) until partitions have fewer than ``maxClusterSize`` records. The code is chosen
constraint-aware: first among the codes of the partition's current utility constraint
``u`` (line 3-4), then among all constrained codes (line 5-7, ``u`` becomes a's constraint),
then among all codes (line 8-10). D1 recurses with ``ignore ∪ {a}`` and ``u``; D2 with the
parent's ``ignore`` and no constraint (line 13).

The recursion runs level by level over all open partitions at once (numpy): one unique-count
gives every partition's code supports, one lexsort picks every partition's split code. The
``ignore`` sets need no storage of their own: every record of a partition holds every code
of its ``ignore`` set (invariant of line 11), so dropping the pairs ``(r, a)`` of D1 from the
live pairs removes exactly those codes from later supports. Cluster order is depth-first with D1 before
D2, i.e. the order of the partitions' paths ('0' = D1, '1' = D2).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import InfeasibleError
from .encoding import Records
from ..base import Progress

# tiers of Fig. 8: 0 = in the partition's constraint u, 1 = in some constraint, 2 = other
_TIER_U, _TIER_CONSTRAINED, _TIER_FREE = 0, 1, 2


@dataclass
class Horizontal:
    """Clusters of a horizontal partitioning: ``label[r]`` is the cluster of record ``r``
    (clusters numbered in depth-first order), ``paths[c]`` the HORPART path of cluster ``c``,
    ``split_codes`` the code indices chosen at the root and below (trace, depth-first)."""

    label: np.ndarray
    paths: list[str]
    trace: list[tuple[str, int]] = field(default_factory=list)   # (path of the split partition, code)

    @property
    def n_clusters(self) -> int:
        return len(self.paths)

    def sizes(self) -> np.ndarray:
        return np.bincount(self.label, minlength=self.n_clusters)


def horpart(rec: Records, constraint_of: np.ndarray, max_cluster_size: int, progress: Progress) -> Horizontal:
    """Fig. 8, all open partitions of one recursion depth per iteration.

    ``constraint_of[c]`` is the utility-constraint index of code ``c`` (-1: none)."""
    part = np.zeros(rec.n, dtype=np.int64)            # partition of each record
    paths: list[str] = [""]
    u_of: list[int] = [-1]                             # current constraint u of each partition (-1 = NONE)
    open_ = np.array([True])
    # live pairs: not yet in their partition's ignore set, in an open partition (compacted
    # every level, so the work per level shrinks as partitions become clusters)
    rid, cid = rec.rid, rec.cid
    constrained = constraint_of >= 0
    n_codes = rec.n_codes
    trace: list[tuple[str, int]] = []
    depth = 0
    while True:
        sizes = np.bincount(part, minlength=len(paths))
        open_ &= sizes >= max_cluster_size             # line 2: |D| < maxClusterSize -> cluster
        if not open_.any():
            break
        depth += 1
        progress("HORPART", depth, depth + 1)
        keep = open_[part[rid]]
        rid, cid = rid[keep], cid[keep]
        # supports s_D(t) of the codes not ignored, per open partition (line 1)
        p_live = part[rid]
        key, support = np.unique(p_live * n_codes + cid, return_counts=True)
        if key.size == 0:
            break                                      # A6: no open partition has a code left
        kp, kc = key // n_codes, key % n_codes
        u_arr = np.asarray(u_of, dtype=np.int64)
        tier = np.where((u_arr[kp] >= 0) & (constraint_of[kc] == u_arr[kp]), _TIER_U,
                        np.where(constrained[kc], _TIER_CONSTRAINED, _TIER_FREE))
        # lines 3-10: best = (tier asc, support desc, code asc); code index order = code string order
        order = np.lexsort((kc, -support, tier, kp))
        first = order[np.r_[True, kp[order][1:] != kp[order][:-1]]]
        split_p, split_c, split_tier = kp[first], kc[first], tier[first]
        # A6: an open partition without any code left to split on is a cluster
        has_split = np.zeros(len(paths), dtype=bool)
        has_split[split_p] = True
        open_ &= has_split
        a_of = np.full(len(paths), -1, dtype=np.int64)
        a_of[split_p] = split_c
        # line 11: D1 = records holding a; their pairs (r, a) join the ignore set (dropped)
        hit = cid == a_of[p_live]
        in_d1 = np.zeros(rec.n, dtype=bool)
        in_d1[rid[hit]] = True
        rid, cid = rid[~hit], cid[~hit]
        # new partitions: D1 keeps (tier 0) or takes (tier 1) a constraint, D2 gets none (line 13)
        d1_id = np.full(len(paths), -1, dtype=np.int64)
        d2_id = np.full(len(paths), -1, dtype=np.int64)
        for p, c, t in zip(split_p.tolist(), split_c.tolist(), split_tier.tolist()):
            trace.append((paths[p], c))
            u1 = u_of[p] if t == _TIER_U else (int(constraint_of[c]) if t == _TIER_CONSTRAINED else -1)
            d1_id[p] = len(paths)
            paths.append(paths[p] + "0")
            u_of.append(u1)
            d2_id[p] = len(paths)
            paths.append(paths[p] + "1")
            u_of.append(-1)
        splitting = d1_id[part] >= 0
        part = np.where(splitting, np.where(in_d1, d1_id[part], d2_id[part]), part)
        open_ = np.concatenate([open_ & (d1_id < 0), np.ones(len(paths) - open_.size, dtype=bool)])
    return _number_depth_first(part, paths, trace)


def _number_depth_first(part: np.ndarray, paths: list[str], trace: list[tuple[str, int]]) -> Horizontal:
    """Keep the non-empty leaf partitions (empty D2s are skipped, A6) and number them in
    depth-first order: leaves are never prefixes of one another, so path order is DFS order."""
    present = np.unique(part)
    order = sorted(present.tolist(), key=lambda p: paths[p])
    renumber = np.full(len(paths), -1, dtype=np.int64)
    renumber[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    return Horizontal(renumber[part], [paths[p] for p in order], sorted(trace, key=lambda t: t[0]))


def merge_small(h: Horizontal, k: int, max_cluster_size: int) -> Horizontal:
    """MERGE_SMALL (digest §3.2, decision A7; not in the paper): while a cluster has fewer
    than ``k`` records, merge the first such cluster with a neighbour. Guarantee 1 fails for
    a cluster below k (digest F12), so this runs by default.

    Neighbour choice: the digest's rule (the neighbour whose path shares the longer prefix,
    ties left), except that a neighbour of ``max_cluster_size`` records or more (a cluster
    HORPART could not split: identical or code-less records, A6) is taken only when the other
    side is one too or missing. Merging a few records into such a cluster would spread their
    item-chunk codes over hundreds of rows in every reconstruction (docs/disassociation.md).

    One left-to-right pass is equivalent to the repeated "first small cluster" rule: every
    cluster already emitted has >= k records, so the first small one is always the current one.
    """
    sizes = h.sizes().tolist()
    out: list[tuple[list[int], str, int]] = []      # (original clusters, path, size)
    j, n = 0, h.n_clusters
    while j < n:
        members, path, size = [j], h.paths[j], sizes[j]
        j += 1
        while size < k:
            left = out[-1] if out else None
            right = (j, h.paths[j], sizes[j]) if j < n else None
            if left is None and right is None:
                raise InfeasibleError(f"all {size} records form one cluster smaller than k = {k}; "
                                      "no release can be k^m-anonymous")
            if _prefer_left(left, right, path, max_cluster_size):
                out.pop()
                members, path, size = left[0] + members, _prefix(left[1], path), left[2] + size
            else:
                members, path, size = members + [right[0]], _prefix(path, right[1]), size + right[2]
                j += 1
        out.append((members, path, size))
    renumber = np.empty(n, dtype=np.int64)
    for new, (members, _, _) in enumerate(out):
        renumber[members] = new
    return Horizontal(renumber[h.label], [p for _, p, _ in out], h.trace)


def _prefer_left(left: tuple | None, right: tuple | None, path: str, max_cluster_size: int) -> bool:
    if right is None:
        return True
    if left is None:
        return False
    left_big, right_big = left[2] >= max_cluster_size, right[2] >= max_cluster_size
    if left_big != right_big:
        return right_big
    return _common(left[1], path) >= _common(right[1], path)


def _common(a: str, b: str) -> int:
    """Length of the common prefix (binary search on C-level slice comparisons: paths get
    hundreds of characters long on real data)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _prefix(a: str, b: str) -> str:
    return a[:_common(a, b)]
