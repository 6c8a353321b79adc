"""Equivalence classes of one lattice node (seed 002, Algorithm 1 lines 5-6), rolled up in
numpy from the frequency set that SQL grouped once.

A node is a level vector; each QI's value is replaced by its ancestor at that level
(full-domain recoding), and rows with the same generalized tuple form a class. Classes are
numbered in ClassID order: the dense rank of the generalized tuple, numeric QIs by
(lo, hi), categorical QIs by label, in QI declaration order (digest A21), so ClassIDs say
nothing about the input order or about which classes received counterfeits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .levels import QILevels


@dataclass(frozen=True)
class FrequencySet:
    """The SQL aggregate: one row per distinct (QI leaves, sensitive value)."""

    cnt: np.ndarray               # (F,) int64
    s: np.ndarray                 # (F,) int64 code into ``sensitive_values``
    sensitive_values: np.ndarray  # (|S|,) sorted distinct sensitive values (text)
    leaves: tuple[np.ndarray, ...]  # per QI: (F,) raw values as text (hierarchy leaves)


@dataclass(frozen=True)
class NodeClasses:
    """The classes of ``levels``, in ClassID order (index ``c`` is ClassID ``c + 1``).

    ``real[c, s]`` counts the real rows of class c with sensitive value s; ``da[c, a]`` is
    DA of attribute a (Eqs. 1-2) and ``box[c, a]`` the number of domain points the published
    value covers (|B_a(E)|, digest §2.9.2); ``lo``/``hi`` are the published numeric bounds
    (NaN for categorical QIs) and ``node`` the hierarchy node code per QI."""

    levels: tuple[int, ...]
    row_class: np.ndarray   # (F,) class index of each frequency-set row
    real: np.ndarray        # (m, |S|) int64
    da: np.ndarray          # (m, n) float
    box: np.ndarray         # (m, n) float
    lo: np.ndarray          # (m, n) float
    hi: np.ndarray          # (m, n) float
    node: np.ndarray        # (m, n) int64

    @property
    def size(self) -> np.ndarray:
        return self.real.sum(axis=1)

    @property
    def degree(self) -> np.ndarray:
        """D(r) of Eq. 3 for every row of each class: the mean DA over the QIs."""
        return self.da.mean(axis=1)

    @property
    def dmax(self) -> float:
        """Max D over the published rows (digest A1); counterfeits share their class's D."""
        return float(self.degree.max())


def node_classes(freq: FrequencySet, qis: list[QILevels], levels: tuple[int, ...], *, tight: bool) -> NodeClasses:
    """Generalize the frequency set to ``levels`` and roll it up into classes.

    With ``tight`` (digest A5), a numeric QI is published as its class's min-max range, as in
    the paper's Tables 5-6; otherwise as the hierarchy node's interval."""
    key = _class_key(qis, levels)
    m = int(key.max()) + 1
    _, first = np.unique(key, return_index=True)
    if tight and any(q.numeric for q in qis):
        perm = np.argsort(key, kind="stable")
        starts = np.searchsorted(key[perm], np.arange(m))
    n = len(qis)
    da, box = np.empty((m, n)), np.empty((m, n))
    lo, hi = np.full((m, n), np.nan), np.full((m, n), np.nan)
    node = np.empty((m, n), dtype=np.int64)
    sort_keys: list[np.ndarray] = []
    for a, (q, lvl) in enumerate(zip(qis, levels)):
        node[:, a] = q.node[lvl][first]
        if not q.numeric:
            box[:, a] = q.n_leaves[lvl][first]
            da[:, a] = q.degree(lvl)[first]
            sort_keys += [q.label_rank[lvl][first], node[:, a]]
            continue
        if tight:
            lo[:, a] = np.minimum.reduceat(q.value[perm], starts)
            hi[:, a] = np.maximum.reduceat(q.value[perm], starts)
        else:
            lo[:, a], hi[:, a] = q.lo[lvl][first], q.hi[lvl][first]
        box[:, a] = hi[:, a] - lo[:, a] + 1
        width = q.domain[1] - q.domain[0]
        da[:, a] = (hi[:, a] - lo[:, a]) / width if width > 0 else 0.0
        sort_keys += [lo[:, a], hi[:, a], node[:, a]]
    order = np.lexsort(sort_keys[::-1])          # ClassID order: first QI is the primary key
    class_of_key = np.empty(m, dtype=np.int64)
    class_of_key[order] = np.arange(m)
    n_s = freq.sensitive_values.size
    real = np.bincount(key * n_s + freq.s, weights=freq.cnt, minlength=m * n_s).reshape(m, n_s)
    return NodeClasses(levels, class_of_key[key], np.rint(real[order]).astype(np.int64), da[order], box[order],
                       lo[order], hi[order], node[order])


def class_sizes(freq: FrequencySet, qis: list[QILevels], levels: tuple[int, ...]) -> np.ndarray:
    """Row count of each class of ``levels`` (in no particular order): all a k-anonymity check
    needs, at a fraction of ``node_classes``' cost (no boxes, bounds or ClassID order). The
    partition is the same in both interval modes."""
    return np.bincount(_class_key(qis, levels), weights=freq.cnt)


def _class_key(qis: list[QILevels], levels: tuple[int, ...]) -> np.ndarray:
    """Dense class number of each frequency-set row: one mixed-radix key over the QIs' node
    codes and one ``np.unique`` when the radix product fits in int64, else re-densified after
    each attribute."""
    radix = [int(q.node[lvl].max()) + 1 for q, lvl in zip(qis, levels)]
    if float(np.prod(radix, dtype=float)) < 2.0 ** 62:
        key = np.zeros(qis[0].node.shape[1], dtype=np.int64)
        for q, lvl, r in zip(qis, levels, radix):
            key = key * r + q.node[lvl]
        return np.unique(key, return_inverse=True)[1]
    key = np.zeros(qis[0].node.shape[1], dtype=np.int64)
    for q, lvl, r in zip(qis, levels, radix):
        _, key = np.unique(key * r + q.node[lvl], return_inverse=True)
    return key
