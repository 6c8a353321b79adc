"""The catalog of counterfeit records (seed 002, Definition 3) built by Algorithm 2
(Grouping), as clarified in the digest §3.4.

Classes are merged into disjoint groups until every class satisfies Lemma 1: for every
class E of a group G and every sensitive value s, the real rows of s in the other classes
of G are at least as many as E's counterfeits with s, so an adversary can never be sure a
counterfeit sits in E. The catalog publishes, per group and value, only the total count.

Paper-to-code:

* line 3: classes sorted by descending counterfeit total, ties by ClassID;
* lines 6-9: for each class i, repeat while i still has unhidden counterfeits (its
  *deficit* ``max(0, cf_i(s) − Σ_{E'∈G(i), E'≠i} real_{E'}(s))``);
* lines 10-17: ``matching`` = ``Σ_s min(deficit_i(s), real of s in j's whole group)``, 0
  when j is already in i's group (digest A10); ``cnt ≥ max``: among equal counts the LAST
  scanned j wins (A11). ``max`` is reset on every pass: the paper resets it once, and then
  the loop never ends (A9, the §4.11 fixture);
* line 18: no match at all → NULL (the node is skipped by Algorithm 1);
* lines 19-21: merge i's group with j's group.

``matching`` is equal for all members of a group, so it is evaluated per group, and "last
scanned j" becomes "the group whose last member in scan order comes latest". Matching never
exceeds the deficit, so the latest group that covers the whole deficit wins outright: groups
are visited latest first (a linked list over the scan positions of their last members) and
the first that covers wins; only when none covers everything are all matchings computed.
The passes run compiled (numba, :func:`_merge`): on Adult's 7 QIs Algorithm 1 evaluates
hundreds of nodes, each grouping thousands of classes: the 1.6M passes of the (k, h) sweep in
tests/test_counterfeit_adult.py took 26 s in Python and take 0.3 s compiled (profiled).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit


@dataclass(frozen=True)
class Catalog:
    """Definition 3. ``group[c]`` is the catalog group of class c (0-based, groups ordered by
    their smallest ClassID) or -1 when c is in no catalog row; ``count[g, s]`` is Count(G, s)."""

    group: np.ndarray   # (m,) int64
    count: np.ndarray   # (n_groups, |S|) int64

    @property
    def n_counterfeits(self) -> int:
        return int(self.count.sum())


def lemma1_attainable(real: np.ndarray, cf: np.ndarray) -> bool:
    """Digest §2.6 [derived]: a safe grouping exists iff the group of ALL classes is safe,
    i.e. ``Σ_{E'≠E} real_{E'}(s) ≥ cf_E(s)`` for every class and value. Algorithm 2 returns
    NULL exactly when this fails, so checking it first changes no result."""
    return bool((real.sum(axis=0)[None, :] - real >= cf).all())


def grouping(real: np.ndarray, cf: np.ndarray) -> Catalog | None:
    """Algorithm 2 (clarified). Returns None when some class cannot be hidden (line 18)."""
    m, n_s = real.shape
    cf_total = cf.sum(axis=1)
    if not cf_total.any():
        return Catalog(np.full(m, -1, dtype=np.int64), np.zeros((0, n_s), dtype=np.int64))
    if not lemma1_attainable(real, cf):
        return None
    order = np.lexsort((np.arange(m), -cf_total))                   # line 3
    real, cf = np.ascontiguousarray(real, dtype=np.int64), np.ascontiguousarray(cf, dtype=np.int64)
    parent = _merge(real, cf, order.astype(np.int64), int(np.count_nonzero(cf_total)))
    return None if parent.size == 0 else _catalog(parent, cf)


@njit(cache=True, nogil=True)
def _merge(real: np.ndarray, cf: np.ndarray, order: np.ndarray, n_hiding: int) -> np.ndarray:
    """Lines 6-21 over a union-find of the classes; returns each class's parent (a forest
    whose roots are the groups), or an empty array when a class finds no match (line 18).

    Per root: the group's real counts and the scan position of its last member; the live
    groups form a doubly linked list over those positions, walked latest first."""
    m, n_s = real.shape
    parent = np.arange(m)
    group_real = real.copy()
    last = np.empty(m, dtype=np.int64)
    for p in range(m):
        last[order[p]] = p
    root_at = order.copy()                     # per live position: the root of its group
    prev = np.arange(-1, m - 1)
    nxt = np.arange(1, m + 1)
    tail = m - 1
    values = np.empty(n_s, dtype=np.int64)
    need = np.empty(n_s, dtype=np.int64)
    for idx in range(n_hiding):                # line 6 (the classes after these hold no counterfeits)
        i = order[idx]
        while True:                            # line 9
            gi = _find(parent, i)
            n_def = 0                          # i's deficit: counterfeits the rest of its group does not hide
            for v in range(n_s):
                short = cf[i, v] - (group_real[gi, v] - real[i, v])
                if cf[i, v] > 0 and short > 0:
                    values[n_def] = v
                    need[n_def] = short
                    n_def += 1
            if n_def == 0:
                break
            pick = -1                          # lines 10-17: the latest group covering the whole deficit ...
            p = tail
            while p >= 0 and pick < 0:
                g = root_at[p]
                if g != gi:
                    covers = True
                    for d in range(n_def):
                        if group_real[g, values[d]] < need[d]:
                            covers = False
                            break
                    if covers:
                        pick = g
                p = prev[p]
            if pick < 0:                       # ... else the largest matching, ties: the latest group
                best = 0
                p = tail
                while p >= 0:
                    g = root_at[p]
                    if g != gi:
                        cnt = 0
                        for d in range(n_def):
                            cnt += min(group_real[g, values[d]], need[d])
                        if cnt > best:
                            best, pick = cnt, g
                    p = prev[p]
            if pick < 0:                       # line 18 (unreachable after the pre-check)
                return np.empty(0, dtype=np.int64)
            parent[pick] = gi                  # lines 19-21
            for v in range(n_s):
                group_real[gi, v] += group_real[pick, v]
            first, latest = min(last[gi], last[pick]), max(last[gi], last[pick])
            before, after = prev[first], nxt[first]
            if before >= 0:
                nxt[before] = after
            if after < m:
                prev[after] = before
            if first == tail:
                tail = before
            last[gi] = latest
            root_at[latest] = gi
    return parent


@njit(cache=True, nogil=True, inline="always")
def _find(parent: np.ndarray, c: int) -> int:
    root = c
    while parent[root] != root:
        root = parent[root]
    while parent[c] != root:
        parent[c], c = root, parent[c]
    return root


def _catalog(parent: np.ndarray, cf: np.ndarray) -> Catalog:
    """Catalog rows: groups holding counterfeits, ordered by their smallest ClassID."""
    m, n_s = cf.shape
    root = parent.copy()
    while (root[root] != root).any():           # full path compression, vectorized
        root = root[root]
    cf_by_root = np.zeros((m, n_s), dtype=np.int64)
    np.add.at(cf_by_root, root, cf)
    listed = cf_by_root.sum(axis=1)[root] > 0
    # groups numbered by their smallest ClassID (class indices are in ClassID order)
    roots, first = np.unique(root[listed], return_index=True)
    roots = roots[np.argsort(first)]
    number = np.full(m, -1, dtype=np.int64)
    number[roots] = np.arange(roots.size)
    group = np.where(listed, number[root], -1)
    return Catalog(group, cf_by_root[roots])
