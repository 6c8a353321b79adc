"""VERPART (Fig. 9 of seed 001) on one cluster, with records as bitmasks.

A cluster has fewer than ``2k`` records (before MERGE_SMALL), so each code's occurrences in
the cluster fit one Python ``int`` whose bit ``i`` says "record ``i`` holds the code"; the
support of an itemset is the popcount of the AND of its codes' masks. The function is pure:
HORPART's clusters and REFINE's projected joint clusters (digest §3.4) both call it.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

UNCONSTRAINED_ORDERS = ("after", "interleave")


def verpart(masks: Mapping[int, int], k: int, m: int, constraint_of: np.ndarray,
            unconstrained_order: str = "after") -> list[list[int]]:
    """Fig. 9: the record-chunk domains ``T_1..T_v`` (codes in insertion order). ``masks[t]``
    is the row bitmask of code ``t`` in the cluster (its popcount is ``s(t)``);
    ``constraint_of[t]`` is t's utility constraint (-1: none). The item-chunk domain ``T_T``
    (line 4: codes with support below k) is every code of the cluster in no domain; the
    callers (chunks.py) derive it from the domains."""
    support = {t: mask.bit_count() for t, mask in masks.items()}                 # lines 2-3
    remain = order_codes([t for t, s in support.items() if s >= k], support, constraint_of,
                         unconstrained_order)                                    # line 5
    domains: list[list[int]] = []
    while remain:                                                                # line 8
        cur: list[int] = []                                                      # line 9
        for t in remain:                                                         # lines 10-14
            if km_ok(masks, cur, t, k, m):
                cur.append(t)
        cur = _drop_partial_constraints(cur, remain, constraint_of)              # lines 15-17
        domains.append(cur)                                                      # lines 18-19
        taken = set(cur)
        remain = [t for t in remain if t not in taken]                           # line 20
    return domains


def order_codes(codes: Sequence[int], support: Mapping[int, int], constraint_of: np.ndarray,
                unconstrained_order: str = "after") -> list[int]:
    """Line 5: group codes by utility constraint, sort each group by (support desc, code asc)
    and the groups by their first code the same way. Codes without a constraint come after
    all constrained groups (digest A4, ``"after"``) or compete as singleton groups
    (``"interleave"``); both reduce to [53]'s decreasing-support order when U is empty."""
    groups: dict[int, list[int]] = {}
    free: list[int] = []
    for t in codes:
        u = int(constraint_of[t])
        if u >= 0:
            groups.setdefault(u, []).append(t)
        else:
            free.append(t)
    by_support = lambda t: (-support[t], t)  # noqa: E731 - the one sort key of Fig. 9 (A5)
    ordered = [sorted(g, key=by_support) for g in groups.values()]
    singles = [[t] for t in sorted(free, key=by_support)]
    if unconstrained_order == "interleave":
        ordered += singles
        ordered.sort(key=lambda g: by_support(g[0]))
        return [t for g in ordered for t in g]
    ordered.sort(key=lambda g: by_support(g[0]))
    return [t for g in ordered for t in g] + [g[0] for g in singles]


def km_ok(masks: Mapping[int, int], cur: Sequence[int], t: int, k: int, m: int) -> bool:
    """Lines 11-12, incrementally (digest §2.4): if the chunk projected on ``cur`` is
    k^m-anonymous, the one on ``cur ∪ {t}`` is iff every ``X ⊆ cur`` with ``|X| <= m-1`` has
    ``s(X ∪ {t}) = 0`` or ``>= k`` (``s(t) >= k`` holds for every candidate). A zero support
    prunes all supersets of ``X``."""
    if m <= 1 or not cur:
        return True
    cur_masks = [masks[x] for x in cur]

    def extend(start: int, acc: int, size: int) -> bool:
        for i in range(start, len(cur_masks)):
            joint = acc & cur_masks[i]
            s = joint.bit_count()
            if s == 0:
                continue
            if s < k:
                return False
            if size + 1 < m - 1 and not extend(i + 1, joint, size + 1):
                return False
        return True

    return extend(0, masks[t], 0)


def _drop_partial_constraints(cur: list[int], remain: list[int], constraint_of: np.ndarray) -> list[int]:
    """Lines 15-17 as the pseudocode has them (digest A1/A2): drop ``t`` when its constraint
    ``u`` differs from the first code's and not all codes of ``u`` still unassigned at the
    start of this round (``u ∩ remain``) made it into ``cur``. No re-scan afterwards."""
    u0 = int(constraint_of[cur[0]])
    taken = set(cur)
    missing: set[int] = {int(constraint_of[t]) for t in remain if t not in taken and constraint_of[t] >= 0}
    return [t for t in cur if not (constraint_of[t] >= 0 and constraint_of[t] != u0 and int(constraint_of[t]) in missing)]
