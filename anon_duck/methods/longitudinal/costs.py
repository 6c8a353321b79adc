"""Loss Metric tables of seed 004 (Definitions 4-6), as exact integers.

For each DGH we need, for every pair of domain nodes, their LCA (Definition 5) and the
unweighted LM numerator of generalizing both to it, and for every node the LM numerator of
suppressing it (Definition 3: replace it by the root). With ``A^Delta`` the leaf count,

    LM(A_i, A_j) = (A_j^Delta - A_i^Delta) / |A|                       (1)

so every LM of attribute A is an integer over ``|A|``. Convention ``c0`` counts a leaf as 0
(the only reading that reproduces Example 5 / Fig. 5, spec §2.3), ``literal`` counts it as 1.

A-GS compares ``w_ICD * ILM + w_Age * ALM`` (Algorithm 2 steps 16-22). With the weights as
rationals ``u_I / W`` and ``u_A / W``, every weighted cost times ``S = W * |ICD| * |Age|`` is
an integer (spec §3.6), so ties — which the toy data is full of — are decided exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ...backend.base import Backend
from ...sqlrender import render


@dataclass(frozen=True)
class Dgh:
    """One domain generalization hierarchy over dense node ids ``0..n-1``."""

    parent: np.ndarray      # (n,) parent id, -1 at the root
    delta: np.ndarray       # (n,) A^Delta under the chosen convention
    is_leaf: np.ndarray     # (n,) bool
    domain: int             # |A|: number of leaves
    root: int
    lca: np.ndarray         # (n, n) node id of lca(x, y)

    @property
    def n(self) -> int:
        return int(self.parent.size)

    def gen_num(self) -> np.ndarray:
        """(n, n): |A| * LM(x + y, lca(x, y)) — Definition 6, unweighted numerator."""
        d = self.delta
        return 2 * d[self.lca] - d[:, None] - d[None, :]

    def sup_num(self) -> np.ndarray:
        """(n,): |A| * LM(x, root) — the cost of suppressing x (Definition 3)."""
        return self.delta[self.root] - self.delta


def build_dgh(node_id: np.ndarray, parent_id: np.ndarray, n_leaves: np.ndarray, is_leaf: np.ndarray,
              convention: str) -> Dgh:
    """Assemble a :class:`Dgh` from the node arrays (ids are 0..n-1 in order)."""
    n = node_id.size
    assert np.array_equal(node_id, np.arange(n)), "node ids must be dense and sorted"
    parent = parent_id.astype(np.int64)
    leaf = is_leaf.astype(bool)
    n_leaves = n_leaves.astype(np.int64)
    if convention == "c0":
        delta = np.where(leaf, 0, n_leaves)
    else:
        delta = n_leaves.copy()
    roots = np.flatnonzero(parent < 0)
    assert roots.size == 1, "a DGH has one root"
    return Dgh(parent, delta, leaf, int(n_leaves[roots[0]]), int(roots[0]), _lca_matrix(parent))


def _lca_matrix(parent: np.ndarray) -> np.ndarray:
    """Definition 5 for every node pair: the deepest common ancestor-or-self.

    ``chain[x, d]`` is the ancestor of x at depth d (-1 below x's depth); the LCA is the
    common entry at the largest depth. Vectorized over all pairs, one depth at a time."""
    n = parent.size
    depth = np.zeros(n, dtype=np.int64)
    up = parent.copy()
    while np.any(up >= 0):
        depth += up >= 0
        up = np.where(up >= 0, parent[np.maximum(up, 0)], -1)
    height = int(depth.max()) if n else 0
    chain = np.full((n, height + 1), -1, dtype=np.int64)
    node = np.arange(n)
    cur = node.copy()
    for _ in range(height + 1):
        ok = cur >= 0
        chain[node[ok], depth[cur[ok]]] = cur[ok]
        cur = np.where(ok, parent[np.maximum(cur, 0)], -1)
    lca = np.full((n, n), -1, dtype=np.int64)
    for d in range(height + 1):
        col = chain[:, d]
        same = (col[:, None] == col[None, :]) & (col[:, None] >= 0)
        lca = np.where(same, col[:, None], lca)
    return lca


@dataclass(frozen=True)
class CostModel:
    """Integer cost tables of A-GS and Baseline for one (ICD DGH, Age DGH, weights).

    ``gen_i[x, y]``/``gen_a`` and ``sup_i[x]``/``sup_a`` are the weighted costs of Algorithm 2
    steps 16-21 times ``scale``; ``num_gen_*``/``num_sup_*`` are the unweighted numerators
    (LM times |A|) that Algorithm 3 step 20 and Definition 8 report."""

    icd: Dgh
    age: Dgh
    w_icd: Fraction
    w_age: Fraction
    scale: int
    gen_i: np.ndarray
    gen_a: np.ndarray
    sup_i: np.ndarray
    sup_a: np.ndarray
    num_gen_i: np.ndarray
    num_gen_a: np.ndarray
    num_sup_i: np.ndarray
    num_sup_a: np.ndarray

    @classmethod
    def create(cls, icd: Dgh, age: Dgh, w_icd: Fraction, w_age: Fraction) -> "CostModel":
        den = int(np.lcm(w_icd.denominator, w_age.denominator))
        u_i, u_a = int(w_icd * den), int(w_age * den)
        # weighted ILM numerator / |ICD| * w = (num * u_i * |Age|) / (den * |ICD| * |Age|)
        k_i, k_a = u_i * age.domain, u_a * icd.domain
        ng_i, ng_a = icd.gen_num(), age.gen_num()
        ns_i, ns_a = icd.sup_num(), age.sup_num()
        return cls(icd, age, w_icd, w_age, den * icd.domain * age.domain,
                   k_i * ng_i, k_a * ng_a, k_i * ns_i, k_a * ns_a, ng_i, ng_a, ns_i, ns_a)

    @cached_property
    def step_floor(self) -> tuple[np.ndarray, np.ndarray]:
        """(code nodes, age nodes): min over every node c of gen(x, c) - sup(c), for every node
        x — what a GEN with x can at best save on the other side, once per model rather than
        a pass over a row of the tables per pair of every X (:func:`kernel.x_lower`)."""
        return ((self.gen_i - self.sup_i[None, :]).min(axis=1).astype(np.int64),
                (self.gen_a - self.sup_a[None, :]).min(axis=1).astype(np.int64))

    def sup(self, codes: np.ndarray, ages: np.ndarray) -> np.ndarray:
        """Weighted, scaled cost of suppressing each pair (sup = supI + supA, spec §2.4)."""
        return self.sup_i[codes] + self.sup_a[ages]

    def to_float(self, value: int) -> float:
        return value / self.scale

    def max_total(self, length: int) -> int:
        """An upper bound of any alignment total over ``length`` pairs (picks the int width)."""
        return int(length) * int(self.sup_i.max() + self.sup_a.max()) * 2


def load_dgh(backend: Backend, nodes: tuple[str, ...], attr: str, convention: str) -> Dgh:
    """Fetch one DGH's node arrays (an aggregate: one row per node) and build it."""
    a = backend.fetch(f"longitudinal: {attr} DGH", render("longitudinal/node_arrays.sql.j2", nodes=nodes),
                      {"attr": attr})
    return build_dgh(a["node_id"], a["parent_id"], a["n_leaves"], a["is_leaf"], convention)
