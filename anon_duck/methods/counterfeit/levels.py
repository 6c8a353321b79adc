"""The full-domain generalization lattice's raw material: for each QI, the node every
frequency-set row generalizes to at every level, and what Eqs. 1-2 of seed 002 need
about that node (leaf count, numeric bounds, the attribute's domain).

Everything here is pulled once from the hierarchy scratch tables (one small query per
hierarchy) and indexed by frequency-set row, so a lattice node is a pure numpy roll-up.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend.base import Backend
from ...errors import InputError
from ...hierarchy import LEVELS, NODES
from ...sqlrender import render


@dataclass(frozen=True)
class QILevels:
    """One QI, indexed ``[level, frequency-set row]``.

    ``node`` is a dense code of the hierarchy node; ``n_leaves`` is |M_p| (Eq. 2);
    ``lo``/``hi`` are the node's numeric bounds (Eq. 1, numeric QIs only); ``label_rank``
    orders categorical nodes by label (ClassID order, digest A21); ``value`` is the row's
    raw numeric value (tight intervals, digest A5). ``domain`` is ``(L, U)`` of Eq. 1, or
    ``|M|`` as ``(0, |M| - 1)`` for a categorical QI so that both equations read
    ``spread / (U - L)``."""

    column: str
    numeric: bool
    node: np.ndarray          # (levels, F) int64
    node_names: np.ndarray    # (n_nodes,) node id strings, indexed by ``node``
    n_leaves: np.ndarray      # (levels, F) float
    lo: np.ndarray            # (levels, F) float (NaN for categorical)
    hi: np.ndarray            # (levels, F) float
    label_rank: np.ndarray    # (levels, F) int64
    value: np.ndarray         # (F,) float (NaN for categorical)
    domain: tuple[float, float]

    @property
    def height(self) -> int:
        return self.node.shape[0] - 1

    def degree(self, level: int) -> np.ndarray:
        """DA of each row's node at ``level`` in hierarchy mode: Eq. 1 for a numeric QI,
        Eq. 2 for a categorical one; a degenerate domain gives 0 (digest §2.1)."""
        lo_dom, hi_dom = self.domain
        width = hi_dom - lo_dom
        if width <= 0:
            return np.zeros(self.node.shape[1])
        if self.numeric:
            return (self.hi[level] - self.lo[level]) / width
        return (self.n_leaves[level] - 1) / width

    def box(self, level: int) -> np.ndarray:
        """|B_a| of each row's node at ``level`` in hierarchy mode (digest §2.9.2): integer
        points of a numeric interval, leaves under a categorical node."""
        if self.numeric:
            return self.hi[level] - self.lo[level] + 1
        return self.n_leaves[level]


def qi_levels(backend: Backend, column: str, hierarchy: str, numeric: bool, leaves: np.ndarray,
              domain: tuple[float, float] | None) -> QILevels:
    """Pull the level map of ``hierarchy`` and index it by the frequency-set values
    ``leaves`` of ``column``. ``domain`` overrides a numeric QI's (L, U) (digest A23);
    by default it is the top interval of the hierarchy."""
    m = backend.fetch(f"counterfeit: levels of {hierarchy}",
                      render("counterfeit/level_map.sql.j2", level_table=LEVELS, node_table=NODES),
                      {"hierarchy": hierarchy})
    n_levels = int(m["level"].max()) + 1
    leaf_names = np.unique(m["leaf"])
    order = np.lexsort((m["level"], np.searchsorted(leaf_names, m["leaf"])))
    shape = (len(leaf_names), n_levels)

    def by_level(col: np.ndarray) -> np.ndarray:
        return col[order].reshape(shape).T  # (levels, leaves)

    node_names, node_codes = np.unique(m["node"], return_inverse=True)
    _, label_rank = np.unique(m["label"].astype(str), return_inverse=True)
    pos = np.searchsorted(leaf_names, leaves)
    node = by_level(node_codes.astype(np.int64))[:, pos]
    n_leaves = by_level(m["n_leaves"].astype(float))[:, pos]
    rank = by_level(label_rank.astype(np.int64))[:, pos]
    root_leaves = float(m["root_leaves"][0])
    if not numeric:
        nan = np.full(node.shape, np.nan)
        return QILevels(column, False, node, node_names, n_leaves, nan, nan, rank,
                        np.full(len(leaves), np.nan), (0.0, root_leaves - 1))
    lo, hi = m["lo"].astype(float), m["hi"].astype(float)
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise InputError(f"input.qi column {column!r} is numeric but hierarchy {hierarchy!r} has nodes without "
                         "numeric bounds (every leaf must be a number); declare the QI categorical")
    if domain is None:
        domain = (float(m["root_lo"][0]), float(m["root_hi"][0]))
    value = by_level(m["leaf_value"].astype(float))[0, pos]
    if value.min() < domain[0] or value.max() > domain[1]:
        raise InputError(f"method.domain.{column} = [{domain[0]:g}, {domain[1]:g}] does not contain the "
                         f"column's values ({value.min():g}..{value.max():g})")
    return QILevels(column, True, node, node_names, n_leaves, by_level(lo)[:, pos], by_level(hi)[:, pos], rank,
                    value, domain)

