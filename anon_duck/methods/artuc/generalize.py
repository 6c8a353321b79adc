"""Definition 2 (cluster generalization of the demographics) and Definitions 3-4 (NCP) on
numpy arrays, for the greedy loops of ArtUC.

A cluster's demographics are a running state: [lo, hi] per numeric QI and the closest common
ancestor (LCA) per categorical QI, so adding a record or a cluster is O(1) per attribute and
a whole candidate set is one vectorized expression (Appendix C: "the generalization with
Definition 2 is performed in an incremental fashion").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend.base import Backend
from ...hierarchy import NODES
from ...sqlrender import render
from .qis import QIInfo


@dataclass(frozen=True)
class Tree:
    """One categorical hierarchy as arrays: ``anc[node, d]`` is the ancestor of ``node`` at
    depth ``d`` (-1 below the node's depth), ``ncp[node]`` its NCP_A (Definition 3)."""

    nodes: np.ndarray      # node names, index = node id
    anc: np.ndarray        # (n_nodes, max_depth + 1) int32
    ncp: np.ndarray        # NCP_A of each node: 0 for one leaf, else n_leaves / n_leaves(root)
    lca_table: np.ndarray | None = None   # (n_nodes, n_nodes) LCA of every pair, for small trees

    def ncp_of_lca_with(self, y: int) -> np.ndarray:
        """NCP_A(LCA(x, y)) for every node x: one gather per greedy step (Step 8)."""
        if self.lca_table is not None:
            return self.ncp[self.lca_table[y]]
        return self.ncp[self.lca(np.arange(self.nodes.size), y)]

    def index(self, values: np.ndarray) -> np.ndarray:
        order = np.argsort(self.nodes)
        pos = np.searchsorted(self.nodes[order], values)
        return order[pos].astype(np.int32)

    def lca(self, x: np.ndarray, y: np.ndarray | int) -> np.ndarray:
        """Closest common ancestor of nodes ``x`` and ``y`` (arrays or a scalar), elementwise:
        the deepest depth at which both have the same ancestor."""
        if self.lca_table is not None:
            return self.lca_table[x, y]
        ax, ay = self.anc[x], self.anc[y]
        same = (ax == ay) & (ax >= 0)
        if same.ndim == 1:
            same = same[None, :]
            ax = ax[None, :]
        common = np.argmin(np.concatenate([same, np.zeros((same.shape[0], 1), bool)], axis=1), axis=1)
        out = ax[np.arange(ax.shape[0]), common - 1]
        return out if np.ndim(x) or np.ndim(y) else out[0]


def load_tree(backend: Backend, hierarchy: str) -> Tree:
    rows = backend.fetch(f"artuc: hierarchy {hierarchy}", render("artuc/hierarchy_nodes.sql.j2", node_table=NODES),
                         {"hierarchy": hierarchy})
    nodes = rows["node"].astype(object)
    idx = {n: i for i, n in enumerate(nodes)}
    depth = rows["depth"].astype(int)
    anc = np.full((len(nodes), int(depth.max()) + 1), -1, dtype=np.int32)
    for i in np.argsort(depth, kind="stable"):     # parents come before children
        p = rows["parent"][i]
        if p is not None and p == p:
            anc[i, : depth[i]] = anc[idx[p], : depth[i]]
        anc[i, depth[i]] = i
    n_leaves = rows["n_leaves"].astype(float)
    root = n_leaves[depth == 0].max()
    ncp = np.where(n_leaves > 1, n_leaves / root, 0.0)
    tree = Tree(nodes, anc, ncp)
    if len(nodes) <= _DENSE_LCA_NODES:
        ids = np.arange(len(nodes))
        table = np.stack([tree.lca(ids, y) for y in ids]).astype(np.int32)
        tree = Tree(nodes, anc, ncp, table)
    return tree


_DENSE_LCA_NODES = 2048   # a dense LCA table up to 2048 nodes (16 MB); larger trees walk ancestors


@dataclass
class Demographics:
    """The QI values of the records to cluster, in record order, plus the trees: the data
    Definition 2 and Definition 3 work on."""

    qis: list[QIInfo]
    values: list[np.ndarray]      # per QI: float values (numeric) or leaf node ids (categorical)
    trees: dict[int, Tree]        # QI index -> tree (categorical QIs)

    def ncp_terms(self, lo: list[np.ndarray], hi: list[np.ndarray], node: list[np.ndarray]) -> np.ndarray:
        """Per-record NCP (Definition 4, weighted sum of Definition 3) of generalized tuples given
        as arrays: [lo, hi] for numeric QIs (NCP = (hi - lo) / (max A - min A), A8), nodes for
        categorical ones."""
        total = 0.0
        for q in self.qis:
            if q.numeric:
                span = q.hi - q.lo
                total = total + (q.weight * (hi[q.i] - lo[q.i]) / span if span > 0 else 0.0)
            else:
                total = total + q.weight * self.trees[q.i].ncp[node[q.i]]
        return np.asarray(total, dtype=float)
