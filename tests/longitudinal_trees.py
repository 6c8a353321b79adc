"""Random DGH trees for the longitudinal tests (parents before children)."""
from __future__ import annotations

import numpy as np


def random_tree(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``parent`` (−1 at the root), ``n_leaves`` under each node and ``is_leaf`` for a random
    tree of ``n`` nodes."""
    parent = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)])
    is_leaf = ~np.isin(np.arange(n), parent)
    n_leaves = np.zeros(n, dtype=np.int64)
    for leaf in np.flatnonzero(is_leaf):
        v = leaf
        while v >= 0:
            n_leaves[v] += 1
            v = parent[v]
    return parent, n_leaves, is_leaf
