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
the first that covers wins; only when none covers everything are all matchings computed
(numpy). A pass touches only the few values i still has to hide, so it runs on Python
integers: per pass this is far cheaper than any array operation (docs/counterfeit.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
    groups = _Groups(real, order)
    rows, cols = np.nonzero(cf)
    wanted: dict[int, list[tuple[int, int]]] = {}
    for c, v, n in zip(rows.tolist(), cols.tolist(), cf[rows, cols].tolist()):
        wanted.setdefault(c, []).append((v, n))
    real_rows = real.tolist()
    for i in order[:np.count_nonzero(cf_total)].tolist():          # line 6 (the rest hold no counterfeits)
        own = real_rows[i]
        while True:                                                 # line 9
            gi = groups.find(i)
            group_real = groups.real[gi]
            deficit = [(v, n - (group_real[v] - own[v])) for v, n in wanted[i] if n > group_real[v] - own[v]]
            if not deficit:
                break
            pick = groups.best_match(gi, deficit)                   # lines 10-17
            if pick is None:                                        # line 18 (unreachable after the pre-check)
                return None
            groups.union(gi, pick)                                  # lines 19-21
    return groups.catalog(cf)


class _Groups:
    """Union-find over classes with, per root, the group's real counts (Python lists), and
    the live groups in a doubly linked list ordered by the scan position of their last
    member, so candidates are visited latest first ("the last scanned j wins")."""

    def __init__(self, real: np.ndarray, order: np.ndarray) -> None:
        m = real.shape[0]
        self.parent = list(range(m))
        self.real = real.tolist()
        self.n_s = real.shape[1]
        self.last = [0] * m                          # per root: scan position of its last member
        for p, c in enumerate(order.tolist()):
            self.last[c] = p
        self.root_at = order.tolist()                # per live position: the root of its group
        self.prev = list(range(-1, m - 1))           # linked list of live positions
        self.next = list(range(1, m + 1))
        self.tail = m - 1

    def find(self, c: int) -> int:
        parent = self.parent
        root = c
        while parent[root] != root:
            root = parent[root]
        while parent[c] != root:
            parent[c], c = root, parent[c]
        return root

    def best_match(self, gi: int, deficit: list[tuple[int, int]]) -> int | None:
        """Root of the group of the last-scanned j with the largest ``matching`` (> 0)."""
        real, root_at, prev = self.real, self.root_at, self.prev
        p = self.tail
        while p >= 0:
            g = root_at[p]
            if g != gi:
                counts = real[g]
                for v, n in deficit:
                    if counts[v] < n:
                        break
                else:
                    return g                          # covers everything: the maximum, and the latest
            p = prev[p]
        return self._largest_partial(gi, deficit)

    def _largest_partial(self, gi: int, deficit: list[tuple[int, int]]) -> int | None:
        """No group covers the whole deficit: compute every matching (ties: latest group)."""
        roots = []
        p = self.tail
        while p >= 0:
            if self.root_at[p] != gi:
                roots.append(self.root_at[p])
            p = self.prev[p]
        if not roots:
            return None
        values = np.array([v for v, _ in deficit])
        need = np.array([n for _, n in deficit])
        counts = np.array(self.real, dtype=np.int64)[np.array(roots)[:, None], values]
        cnt = np.minimum(counts, need).sum(axis=1)
        best = int(cnt.max())
        return None if best == 0 else roots[int(np.argmax(cnt == best))]   # roots run latest first

    def union(self, a: int, b: int) -> None:
        self.parent[b] = a
        ra, rb = self.real[a], self.real[b]
        for v in range(self.n_s):
            ra[v] += rb[v]
        first, latest = sorted((self.last[a], self.last[b]))
        self._unlink(first)
        self.last[a] = latest
        self.root_at[latest] = a

    def _unlink(self, p: int) -> None:
        before, after = self.prev[p], self.next[p]
        if before >= 0:
            self.next[before] = after
        if after < len(self.next):
            self.prev[after] = before
        if p == self.tail:
            self.tail = before

    def catalog(self, cf: np.ndarray) -> Catalog:
        """Catalog rows: groups holding counterfeits, ordered by their smallest ClassID."""
        m, n_s = cf.shape
        root = np.array(self.parent)
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
